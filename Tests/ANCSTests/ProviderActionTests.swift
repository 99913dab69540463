import Testing
@testable import ANCS

// MARK: - Notification actions

extension ProviderTests {
    @Suite("Provider: notification actions")
    struct Actions {
        private func perform(_ action: ActionID, on uid: NotificationUID, from connection: ConnectionID = phone, _ provider: inout Provider) throws -> [ProviderAction] {
            try write(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action)), from: connection, to: &provider)
        }

        @Test("A negative action on a message clears it: Removed follows the write response")
        func messageNegativeRemoves() throws {
            var provider = makeProvider()
            let uid = try add(mail, to: &provider)
            _ = try add(mail, to: &provider)
            let actions = try perform(.negative, on: uid, &provider)
            #expect(actions == [
                .respond(phone, .success),
                .notify(phone, .notificationSource, NotificationSourceEvent(eventID: .removed, eventFlags: [.negativeAction], categoryID: .email, categoryCount: 1, notificationUID: uid).encode()),
                .emit(.actionPerformed(ProviderPerformedAction(connection: phone, notificationUID: uid, actionID: .negative, effect: .remove))),
            ])
            #expect(provider.notificationCenter[uid] == nil)
        }

        @Test("A positive action on a message leaves it to the application")
        func messagePositiveKeeps() throws {
            var provider = makeProvider()
            var reply = mail
            reply.flags = [.positiveAction, .negativeAction]
            reply.positiveActionLabel = "Reply"
            let uid = try add(reply, to: &provider)
            let actions = try perform(.positive, on: uid, &provider)
            #expect(actions == [.respond(phone, .success), .emit(.actionPerformed(ProviderPerformedAction(connection: phone, notificationUID: uid, actionID: .positive, effect: .keep)))])
            #expect(provider.notificationCenter[uid] == reply)
        }

        @Test("A positive action on an incoming call answers it: the call is removed")
        func callPositiveRemoves() throws {
            var provider = makeProvider()
            let uid = try add(call, to: &provider)
            let actions = try perform(.positive, on: uid, &provider)
            #expect(responses(actions) == [.success])
            let events = try sourceEvents(actions, to: phone)
            #expect(events == [NotificationSourceEvent(eventID: .removed, eventFlags: call.flags, categoryID: .incomingCall, categoryCount: 0, notificationUID: uid)])
            #expect(provider.notificationCenter.count == 0)
        }

        @Test("A negative action on an incoming call declines it: the call is removed and a missed call added")
        func callNegativeAddsMissedCall() throws {
            var provider = makeProvider()
            _ = try add(ProviderNotification(appIdentifier: "com.apple.mobilephone", categoryID: .missedCall, title: "Carol"), to: &provider)
            let uid = try add(call, to: &provider)
            let actions = try perform(.negative, on: uid, &provider)

            guard case .respond(phone, .success) = actions.first else {
                Issue.record("the write response is not first")
                return
            }
            let events = try sourceEvents(actions, to: phone)
            #expect(events.count == 2)
            #expect(events[0] == NotificationSourceEvent(eventID: .removed, eventFlags: call.flags, categoryID: .incomingCall, categoryCount: 0, notificationUID: uid))
            #expect(events[1].eventID == .added)
            #expect(events[1].categoryID == .missedCall)
            #expect(events[1].categoryCount == 2)
            #expect(events[1].notificationUID > uid)
            #expect(events[1].eventFlags == [.negativeAction])

            let missed = try #require(provider.notificationCenter[events[1].notificationUID])
            #expect(missed.appIdentifier == call.appIdentifier)
            #expect(missed.title == call.title)
            #expect(missed.date == call.date)
            #expect(emitted(actions).last == .actionPerformed(ProviderPerformedAction(connection: phone, notificationUID: uid, actionID: .negative, effect: .removeAndAddMissedCall, missedCallUID: events[1].notificationUID)))
            #expect(dataSourceCount(actions) == 0)

            // The missed call can be cleared in turn.
            let cleared = try perform(.negative, on: events[1].notificationUID, &provider)
            #expect(try sourceEvents(cleared, to: phone).map(\.eventID) == [.removed])
        }

        @Test("The effect of an action is configurable per notification")
        func configuredEffects() throws {
            var provider = makeProvider()
            var persistent = call
            persistent.positiveActionEffect = .keep
            persistent.negativeActionEffect = .remove
            let kept = try add(persistent, to: &provider)
            #expect(try sourceEvents(try perform(.positive, on: kept, &provider), to: phone).isEmpty)
            #expect(try sourceEvents(try perform(.negative, on: kept, &provider), to: phone).map(\.eventID) == [.removed])
            #expect(provider.notificationCenter.categoryCount(.missedCall) == 0)

            var declinable = mail
            declinable.negativeActionEffect = .removeAndAddMissedCall
            let uid = try add(declinable, to: &provider)
            let events = try sourceEvents(try perform(.negative, on: uid, &provider), to: phone)
            #expect(events.map(\.eventID) == [.removed, .added])
            #expect(events.map(\.categoryID) == [.email, .missedCall])
        }

        @Test("Perform Notification Action produces no Data Source traffic")
        func noDataSourceAfterAction() throws {
            var provider = makeProvider([(phone, 23, true, true), (watch, 185, true, true)])
            let uid = try add(call, to: &provider)
            let actions = try perform(.negative, on: uid, &provider)
            #expect(dataSourceCount(actions) == 0)
            #expect(try sourceEvents(actions, to: watch).count == 2)
        }

        @Test("Automatic effects resolve as iOS does")
        func automaticEffects() {
            #expect(ProviderActionEffect.automatic.resolved(for: .positive, in: .incomingCall) == .remove)
            #expect(ProviderActionEffect.automatic.resolved(for: .negative, in: .incomingCall) == .removeAndAddMissedCall)
            #expect(ProviderActionEffect.automatic.resolved(for: .negative, in: .missedCall) == .remove)
            #expect(ProviderActionEffect.automatic.resolved(for: .negative, in: CategoryID(rawValue: 99)) == .remove)
            #expect(ProviderActionEffect.automatic.resolved(for: .positive, in: .social) == .keep)
            #expect(ProviderActionEffect.fail.resolved(for: .positive, in: .incomingCall) == .fail)
        }

        @Test("If no NotificationUID is left for the missed call, the call is still declined")
        func missedCallWithoutUIDs() throws {
            var provider = makeProvider(configuration: ProviderConfiguration(firstNotificationUID: UInt32.max))
            let uid = try add(call, to: &provider)
            let actions = try perform(.negative, on: uid, &provider)
            #expect(try sourceEvents(actions, to: phone).map(\.eventID) == [.removed])
            #expect(emitted(actions) == [.actionPerformed(ProviderPerformedAction(connection: phone, notificationUID: uid, actionID: .negative, effect: .removeAndAddMissedCall))])
        }
    }
}
