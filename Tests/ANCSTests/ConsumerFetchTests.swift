// The Consumer: eager fetching, the app-name cache, and notification actions.

import Testing
@testable import ANCS

extension ConsumerTests {
    // MARK: Fetching and caching

    @Test("Fetch attributes lazily: by default no write on Added")
    func lazyByDefault() throws {
        var consumer = sessionConsumer()
        #expect(ConsumerConfiguration.default.eagerAttributes.isEmpty)
        for raw in UInt32(1)...20 {
            let actions = consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
            #expect(actions.count == 1)
            #expect(try writes(actions).isEmpty)
        }
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("An eager fetch the application already asked for (same bytes) is answered by its request, and the next notification's fetch goes out at once")
    func eagerFetchJoinsTheApplicationsRequest() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes, eagerAppNames: false))
        let first = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        // The application asks for notification 2 what the display asks: queued behind the write.
        var queued: [ConsumerAction] = []
        let asked = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &queued)
        #expect(try writes(queued).isEmpty)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)).isEmpty)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero)).isEmpty)
        let second = try onlyWrite(consumer.writeCompleted(first.token, .success, at: .zero))
        #expect(second.command == standardCommand(2))
        #expect(try writes(consumer.writeCompleted(second.token, .success, at: .zero)).isEmpty)  // two outstanding
        // Notification 1 answered: the display wants 2, already asked (no second write for it), then 3.
        let afterFirst = deliver(standardResponse(1), to: &consumer)
        let third = try onlyWrite(afterFirst)
        #expect(third.command == standardCommand(3))
        // The application's response shows notification 2 as well.
        let afterSecond = deliver(standardResponse(2), to: &consumer)
        #expect(results(afterSecond, for: asked).count == 1)
        #expect(events(afterSecond).contains { $0.readyUID == uid(2) })
        #expect(try writes(afterSecond).isEmpty)
    }

    @Test("App attributes are kept per session per AppIdentifier: never ask the NP twice for the same app's name")
    func appAttributesCache() throws {
        var consumer = sessionConsumer()
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAppAttributes(mailApp, at: .zero, into: &firstActions)
        let write = try onlyWrite(firstActions)
        #expect(write.bytes == [0x01] + Array(mailApp.utf8) + [0x00, 0x00])
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let answered = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        let value = ConsumerResult.success(.appAttributes(displayNameResponse(mailApp, "Mail")))
        #expect(answered == [
            .emit(.appAttributes(displayNameResponse(mailApp, "Mail"))),
            .emit(.completed(first, value)),
        ])
        #expect(consumer.displayName(of: mailApp) == "Mail")

        // Answered from the cache: no write at all.
        var cachedActions: [ConsumerAction] = []
        let cached = consumer.fetchAppAttributes(mailApp, at: .zero, into: &cachedActions)
        #expect(cachedActions == [.emit(.completed(cached, value))])
        #expect(consumer.pendingRequestCount == 0)

        // Another app is asked.
        let other = try onlyWrite(consumer.fetchAppAttributes(phoneApp, at: .zero).actions)
        #expect(other.command == displayNameCommand(phoneApp))
    }

    @Test("The cache answers only what was asked: a request for other attributes of a cached app goes to the phone, and its answer is exactly the attributes asked")
    func appAttributesCacheAnswersExactly() throws {
        var consumer = sessionConsumer()
        let name = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).actions)
        _ = consumer.writeCompleted(name.token, .success, at: .zero)
        _ = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        let wider: [AppAttributeID] = [.displayName, AppAttributeID(rawValue: 1)]
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAppAttributes(mailApp, wider, at: .zero, into: &actions)
        let write = try onlyWrite(actions)
        #expect(write.command == .getAppAttributes(GetAppAttributes(appIdentifier: mailApp, attributes: wider)))
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let both = AppAttributesResponse(appIdentifier: mailApp, attributes: [
            AppAttribute(.displayName, AttributeValue("Mail")), AppAttribute(AppAttributeID(rawValue: 1), AttributeValue("x")),
        ])
        #expect(results(deliver(both, to: &consumer), for: id) == [.success(.appAttributes(both))])
        // The cache now holds both: the name alone is asked of the phone again (not answered with both).
        var againActions: [ConsumerAction] = []
        let again = consumer.fetchAppAttributes(mailApp, at: .zero, into: &againActions)
        #expect(try onlyWrite(againActions).command == displayNameCommand(mailApp))
        #expect(results(againActions, for: again).isEmpty)
    }

    @Test("Eager policy: configured attributes are fetched for every new notification, each app's name once per session")
    func eagerAttributesAndAppNames() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var written: [ControlPointCommand] = []
        var all: [ConsumerAction] = []
        func record(_ actions: [ConsumerAction]) throws -> [Write] {
            all += actions
            let found = try writes(actions)
            written += found.map(\.command)
            return found
        }

        let added1 = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        #expect(added1.first == .emit(.added(ConsumerNotification(uid: uid(1), eventFlags: [], categoryID: .email, categoryCount: 1, isPreExisting: false))))
        let gna1 = try #require(try record(added1).first)
        #expect(gna1.command == standardCommand(1))
        #expect(try record(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)).isEmpty)

        _ = try record(consumer.writeCompleted(gna1.token, .success, at: .zero))
        let afterFirst = deliver(standardResponse(1), to: &consumer)
        #expect(events(afterFirst).first == .attributes(standardResponse(1)))
        // The app's name goes ahead of the queued attribute fetch.
        let gaaMail = try onlyWrite(afterFirst)
        _ = try record(afterFirst)
        #expect(gaaMail.command == displayNameCommand(mailApp))

        _ = try record(consumer.writeCompleted(gaaMail.token, .success, at: .zero))
        let named = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        #expect(events(named).first == .appAttributes(displayNameResponse(mailApp, "Mail")))
        let gna2 = try onlyWrite(named)
        _ = try record(named)
        #expect(gna2.command == standardCommand(2))
        #expect(consumer.displayName(of: mailApp) == "Mail")

        _ = try record(consumer.writeCompleted(gna2.token, .success, at: .zero))
        // Same app again: its name is cached, not asked.
        #expect(try record(deliver(standardResponse(2, title: "Bob"), to: &consumer)).isEmpty)
        #expect(consumer.notifications[uid(2)]?[.title] == "Bob")

        // A new app is asked once.
        let gna3 = try #require(try record(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero)).first)
        _ = try record(consumer.writeCompleted(gna3.token, .success, at: .zero))
        let gaaPhone = try onlyWrite(deliver(standardResponse(3, app: phoneApp), to: &consumer))
        written.append(gaaPhone.command)
        #expect(gaaPhone.command == displayNameCommand(phoneApp))

        #expect(written.filter { $0 == displayNameCommand(mailApp) }.count == 1)
        #expect(written.filter { $0 == displayNameCommand(phoneApp) }.count == 1)
        // The engine's own fetches end no application request.
        #expect(completionCount(all) == 0)
    }

    @Test("AppIdentifiers are compared as bytes: two that differ only in invalid UTF-8 get their own Get App Attributes, with their exact bytes, and their own cache entries")
    func appIdentifiersAsBytes() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        let prefix = Array("com.example.".utf8)
        // Both decode leniently to "com.example.\u{FFFD}".
        let apps: [(bytes: [UInt8], name: AttributeValue)] = [(prefix + [0xFF], "Alpha"), (prefix + [0xFE], "Beta"), (prefix + [0xC0], "Gamma")]
        for (index, app) in apps.enumerated() {
            let raw = UInt32(index + 1)
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            let attributes = NotificationAttributesResponse(notificationUID: uid(raw), attributes: [
                NotificationAttribute(.appIdentifier, AttributeValue(bytes: app.bytes)),
                NotificationAttribute(.title, "Hi"),
                NotificationAttribute(.date, "20140322T154200"),
            ])
            let name = try onlyWrite(deliver(.notificationAttributes(attributes), to: &consumer))
            #expect(name.bytes == [0x01] + app.bytes + [0x00, 0x00], "the command carries the AppIdentifier's bytes as received")
            _ = consumer.writeCompleted(name.token, .success, at: .zero)
            let answer = AppAttributesResponse(appIdentifierBytes: app.bytes, attributes: [AppAttribute(.displayName, app.name)])
            #expect(events(deliver(.appAttributes(answer), to: &consumer)).contains(.appAttributes(answer)))
        }
        #expect(consumer.session.appCache.count == apps.count)
        for app in apps {
            #expect(consumer.session.appCache.first { $0.appIdentifierBytes == app.bytes }?[.displayName] == app.name)
            #expect(consumer.displayName(ofAppBytes: app.bytes) == app.name)
        }
        // An application request by bytes is answered from the cache, per app.
        var actions: [ConsumerAction] = []
        let request = consumer.fetchAppAttributes(appIdentifierBytes: apps[1].bytes, at: .zero, into: &actions)
        #expect(results(actions, for: request) == [.success(.appAttributes(AppAttributesResponse(appIdentifierBytes: apps[1].bytes, attributes: [AppAttribute(.displayName, "Beta")])))])
    }

    @Test("Eager policy: the app name is asked once even when its notifications' attributes arrive before the name does")
    func eagerAppNameAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes))
        var written: [Write] = []
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero))
        try #require(written.count == 1)
        written += try writes(consumer.writeCompleted(written[0].token, .success, at: .zero))
        try #require(written.count == 2)
        written += try writes(consumer.writeCompleted(written[1].token, .success, at: .zero))
        written += try writes(deliver(standardResponse(1), to: &consumer))
        try #require(written.count == 3)
        #expect(written[2].command == displayNameCommand(mailApp))
        written += try writes(deliver(standardResponse(2), to: &consumer))
        written += try writes(consumer.writeCompleted(written[2].token, .success, at: .zero))
        written += try writes(deliver(displayNameResponse(mailApp, "Mail"), to: &consumer))
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero))
        #expect(written.map(\.command) == [standardCommand(1), standardCommand(2), displayNameCommand(mailApp), standardCommand(3)])
    }

    @Test("A Removed event drops the notification's requests not yet written; requests waiting on them end with notificationRemoved")
    func removedDropsUnwrittenRequests() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let write1 = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        // Notification 2's eager fetch waits behind the first; the application joins it and asks more.
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 2, flags: [.negativeAction]), at: .zero)).isEmpty)
        var joinedActions: [ConsumerAction] = []
        let joined = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &joinedActions)
        var otherActions: [ConsumerAction] = []
        let other = consumer.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 32)], for: uid(2), at: .zero, into: &otherActions)
        var actionActions: [ConsumerAction] = []
        let action = consumer.performAction(.negative, on: uid(2), at: .zero, into: &actionActions)
        #expect(joinedActions.isEmpty && otherActions.isEmpty && actionActions.isEmpty)
        #expect(consumer.session.entries.count == 4)

        let removed = consumer.received(notificationSource: sourceEvent(.removed, 2), at: .zero)
        for id in [joined, other, action] {
            #expect(results(removed, for: id) == [.failure(.notificationRemoved)])
        }
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.session.entries.count == 1)
        // Nothing for notification 2 is ever written.
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        #expect(try writes(deliver(standardResponse(1), to: &consumer)).isEmpty)
        #expect(consumer.session.entries.isEmpty)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Eager policy: a Modified notification is fetched again (a fetch already written may have read the old content); a burst of Modified costs one fetch")
    func eagerRefetchOnModified() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let first = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        for _ in 0..<3 {
            #expect(try writes(consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero)).isEmpty)
        }
        _ = consumer.writeCompleted(first.token, .success, at: .zero)
        let again = try onlyWrite(deliver(standardResponse(1, title: "old"), to: &consumer))
        #expect(again.command == standardCommand(1))
        _ = consumer.writeCompleted(again.token, .success, at: .zero)
        #expect(try writes(deliver(standardResponse(1, title: "new"), to: &consumer)).isEmpty)
        #expect(consumer.notifications[uid(1)]?[.title] == "new")
        #expect(consumer.session.entries.isEmpty)
    }

    @Test("Eager policy: an app the NP answered 0xA2 for is not asked again in the session, however many notifications it posts")
    func eagerUnknownAppAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var appFetches = 0
        for raw in UInt32(1)...3 {
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            for write in try writes(deliver(standardResponse(raw), to: &consumer)) {
                #expect(write.command == displayNameCommand(mailApp))
                appFetches += 1
                // Refused: the notification is shown without the app's name.
                let refused = consumer.writeCompleted(write.token, .attError(.invalidParameter), at: .zero)
                #expect(try writes(refused).isEmpty)
                #expect(events(refused).map(\.readyUID) == [uid(raw)])
            }
        }
        #expect(appFetches == 1)
        #expect(consumer.session.entries.isEmpty)
        // Remembered in the app cache with no attributes, and told as nothing cached.
        #expect(consumer.session.appCache.count == 1)
        #expect(consumer.cachedApp(mailApp) == nil && consumer.displayName(of: mailApp) == nil)
        #expect(consumer.appAttributes.isEmpty)
        // The application may still ask; a new session asks again.
        let asked = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).actions)
        #expect(asked.command == displayNameCommand(mailApp))
        _ = consumer.writeCompleted(asked.token, .attError(.invalidParameter), at: .zero)
        _ = consumer.serviceChanged(published: false, at: .zero)
        _ = consumer.serviceChanged(published: true, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 4), at: .zero))
        _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
        #expect(try onlyWrite(deliver(standardResponse(4), to: &consumer)).command == displayNameCommand(mailApp))
    }

    @Test("Apps the NP did not know and apps' names share the cache's bound: the oldest entry of either kind makes room, and an app whose 0xA2 left the cache is asked again")
    func unknownAppsShareTheCache() throws {
        var configuration = ConsumerConfiguration(eagerAttributes: standardAttributes)
        configuration.maximumCachedApps = 2
        var consumer = sessionConsumer(configuration)
        /// Notification `raw` of `app`: fetched, then its app's name asked
        /// (answered with `name`, or 0xA2 without), or shown at once (nil).
        func post(_ raw: UInt32, _ app: String, name: String?) throws -> Bool {
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            let answered = deliver(standardResponse(raw, app: app), to: &consumer)
            guard let asked = try writes(answered).first else {
                #expect(events(answered).contains { $0.readyUID == uid(raw) })
                return false
            }
            #expect(asked.command == displayNameCommand(app))
            if let name {
                _ = consumer.writeCompleted(asked.token, .success, at: .zero)
                _ = deliver(displayNameResponse(app, name), to: &consumer)
            } else {
                _ = consumer.writeCompleted(asked.token, .attError(.invalidParameter), at: .zero)
            }
            return true
        }
        #expect(try post(1, "a.known", name: "Known"))
        #expect(try post(2, "b.unknown", name: nil))
        // Both cached: neither is asked again.
        #expect(try !post(3, "a.known", name: "Known"))
        #expect(try !post(4, "b.unknown", name: nil))
        #expect(consumer.session.appCache.count == 2)
        // A third app takes the oldest's place (the named one)...
        #expect(try post(5, "c.unknown", name: nil))
        #expect(consumer.cachedApp("a.known") == nil && consumer.session.appCache.count == 2)
        #expect(try post(6, "a.known", name: "Known"))
        // ...and the unknown one's next: its name is asked again.
        #expect(try post(7, "b.unknown", name: nil))
        #expect(consumer.displayName(of: "a.known") == "Known")
        #expect(consumer.appAttributes.keys.sorted() == ["a.known"])
    }

    @Test("Eager policy without eagerAppNames fetches no app names")
    func eagerWithoutAppNames() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let gna = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        _ = consumer.writeCompleted(gna.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        #expect(try writes(answered).isEmpty)
        let notification = try #require(consumer.notification(uid(1)))
        #expect(events(answered) == [.attributes(standardResponse(1)), .ready(notification, appName: nil)])
    }

    @Test("Eager fetches need Data Source: without it nothing is written")
    func eagerWithoutDataSource() throws {
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: standardAttributes))
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .transportFailure, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)).isEmpty)
        // Only the retry of the Data Source subscription is due.
        #expect(consumer.nextDeadline == Timestamp(.seconds(15)))
    }

    // MARK: Notification actions

    struct UnavailableAction: Sendable, CustomTestStringConvertible {
        var flags: EventFlags
        var action: ActionID
        var testDescription: String { "\(action) with flags \(flags)" }
    }

    @Test("Perform Notification Action only for notifications whose flags announce it; otherwise the link is not touched",
          arguments: [
              UnavailableAction(flags: [], action: .positive),
              UnavailableAction(flags: [], action: .negative),
              UnavailableAction(flags: [.negativeAction], action: .positive),
              UnavailableAction(flags: [.positiveAction], action: .negative),
              UnavailableAction(flags: [.positiveAction, .negativeAction], action: ActionID(rawValue: 2)),
              UnavailableAction(flags: [.positiveAction, .negativeAction], action: ActionID(rawValue: 255)),
          ])
    func actionNotAvailable(_ unavailable: UnavailableAction) {
        var consumer = sessionConsumer(with: [(1, unavailable.flags)])
        var actions: [ConsumerAction] = []
        let id = consumer.performAction(unavailable.action, on: uid(1), at: .zero, into: &actions)
        #expect(actions == [.emit(.completed(id, .failure(.actionNotAvailable)))])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("Perform Notification Action on a NotificationUID the session does not know (never announced, or removed) fails as unknownNotification, without a write")
    func actionOnUnknownNotification() {
        var consumer = sessionConsumer(with: [(1, [.positiveAction])])
        _ = consumer.received(notificationSource: sourceEvent(.removed, 1, flags: [.positiveAction]), at: .zero)
        var removedActions: [ConsumerAction] = []
        let removed = consumer.performAction(.positive, on: uid(1), at: .zero, into: &removedActions)
        #expect(removedActions == [.emit(.completed(removed, .failure(.unknownNotification)))])
        var unknownActions: [ConsumerAction] = []
        let unknown = consumer.performAction(.positive, on: uid(77), at: .zero, into: &unknownActions)
        #expect(unknownActions == [.emit(.completed(unknown, .failure(.unknownNotification)))])
        #expect(ConsumerError.unknownNotification.description == "no notification with this UID in this session")
    }

    @Test("Perform Notification Action writes 02 · NotificationUID · ActionID; success ends it with actionPerformed, no Data Source follows",
          arguments: [ActionID.positive, .negative])
    func performAction(_ action: ActionID) throws {
        var consumer = sessionConsumer(with: [(0x0102_0343, [.positiveAction, .negativeAction]), (2, [])])
        var actions: [ConsumerAction] = []
        let id = consumer.performAction(action, on: uid(0x0102_0343), at: .zero, into: &actions)
        let write = try onlyWrite(actions)
        #expect(write.bytes == [0x02, 0x43, 0x03, 0x02, 0x01, action.rawValue])
        #expect(consumer.writeCompleted(write.token, .success, at: .zero) == [.emit(.completed(id, .success(.actionPerformed)))])
        #expect(consumer.pendingRequestCount == 0)

        // Nothing is awaited on Data Source for it: the next response belongs to the next request.
        var fetchActions: [ConsumerAction] = []
        let fetch = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &fetchActions)
        _ = consumer.writeCompleted(try onlyWrite(fetchActions).token, .success, at: .zero)
        #expect(results(deliver(standardResponse(2), to: &consumer), for: fetch) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Action failed (0xA3): the NP did not perform the action")
    func actionFailed() throws {
        var consumer = sessionConsumer(with: [(1, [.positiveAction])])
        var actions: [ConsumerAction] = []
        let id = consumer.performAction(.positive, on: uid(1), at: .zero, into: &actions)
        let write = try onlyWrite(actions)
        #expect(consumer.writeCompleted(write.token, .attError(.actionFailed), at: .zero) == [.emit(.completed(id, .failure(.actionFailed)))])
    }
}

extension ConsumerTests {
    // MARK: What the model keeps of a response

    @Test("A notification's first fetch is kept as it came; later fetches replace by ID and append new ones; a response naming an ID twice keeps one, the later value, in the first one's place")
    func modelMergesByID() throws {
        var consumer = sessionConsumer(with: [(2, []), (3, [])])
        // A first fetch, IDs distinct: the model holds exactly the response's attributes.
        let first = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).actions)
        _ = consumer.writeCompleted(first.token, .success, at: .zero)
        _ = deliver(standardResponse(2, title: "Alice"), to: &consumer)
        #expect(consumer.notification(uid(2))?.attributes == standardResponse(2, title: "Alice").attributes)
        // A later fetch: the title replaced where it was, the message appended.
        let later: [NotificationAttributeRequest] = [NotificationAttributeRequest(.message, maxLength: 32), NotificationAttributeRequest(.title, maxLength: 16)]
        let second = try onlyWrite(consumer.fetchAttributes(later, for: uid(2), at: .zero).actions)
        _ = consumer.writeCompleted(second.token, .success, at: .zero)
        _ = deliver(NotificationAttributesResponse(notificationUID: uid(2), attributes: [
            NotificationAttribute(.message, "Lunch?"), NotificationAttribute(.title, "Bob"),
        ]), to: &consumer)
        #expect(consumer.notification(uid(2))?.attributes.map(\.id) == [.appIdentifier, .title, .date, .message])
        #expect(consumer.notification(uid(2))?[.title] == "Bob")
        #expect(consumer.notification(uid(2))?[.message] == "Lunch?")
        // A first fetch that names the title twice (two lengths): one title, the later value.
        let twice: [NotificationAttributeRequest] = [NotificationAttributeRequest(.title, maxLength: 3), NotificationAttributeRequest(.date), NotificationAttributeRequest(.title, maxLength: 16)]
        let third = try onlyWrite(consumer.fetchAttributes(twice, for: uid(3), at: .zero).actions)
        _ = consumer.writeCompleted(third.token, .success, at: .zero)
        let answered = deliver(NotificationAttributesResponse(notificationUID: uid(3), attributes: [
            NotificationAttribute(.title, "Car"), NotificationAttribute(.date, "20261129T080000"), NotificationAttribute(.title, "Carol"),
        ]), to: &consumer)
        #expect(consumer.notification(uid(3))?.attributes.map(\.id) == [.title, .date])
        #expect(consumer.notification(uid(3))?[.title] == "Carol")
        // The application's answer is the response as it came, both titles in it.
        #expect(events(answered).contains { if case .attributes(let response) = $0 { response.attributes.count == 3 } else { false } })
    }
}
