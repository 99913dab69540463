import Testing
@testable import ANCS

// The faults of real iPhones the Provider engine reproduces, for testing
// accessories (docs/PROVIDE.md: "Act as an iPhone", faults): sharing off, Notification
// Source quiet, subscriptions forgotten in silence.

private let message = ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: "On my way")

/// A provider with `connections` connected and subscribed to both characteristics.
private func subscribed(_ connections: [ConnectionID] = [phone]) -> Provider {
    var provider = Provider()
    for connection in connections {
        _ = provider.linkUp(connection, mtu: 185)
        _ = provider.setSubscription(connection, .dataSource, enabled: true)
        _ = provider.setSubscription(connection, .notificationSource, enabled: true)
    }
    return provider
}

private func writeResult(_ actions: [ProviderAction]) -> ATTResult? {
    for case .respond(_, let result) in actions { return result }
    return nil
}

private func getTitle(_ uid: NotificationUID) throws -> [UInt8] {
    try ControlPointCommand.getNotificationAttributes(
        GetNotificationAttributes(notificationUID: uid, attributes: [.init(.title, maxLength: 32)])).encode()
}

@Suite("Provider faults")
struct ProviderFaultTests {
    @Test("Sharing off: CCCD writes are taken, every Control Point write is answered 0x03, no Notification Source event")
    func sharingOff() throws {
        var provider = subscribed()
        let uid = try provider.add(message).uid
        #expect(provider.setSharing(false) == [])
        #expect(!provider.sharing)
        // Nothing announced while not shared: not an addition, not a session's PreExisting ones.
        let added = try provider.add(message)
        #expect(try sourceEvents(added.actions, to: phone).isEmpty)
        #expect(provider.setSubscription(phone, .notificationSource, enabled: false) == [.emit(.sessionEnded(phone))])
        #expect(provider.setSubscription(phone, .notificationSource, enabled: true) == [.emit(.sessionStarted(phone, preExisting: 0))])
        #expect(provider.isSubscribed(phone, to: .notificationSource))
        // Every command, valid or not, is refused with Write Not Permitted.
        for bytes in [try getTitle(uid), [0x01, 0x41, 0x00, 0x00], [0x02, 0x01, 0x00, 0x00, 0x00, 0x00], [0xFF]] {
            let actions = provider.controlPointWritten(phone, bytes)
            #expect(actions == [.respond(phone, .attError(.writeNotPermitted)), .emit(.commandRejected(phone, .notShared))])
        }
        #expect(ProviderRejection.notShared.code == .writeNotPermitted)
    }

    @Test("Sharing turned on: each subscribed consumer is announced every notification as PreExisting, and commands are answered")
    func sharingOn() throws {
        var provider = subscribed([phone, watch])
        _ = provider.setSubscription(watch, .notificationSource, enabled: false)
        _ = provider.setSharing(false)
        let first = try provider.add(message).uid
        let second = try provider.add(message).uid
        let actions = provider.setSharing(true)
        let announced = try sourceEvents(actions, to: phone)
        #expect(announced.map(\.notificationUID) == [first, second])
        #expect(announced.allSatisfy { $0.eventID == .added && $0.eventFlags.contains(.preExisting) })
        #expect(actions.last == .emit(.sessionStarted(phone, preExisting: 2)))
        // The watch is not subscribed to Notification Source: it hears nothing.
        #expect(try sourceEvents(actions, to: watch).isEmpty)
        #expect(writeResult(provider.controlPointWritten(phone, try getTitle(first))) == .success)
        // Turning on what is on changes nothing.
        #expect(provider.setSharing(true) == [])
    }

    @Test("Notification Source quiet: nothing is announced, the Control Point still answers; subscribing again ends it and announces what the phone holds; told to speak, it tells what comes next")
    func quietNotificationSource() throws {
        var provider = subscribed()
        provider.setNotificationSourceQuiet(true)
        let uid = try provider.add(message).uid
        #expect(try provider.add(message).actions.isEmpty)
        #expect(try provider.remove(uid).isEmpty)
        let missed = try provider.add(message).uid
        let answer = provider.controlPointWritten(phone, try getTitle(missed))
        #expect(writeResult(answer) == .success)
        #expect(answer.contains { if case .notify(phone, .dataSource, _) = $0 { true } else { false } })
        // A probe for a UID that is not live is still answered 0xA2.
        #expect(writeResult(provider.controlPointWritten(phone, try getTitle(NotificationUID(rawValue: 999)))) == .attError(.invalidParameter))
        // Subscribing again ends the quiet: what the phone holds is announced (PreExisting).
        _ = provider.setSubscription(phone, .notificationSource, enabled: false)
        let again = provider.setSubscription(phone, .notificationSource, enabled: true)
        #expect(!provider.notificationSourceQuiet)
        #expect(try sourceEvents(again, to: phone).map(\.notificationUID).contains(missed))
        #expect(again.last == .emit(.sessionStarted(phone, preExisting: 2)))
        let next = try provider.add(message)
        #expect(try sourceEvents(next.actions, to: phone).map(\.notificationUID) == [next.uid])
        // Quiet again, then told to speak: what comes next is told, not what happened meanwhile.
        provider.setNotificationSourceQuiet(true)
        let unheard = try provider.add(message)
        #expect(unheard.actions.isEmpty)
        provider.setNotificationSourceQuiet(false)
        let heard = try provider.add(message)
        #expect(try sourceEvents(heard.actions, to: phone).map(\.notificationUID) == [heard.uid])
    }

    @Test("Subscriptions forgotten in silence: nothing reaches the consumer, fetches get 0xFD, and subscribing again (off, then on) starts a session")
    func forgottenSubscriptions() throws {
        var provider = subscribed()
        let uid = try provider.add(message).uid
        // The consumer hears nothing; the provider's own events say the session ended.
        let forgotten = provider.forgetSubscriptions()
        #expect(forgotten == [.emit(.sessionEnded(phone))])
        #expect(!provider.isSubscribed(phone, to: .notificationSource))
        #expect(!provider.isSubscribed(phone, to: .dataSource))
        #expect(try provider.add(message).actions.isEmpty)
        #expect(writeResult(provider.controlPointWritten(phone, try getTitle(uid))) == .attError(.cccdImproperlyConfigured))
        // The consumer writes its CCCDs again: off (nothing to end), then on.
        #expect(provider.setSubscription(phone, .dataSource, enabled: false) == [])
        #expect(provider.setSubscription(phone, .notificationSource, enabled: false) == [])
        _ = provider.setSubscription(phone, .dataSource, enabled: true)
        let again = provider.setSubscription(phone, .notificationSource, enabled: true)
        #expect(try sourceEvents(again, to: phone).count == 2)
        #expect(writeResult(provider.controlPointWritten(phone, try getTitle(uid))) == .success)
    }
}
