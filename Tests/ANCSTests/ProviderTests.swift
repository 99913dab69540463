import Testing
@testable import ANCS

// The Provider engine (NP), driven through its inputs only; its outputs are
// checked on the wire level: Notification Source events decoded, Data Source
// fragments reassembled with the consumer side's DataSourceReassembler.
// Helpers: ProviderFixtures.swift.

/// The Provider engine (NP), one suite per part of the spec.
@Suite("Provider")
struct ProviderTests {}

// MARK: - Sessions and Notification Source

extension ProviderTests {
    @Suite("Provider: sessions and Notification Source")
    struct Sessions {
        @Test("At the start of a session the NP announces every existing iOS notification (Added + PreExisting)")
        func preExistingAnnouncementOnSubscribe() throws {
            var provider = makeProvider([])
            let first = try add(mail, to: &provider)
            let second = try add(mail, to: &provider)
            let third = try add(call, to: &provider)
            _ = provider.linkUp(phone, mtu: 185)

            let actions = provider.setSubscription(phone, .notificationSource, enabled: true)
            let announced = try sourceEvents(actions, to: phone)

            #expect(announced.map(\.notificationUID) == [first, second, third])
            for event in announced {
                #expect(event.eventID == .added)
                #expect(event.eventFlags.contains(.preExisting))
            }
            #expect(announced[0].categoryID == .email && announced[0].categoryCount == 2)
            #expect(announced[2].categoryID == .incomingCall && announced[2].categoryCount == 1)
            #expect(announced[2].eventFlags == [.important, .positiveAction, .negativeAction, .preExisting])
            #expect(emitted(actions) == [.sessionStarted(phone, preExisting: 3)])
        }

        @Test("Notifications added during a session carry no PreExisting flag")
        func addedDuringSessionIsNotPreExisting() throws {
            var provider = makeProvider()
            // A PreExisting flag given by the application is the provider's to set, not the app's.
            var flagged = mail
            flagged.flags.insert(.preExisting)
            let added = try provider.add(flagged)
            let uid = added.uid, actions = added.actions
            let events = try sourceEvents(actions, to: phone)
            #expect(events == [NotificationSourceEvent(eventID: .added, eventFlags: [.negativeAction], categoryID: .email, categoryCount: 1, notificationUID: uid)])
        }

        @Test("A session ends when the NC unsubscribes; subscribing again starts a new one with PreExisting announcements")
        func resubscribeStartsANewSession() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            // Writing the value a CCCD already has starts nothing.
            #expect(provider.setSubscription(phone, .notificationSource, enabled: true).isEmpty)

            let ended = provider.setSubscription(phone, .notificationSource, enabled: false)
            #expect(emitted(ended) == [.sessionEnded(phone)])
            #expect(try provider.modify(uid, to: mail).isEmpty)

            let restarted = provider.setSubscription(phone, .notificationSource, enabled: true)
            let events = try sourceEvents(restarted, to: phone)
            #expect(events.count == 1)
            #expect(events.first?.eventFlags.contains(.preExisting) == true)
        }

        @Test("An empty Notification Center starts a session with no announcements")
        func emptyCenterSession() {
            var provider = makeProvider([])
            _ = provider.linkUp(phone, mtu: 23)
            let actions = provider.setSubscription(phone, .notificationSource, enabled: true)
            #expect(actions == [.emit(.sessionStarted(phone, preExisting: 0))])
        }

        @Test("CategoryCount: two unread mails + one new one → 3, on Added, Modified and Removed")
        func categoryCountOnAddedModifiedRemoved() throws {
            var provider = makeProvider()
            let first = try provider.add(mail)
            let second = try provider.add(mail)
            let third = try provider.add(mail)
            #expect(try sourceEvents(first.actions, to: phone).map(\.categoryCount) == [1])
            #expect(try sourceEvents(second.actions, to: phone).map(\.categoryCount) == [2])
            #expect(try sourceEvents(third.actions, to: phone).map(\.categoryCount) == [3])

            // Another category counts on its own.
            let other = try provider.add(call)
            #expect(try sourceEvents(other.actions, to: phone).map(\.categoryCount) == [1])

            // Modified includes the notification being announced.
            var changed = mail
            changed.message = "Make it one o'clock"
            let modified = try sourceEvents(try provider.modify(second.uid, to: changed), to: phone)
            #expect(modified == [NotificationSourceEvent(eventID: .modified, eventFlags: [.negativeAction], categoryID: .email, categoryCount: 3, notificationUID: second.uid)])

            // Removed counts what is left after the removal.
            let removed = try sourceEvents(try provider.remove(first.uid), to: phone)
            #expect(removed == [NotificationSourceEvent(eventID: .removed, eventFlags: [.negativeAction], categoryID: .email, categoryCount: 2, notificationUID: first.uid)])
            let last = try sourceEvents(try provider.remove(other.uid), to: phone)
            #expect(last.map(\.categoryCount) == [0])
            #expect(provider.notificationCenter.categoryCount(.email) == 2)
            #expect(provider.notificationCenter.categoryCount(.incomingCall) == 0)
        }

        @Test("Modified into another category moves the notification between CategoryCounts")
        func modifiedIntoAnotherCategory() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            _ = try add(mail, to: &provider)
            var social = mail
            social.categoryID = .social
            let events = try sourceEvents(try provider.modify(uid, to: social), to: phone)
            #expect(events.map(\.categoryID) == [.social])
            #expect(events.map(\.categoryCount) == [1])
            #expect(provider.notificationCenter.categoryCount(.email) == 1)
        }

        @Test("CategoryCount saturates at 255, the largest the byte can say")
        func categoryCountSaturates() throws {
            var provider = makeProvider([])
            for _ in 0..<300 { _ = try provider.add(mail) }
            _ = provider.linkUp(phone, mtu: 23)
            let events = try sourceEvents(provider.setSubscription(phone, .notificationSource, enabled: true), to: phone)
            #expect(events.count == 300)
            #expect(events.allSatisfy { $0.categoryCount == 255 })
            #expect(provider.notificationCenter.categoryCount(.email) == 300)
        }

        @Test("Reserved CategoryIDs and reserved EventFlags bits are sent as given")
        func reservedValuesPassThrough() throws {
            var provider = makeProvider()
            let odd = ProviderNotification(appIdentifier: "com.example.future", categoryID: CategoryID(rawValue: 200), flags: EventFlags(rawValue: 0xE1))
            let added = try provider.add(odd)
            let uid = added.uid, actions = added.actions
            #expect(try sourceEvents(actions, to: phone) == [NotificationSourceEvent(eventID: .added, eventFlags: EventFlags(rawValue: 0xE1), categoryID: CategoryID(rawValue: 200), categoryCount: 1, notificationUID: uid)])
        }

        @Test("NotificationUIDs are unique in a session and never reused, even after removal")
        func uidsNeverReused() throws {
            var provider = makeProvider()
            var seen: Set<NotificationUID> = []
            for round in 0..<50 {
                let uid = try add(round.isMultiple(of: 2) ? mail : call, to: &provider)
                #expect(seen.insert(uid).inserted)
                if round.isMultiple(of: 3) { _ = try provider.remove(uid) }
            }
            // Removing everything does not bring old UIDs back.
            for uid in provider.notificationCenter.uids { _ = try provider.remove(uid) }
            let next = try add(mail, to: &provider)
            #expect(!seen.contains(next))
            #expect(next.rawValue == 50)
        }

        @Test("When every NotificationUID has been given out, add fails rather than reuse one")
        func uidsExhausted() throws {
            var provider = makeProvider(configuration: ProviderConfiguration(firstNotificationUID: UInt32.max - 1))
            let first = try add(mail, to: &provider)
            let second = try add(mail, to: &provider)
            #expect([first, second] == [NotificationUID(UInt32.max - 1), NotificationUID(UInt32.max)])
            _ = try provider.remove(first)
            #expect(throws: ProviderError.notificationUIDsExhausted) { try provider.add(mail) }
            #expect(provider.notificationCenter.uids == [second])
        }

        @Test("Modifying or removing a NotificationUID that names nothing is refused")
        func unknownUIDLocally() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            _ = try provider.remove(uid)
            #expect(throws: ProviderError.unknownNotification(uid)) { try provider.remove(uid) }
            #expect(throws: ProviderError.unknownNotification(uid)) { try provider.modify(uid, to: mail) }
        }

        @Test("Disconnecting ends the session; a new connection starts with nothing subscribed")
        func disconnectEndsSession() throws {
            var provider = makeProvider()
            #expect(emitted(provider.linkDown(phone)) == [.sessionEnded(phone)])
            #expect(provider.connections.isEmpty)
            #expect(provider.linkDown(phone).isEmpty)
            #expect(try provider.add(mail).actions.isEmpty)

            _ = provider.linkUp(phone, mtu: 50)
            #expect(!provider.isSubscribed(phone, to: .notificationSource))
            #expect(!provider.isSubscribed(phone, to: .dataSource))
            // Connecting again on a live connection ends its session too.
            _ = provider.setSubscription(phone, .notificationSource, enabled: true)
            #expect(emitted(provider.linkUp(phone, mtu: 23)) == [.sessionEnded(phone)])
            #expect(provider.connections == [phone])
        }
    }
}

// MARK: - Several consumers

extension ProviderTests {
    @Suite("Provider: several consumers")
    struct SeveralConsumers {
        @Test("Several consumers at once, each with its own ATT MTU and its own subscriptions")
        func severalConsumers() throws {
            // phone: both; watch: Notification Source only; car: Data Source only.
            var provider = makeProvider([(phone, 23, true, true), (watch, 185, true, false), (car, 517, false, true)])
            var long = mail
            long.message = String(repeating: "abcdefgh", count: 100)
            let announced = try provider.add(long)
            let uid = announced.uid, added = announced.actions

            // Notification Source events go only to consumers in a session, in connection order.
            #expect(added.map { action -> ConnectionID? in if case .notify(let id, .notificationSource, _) = action { id } else { nil } } == [phone, watch])

            let command = GetNotificationAttributes(notificationUID: uid, attributes: [.init(.title), .init(.message)])
            let bytes = try ControlPointCommand.getNotificationAttributes(command).encode()
            var expectedResponse: NotificationAttributesResponse?
            for (connection, mtu) in [(phone, 23), (car, 517)] {
                let actions = provider.controlPointWritten(connection, bytes)
                // Data Source notifications go only to the consumer that asked.
                #expect(actions.allSatisfy { action in
                    switch action {
                    case .notify(let id, _, _), .respond(let id, _): id == connection
                    case .emit: true
                    }
                })
                let fragments = dataSourceFragments(actions, to: connection)
                #expect(fragments.dropLast().allSatisfy { $0.count == mtu - 3 })
                let response = try #require(notificationAttributes(fragments, answering: command))
                #expect(response[.message]?.count == 800)
                if let expectedResponse { #expect(response == expectedResponse) }
                expectedResponse = response
            }

            // The watch did not subscribe to Data Source.
            #expect(responses(provider.controlPointWritten(watch, bytes)) == [.attError(ATTErrorCode.cccdImproperlyConfigured)])

            // The car, outside any session, can still act; the effect reaches the consumers in a session.
            let performed = provider.controlPointWritten(car, [0x02] + uidBytes(uid) + [0x01])
            #expect(performed.first == .respond(car, .success))
            #expect(try sourceEvents(performed, to: phone).map(\.eventID) == [.removed])
            #expect(try sourceEvents(performed, to: watch).map(\.eventID) == [.removed])
            #expect(try sourceEvents(performed, to: car).isEmpty)
        }

        @Test("A consumer that subscribes later gets the PreExisting announcements; the others hear nothing")
        func lateSubscriber() throws {
            var provider = makeProvider([(phone, 185, true, true)])
            _ = try add(mail, to: &provider)
            _ = try add(call, to: &provider)
            _ = provider.linkUp(watch, mtu: 23)
            let actions = provider.setSubscription(watch, .notificationSource, enabled: true)
            #expect(try sourceEvents(actions, to: phone).isEmpty)
            let announced = try sourceEvents(actions, to: watch)
            #expect(announced.count == 2)
            #expect(announced.allSatisfy { $0.eventFlags.contains(.preExisting) })
            #expect(provider.isSubscribed(watch, to: .notificationSource))
            #expect(!provider.isSubscribed(watch, to: .dataSource))
            #expect(!provider.isSubscribed(watch, to: .controlPoint))
        }
    }
}
