// The microcontroller preset: its bounds, and what a phone sending the
// longest values it may can make the engine hold (the heap's worst case on a
// 32-bit target is measured by the firmware test image: firmware/test/WorstCase.swift).

import Testing
@testable import ANCS

@Suite("ConsumerConfiguration.microcontroller")
struct ConsumerPresetTests {
    @Test("its bounds")
    func bounds() {
        let preset = ConsumerConfiguration.microcontroller
        #expect(preset.maximumNotifications == 16 && preset.maximumCachedApps == 8 && preset.maximumRequests == 4)
        #expect(preset.unlimitedValueLength == 128)
        #expect(preset.eagerAttributes == ConsumerConfiguration.displayAttributes && preset.eagerAppNames)
        #expect(preset.pipeliningDepth == 1)
        #expect(!preset.keepsAttributes && ConsumerConfiguration.default.keepsAttributes)
    }

    @Test("keepsAttributes false: values held only until shown; READY and UPDATED carry them whole; an application's fetch of a shown notification is answered, not kept; its app's name waits with them")
    func valuesHeldUntilShown() throws {
        var configuration = ConsumerConfiguration(eagerAttributes: standardAttributes)
        configuration.keepsAttributes = false
        var consumer = sessionConsumer(configuration)
        // Added: fetched, then its app's name asked; the values wait in the model meanwhile.
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        let naming = try onlyWrite(consumer.writeCompleted(fetch.token, .success, at: .zero) + deliver(standardResponse(1, title: "Alice"), to: &consumer))
        #expect(naming.command == displayNameCommand(mailApp))
        #expect(consumer.notification(uid(1))?[.title] == "Alice")
        _ = consumer.writeCompleted(naming.token, .success, at: .zero)
        let ready = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        #expect(events(ready).contains(.ready(ConsumerNotification(uid: uid(1), eventFlags: [], categoryID: .email, categoryCount: 1, isPreExisting: false, attributes: standardResponse(1, title: "Alice").attributes), appName: "Mail")))
        #expect(consumer.notification(uid(1))?.attributes == [])
        // The application asks for it again: told, answered, not kept.
        var asked: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &asked)
        _ = consumer.writeCompleted(try onlyWrite(asked).token, .success, at: .zero)
        let answered = deliver(standardResponse(1, title: "Alice again"), to: &consumer)
        #expect(events(answered).contains(.attributes(standardResponse(1, title: "Alice again"))))
        #expect(results(answered, for: id) == [.success(.notificationAttributes(standardResponse(1, title: "Alice again")))])
        #expect(consumer.notification(uid(1))?.attributes == [])
        // Modified: fetched again, UPDATED whole (its app's name cached), then dropped again.
        let again = try onlyWrite(consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero))
        _ = consumer.writeCompleted(again.token, .success, at: .zero)
        let updated = deliver(standardResponse(1, title: "Bob"), to: &consumer)
        #expect(events(updated).contains { if case .updated(let notification, "Mail") = $0 { notification[.title] == "Bob" && notification.attributes.count == 3 } else { false } })
        #expect(consumer.notification(uid(1))?.attributes == [])
        // Removed: told as the model knew it, without values.
        let removed = consumer.received(notificationSource: sourceEvent(.removed, 1), at: .zero)
        #expect(events(removed).contains { if case .removed(let notification) = $0 { notification.uid == uid(1) && notification.attributes.isEmpty } else { false } })
    }

    @Test("keepsAttributes false: a response shares the reassembler's buffer and list (reused once let go), and one still held is never written over by the next")
    func lentResponsesStayWhole() throws {
        var configuration = ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false)
        configuration.keepsAttributes = false
        #expect(Consumer(configuration: configuration).reassembler.lendsBuffers)
        // Lent only when nothing is kept per notification.
        #expect(!Consumer(configuration: .default).reassembler.lendsBuffers)
        var hiding = configuration
        hiding.hide(app: "com.example.hidden")
        #expect(!Consumer(configuration: hiding).reassembler.lendsBuffers)
        var consumer = sessionConsumer(configuration)
        func show(_ raw: UInt32, _ title: String, mtu: Int) throws -> ConsumerNotification {
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            #expect(fetch.command == standardCommand(raw))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            let answered = deliver(.notificationAttributes(standardResponse(raw, title: title)), mtu: mtu, to: &consumer)
            let shown = events(answered).compactMap { if case .ready(let notification, _) = $0 { notification } else { nil } }
            return try #require(shown.first)
        }
        // Held while the next ones come, at MTU 23 and whole.
        let alice = try show(1, "Alice", mtu: 23)
        let bob = try show(2, "Bob, with a longer title than Alice's", mtu: 185)
        let carol = try show(3, "Carol", mtu: 23)
        #expect(alice.attributes == standardResponse(1, title: "Alice").attributes)
        #expect(bob.attributes == standardResponse(2, title: "Bob, with a longer title than Alice's").attributes)
        #expect(carol.attributes == standardResponse(3, title: "Carol").attributes)
        #expect(consumer.liveNotifications.allSatisfy { $0.attributes.isEmpty })
        // Let go each time: the next is read into the same buffer, whole.
        for raw in UInt32(4)...8 {
            #expect(try show(raw, "Dave \(raw)", mtu: 23).attributes == standardResponse(raw, title: "Dave \(raw)").attributes)
        }
    }

    @Test("keepsAttributes false: a notification Modified while fetched, or whose fetch fails after the application's answer came, holds no values")
    func valuesNotHeldWhenNotShowing() throws {
        // (Two responses due at once: the application's and the display's.)
        var configuration = ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes, eagerAppNames: false)
        configuration.keepsAttributes = false
        var consumer = sessionConsumer(configuration)
        // Modified while its fetch is written: the answer read the old content, which is not kept while it waits to be fetched again.
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        _ = consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero)
        _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
        let again = try onlyWrite(deliver(standardResponse(1, title: "old"), to: &consumer))
        #expect(consumer.notification(uid(1))?.attributes == [])
        _ = consumer.writeCompleted(again.token, .success, at: .zero)
        let shown = deliver(standardResponse(1, title: "new"), to: &consumer)
        #expect(events(shown).contains { if case .ready(let notification, _) = $0 { notification[.title] == "new" } else { false } })
        #expect(consumer.notification(uid(1))?.attributes == [])
        // The application's answer comes while the display's fetch is written (kept for it), then the display's fetch fails.
        var asked: [ConsumerAction] = []
        let id = consumer.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 8)], for: uid(2), at: .zero, into: &asked)
        let display = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero) + consumer.writeCompleted(try onlyWrite(asked).token, .success, at: .zero))
        let answered = deliver(NotificationAttributesResponse(notificationUID: uid(2), attributes: [NotificationAttribute(.title, "Alice")]), to: &consumer)
        #expect(results(answered, for: id).count == 1)
        #expect(consumer.notification(uid(2))?[.title] == "Alice")
        let failed = consumer.writeCompleted(display.token, .attError(.insufficientAuthentication), at: .zero)
        #expect(events(failed).contains(.displayFailed(uid(2), .att(.insufficientAuthentication))))
        #expect(consumer.notification(uid(2))?.attributes == [])
    }

    @Test("keepsAttributes false with apps hidden: a wanted notification keeps its AppIdentifier fetched alone, and no more")
    func hiddenAppsKeepOneValue() throws {
        var configuration = ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false)
        configuration.keepsAttributes = false
        configuration.hide(app: "com.example.hidden")
        var consumer = sessionConsumer(configuration)
        // Its app is not known: its AppIdentifier is asked alone, kept while it waits for its fetch.
        let alone = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        #expect(alone.bytes == Consumer.appIdentifierCommand(1))
        _ = consumer.writeCompleted(alone.token, .success, at: .zero)
        let fetch = try onlyWrite(deliver(NotificationAttributesResponse(notificationUID: uid(1), attributes: [NotificationAttribute(.appIdentifier, AttributeValue(mailApp))]), to: &consumer))
        #expect(fetch.command == standardCommand(1))
        // Modified while fetched: the answer's values go with the AppIdentifier, asked alone again.
        _ = consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero)
        _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
        let again = try onlyWrite(deliver(standardResponse(1), to: &consumer))
        #expect(consumer.notification(uid(1))?.attributes == [])
        #expect(again.bytes == Consumer.appIdentifierCommand(1))
    }

    @Test("a phone sending every value as long as accepted fills each table to its bound, no further")
    func longestValues() throws {
        let preset = ConsumerConfiguration.microcontroller
        var consumer = sessionConsumer(preset)
        var now = Timestamp.zero
        var pending: [ConsumerAction] = []
        let request = try #require(DataSourceRequest(ControlPointCommand.getNotificationAttributes(
            GetNotificationAttributes(notificationUID: uid(1), attributes: preset.eagerAttributes))))
        let bound = request.valueBound(unlimited: preset.unlimitedValueLength)
        var largestBuffer = 0
        var shown: [ConsumerNotification] = []
        for raw in UInt32(1)...40 {
            now = now + .milliseconds(50)
            pending += consumer.received(notificationSource: sourceEvent(.added, raw), at: now)
            while !pending.isEmpty {
                guard case .writeControlPoint(let bytes, let token) = pending.removeFirst() else { continue }
                pending += consumer.writeCompleted(token, .success, at: now)
                let command = try ControlPointCommand.decode(bytes)
                var response: [UInt8]
                switch command {
                case .getNotificationAttributes(let asked):
                    response = [0] + asked.notificationUID.rawValue.littleEndianBytes
                    for attribute in asked.attributes {
                        let length = attribute.maxLength.map(Int.init) ?? preset.unlimitedValueLength
                        let value = attribute.id == .appIdentifier
                            ? Array("app.\(asked.notificationUID.rawValue).".utf8) + [UInt8](repeating: 0x78, count: length - "app.\(asked.notificationUID.rawValue).".utf8.count)
                            : [UInt8](repeating: 0x61, count: length)
                        response += [attribute.id.rawValue, UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8)] + value
                    }
                case .getAppAttributes(let asked):
                    response = [1] + asked.appIdentifierBytes + [0]
                    for attribute in asked.attributes {
                        response += [attribute.rawValue, UInt8(preset.unlimitedValueLength), 0] + [UInt8](repeating: 0x4E, count: preset.unlimitedValueLength)
                    }
                case .performNotificationAction:
                    continue
                }
                let answered = consumer.received(dataSource: response, at: now)
                for event in events(answered) { if case .ready(let notification, _) = event { shown.append(notification) } }
                pending += answered
                largestBuffer = max(largestBuffer, consumer.reassembler.scratch.count)
            }
        }
        #expect(consumer.liveNotifications.count == preset.maximumNotifications)
        #expect(consumer.session.appCache.count == preset.maximumCachedApps)
        // Each shown with every value whole; the model keeps none of them after (`keepsAttributes`).
        #expect(shown.count == 40)
        #expect(shown.allSatisfy { $0[.message]?.count == 256 && $0[.appIdentifier]?.count == 128 })
        #expect(consumer.liveNotifications.allSatisfy { $0.attributes.isEmpty })
        // The reassembler's buffer holds one response: at most the sum of what was asked.
        #expect(largestBuffer <= bound, "\(largestBuffer) > \(bound)")
        #expect(consumer.session.entries.isEmpty && consumer.reassembler.outstandingCount == 0)
    }
}

extension UInt32 {
    fileprivate var littleEndianBytes: [UInt8] {
        [UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8), UInt8(truncatingIfNeeded: self >> 16), UInt8(truncatingIfNeeded: self >> 24)]
    }
}
