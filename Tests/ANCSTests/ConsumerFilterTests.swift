// What the display fetches: hidden categories, hidden apps and Silent
// notifications are not fetched (never `.ready`), and the phone's backlog
// (PreExisting) is fetched newest first, up to `maximumPreExisting`.

import Testing
@testable import ANCS

@Suite("Consumer: what the display fetches")
struct ConsumerFilterTests {
    /// A phone that answers each fetch at once with what it asks, as
    /// `standardResponse` (each notification's app from `apps`, Mail if not
    /// there; `refuse`: these UIDs are answered 0xA2); returns the UIDs
    /// fetched, in order, those told `.ready`, those told `.hidden`, and
    /// the model's size.
    func play(_ configuration: ConsumerConfiguration, apps: [UInt32: String] = [:], refuse: Set<UInt32> = [], _ announce: (inout Consumer) -> [ConsumerAction]) throws -> (fetched: [UInt32], ready: [UInt32], hidden: [UInt32], model: Int) {
        let result = try playAsked(configuration, apps: apps, refuse: refuse, announce)
        return (result.fetched.map(\.uid), result.ready, result.hidden, result.model)
    }

    /// `play`, with each fetch's attributes and the notifications told
    /// `.displayFailed` and `.hidden`.
    func playAsked(_ configuration: ConsumerConfiguration, apps: [UInt32: String] = [:], refuse: Set<UInt32> = [], _ announce: (inout Consumer) -> [ConsumerAction]) throws -> (fetched: [(uid: UInt32, asked: [NotificationAttributeID])], ready: [UInt32], failed: [UInt32], hidden: [UInt32], model: Int) {
        var consumer = sessionConsumer(configuration)
        var pending = announce(&consumer)
        var fetched: [(uid: UInt32, asked: [NotificationAttributeID])] = [], ready: [UInt32] = [], failed: [UInt32] = [], hidden: [UInt32] = []
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .writeControlPoint:
                let write = try onlyWrite([action])
                guard case .getNotificationAttributes(let asked) = write.command else { continue }
                let raw = asked.notificationUID.rawValue
                fetched.append((raw, asked.attributes.map(\.id)))
                guard fetched.count <= 100 else {
                    Issue.record("the display fetches without end")
                    return (fetched, ready, failed, hidden, consumer.liveNotifications.count)
                }
                if refuse.contains(raw) {
                    pending += consumer.writeCompleted(write.token, .attError(.invalidParameter), at: .zero)
                    continue
                }
                pending += consumer.writeCompleted(write.token, .success, at: .zero)
                let answer = NotificationAttributesResponse(notificationUID: asked.notificationUID, attributes: asked.attributes.map { request in
                    switch request.id {
                    case .appIdentifier: NotificationAttribute(.appIdentifier, AttributeValue(apps[raw] ?? mailApp))
                    case .title: NotificationAttribute(.title, "Alice")
                    case .date: NotificationAttribute(.date, "20140322T154200")
                    default: NotificationAttribute(request.id, "")
                    }
                })
                pending += consumer.received(dataSource: DataSourceResponse.notificationAttributes(answer).encode(), at: .zero)
            case .emit(.ready(let notification, _)):
                ready.append(notification.uid.rawValue)
            case .emit(.displayFailed(let uid, _)):
                failed.append(uid.rawValue)
            case .emit(.hidden(let uid)):
                hidden.append(uid.rawValue)
            default:
                break
            }
        }
        return (fetched, ready, failed, hidden, consumer.liveNotifications.count)
    }

    func configuration() -> ConsumerConfiguration {
        ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false)
    }

    @Test("a hidden category is not fetched, the others are")
    func hiddenCategory() throws {
        var configuration = configuration()
        configuration.hiddenCategories = [.social, .news]
        let result = try play(configuration) { consumer in
            consumer.received(notificationSource: sourceEvent(.added, 1, category: .social), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 2, category: .email), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 3, category: .news), at: .zero)
        }
        #expect(result.fetched == [2] && result.ready == [2])
        #expect(result.hidden == [1, 3])  // told so, once each
        #expect(result.model == 3)  // in the model all the same
    }

    @Test("Silent notifications are fetched unless told not to")
    func silent() throws {
        var configuration = configuration()
        let announce: (inout Consumer) -> [ConsumerAction] = { consumer in
            consumer.received(notificationSource: sourceEvent(.added, 1, flags: [.silent]), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
        }
        #expect(try play(configuration, announce).fetched == [1, 2])
        configuration.fetchesSilent = false
        let result = try play(configuration, announce)
        #expect(result.fetched == [2] && result.ready == [2] && result.hidden == [1] && result.model == 2)
    }

    @Test("the backlog is fetched newest first, live notifications before it, up to its cap")
    func backlogNewestFirstWithinItsCap() throws {
        var configuration = configuration()
        configuration.maximumPreExisting = 3
        let result = try play(configuration) { consumer in
            // The first fetch goes as the first notification comes; the rest of
            // the backlog, and a live one, come while it is written.
            var actions: [ConsumerAction] = []
            for raw in UInt32(1)...10 {
                actions += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
            }
            actions += consumer.received(notificationSource: sourceEvent(.added, 11), at: .zero)
            return actions
        }
        #expect(result.fetched == [1, 11, 10, 9])
        #expect(result.ready == [1, 11, 10, 9])
        #expect(result.hidden == [8, 7, 6, 5, 4, 3, 2])
        #expect(result.model == 11)
        // Without a cap: the whole backlog, newest first.
        let all = try play(self.configuration()) { consumer in
            var actions: [ConsumerAction] = []
            for raw in UInt32(1)...5 {
                actions += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
            }
            return actions
        }
        #expect(all.fetched == [1, 5, 4, 3, 2])
    }

    @Test("a hidden app's notifications are asked for their app alone, and no more")
    func hiddenApp() throws {
        var configuration = configuration()
        configuration.hide(app: "com.facebook.Facebook")
        let apps: [UInt32: String] = [1: "com.facebook.Facebook", 3: "com.facebook.Facebook"]
        let result = try playAsked(configuration, apps: apps) { consumer in
            consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero)
        }
        let app: [NotificationAttributeID] = [.appIdentifier], all = standardAttributes.map(\.id)
        #expect(result.fetched.map(\.uid) == [1, 2, 2, 3])
        #expect(result.fetched.map(\.asked) == [app, app, all, app])
        #expect(result.ready == [2] && result.failed.isEmpty)
        #expect(result.hidden == [1, 3])
        #expect(result.model == 3)  // in the model all the same, as a hidden category's
        // Without hidden apps, one fetch each, as before.
        let shown = try playAsked(self.configuration(), apps: apps) { consumer in
            consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        }
        #expect(shown.fetched.map(\.asked) == [all] && shown.ready == [1])
    }

    @Test("an app known in the session is not asked again: a Modified notification of a hidden app is not fetched")
    func hiddenAppModified() throws {
        var configuration = configuration()
        configuration.hiddenApps = [Array("com.facebook.Facebook".utf8)]
        let apps: [UInt32: String] = [1: "com.facebook.Facebook"]
        let result = try playAsked(configuration, apps: apps) { consumer in
            var actions = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
            actions += consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
            return actions
        }
        #expect(result.fetched.map(\.uid) == [1, 2, 2])
        // Modified (refreshOnModified): the shown one fetched again in one fetch, the hidden one not at all.
        var consumer = sessionConsumer(configuration)
        var fetched: [(UInt32, Int)] = [], hidden: [UInt32] = []
        func answer(_ first: [ConsumerAction]) throws {
            var pending = first
            while !pending.isEmpty {
                let action = pending.removeFirst()
                if case .emit(.hidden(let uid)) = action { hidden.append(uid.rawValue) }
                guard case .writeControlPoint = action, case .getNotificationAttributes(let asked) = try onlyWrite([action]).command else { continue }
                let raw = asked.notificationUID.rawValue
                fetched.append((raw, asked.attributes.count))
                pending += consumer.writeCompleted(try onlyWrite([action]).token, .success, at: .zero)
                let full = standardResponse(raw, app: apps[raw] ?? mailApp)
                let answer = asked.attributes.count == 1 ? NotificationAttributesResponse(notificationUID: asked.notificationUID, attributes: [full.attributes[0]]) : full
                pending += consumer.received(dataSource: DataSourceResponse.notificationAttributes(answer).encode(), at: .zero)
            }
        }
        try answer(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        try answer(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero))
        #expect(hidden == [1])
        fetched.removeAll()
        try answer(consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero))
        try answer(consumer.received(notificationSource: sourceEvent(.modified, 2), at: .zero))
        #expect(fetched.map(\.0) == [2] && fetched.map(\.1) == [standardAttributes.count])
        #expect(hidden == [1, 1])  // told again as the display passes it over again
    }

    @Test("the backlog's cap counts the notifications shown, and no app is asked past it")
    func hiddenAppsInTheBacklog() throws {
        var configuration = configuration()
        configuration.hide(app: "com.facebook.Facebook")
        configuration.maximumPreExisting = 2
        let result = try playAsked(configuration, apps: [5: "com.facebook.Facebook"]) { consumer in
            var actions: [ConsumerAction] = []
            for raw in UInt32(1)...5 {
                actions += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
            }
            return actions
        }
        // 1 is asked for its app as it comes; then the newest first: 5 (hidden),
        // 4 and 3 (shown, the cap); 2 and 1 are past the cap.
        let app: [NotificationAttributeID] = [.appIdentifier], all = standardAttributes.map(\.id)
        #expect(result.fetched.map(\.uid) == [1, 5, 4, 4, 3, 3])
        #expect(result.fetched.map(\.asked) == [app, app, app, all, app, all])
        #expect(result.ready == [4, 3])
        #expect(result.hidden == [5, 2, 1])
    }

    @Test("a notification whose app cannot be fetched is told displayFailed once, not asked again")
    func hiddenAppUnanswered() throws {
        var configuration = configuration()
        configuration.hide(app: "com.facebook.Facebook")
        let result = try playAsked(configuration, refuse: [1]) { consumer in
            consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
                + consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
        }
        #expect(result.fetched.map(\.uid) == [1, 2, 2])
        #expect(result.failed == [1] && result.ready == [2] && result.hidden.isEmpty)
    }

    @Test("an app's name the host kept is not asked for again, and is told with ready")
    func appNameTheHostKept() throws {
        for kept in [false, true] {
            var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: true))
            if kept { consumer.learn(displayNameResponse(mailApp, "Mail")) }
            var pending = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
            var appFetches = 0
            var ready: AttributeValue?
            while !pending.isEmpty {
                let action = pending.removeFirst()
                if case .emit(.ready(_, let appName)) = action { ready = appName }
                guard case .writeControlPoint = action else { continue }
                let write = try onlyWrite([action])
                pending += consumer.writeCompleted(write.token, .success, at: .zero)
                switch write.command {
                case .getNotificationAttributes:
                    pending += consumer.received(dataSource: DataSourceResponse.notificationAttributes(standardResponse(1)).encode(), at: .zero)
                case .getAppAttributes:
                    appFetches += 1
                    pending += consumer.received(dataSource: DataSourceResponse.appAttributes(displayNameResponse(mailApp, "Mail (asked)")).encode(), at: .zero)
                case .performNotificationAction:
                    break
                }
            }
            #expect(appFetches == (kept ? 0 : 1))
            #expect(ready == AttributeValue(kept ? "Mail" : "Mail (asked)"))
            // An application's request for exactly the name is answered from the cache too.
            var actions: [ConsumerAction] = []
            _ = consumer.fetchAppAttributes(mailApp, at: .zero, into: &actions)
            #expect(try writes(actions).isEmpty)
        }
    }

    @Test("CategorySet")
    func categorySet() {
        let set: CategorySet = [.incomingCall, .email]
        #expect(set.contains(.incomingCall) && set.contains(.email) && !set.contains(.social))
        #expect(set.rawValue == 1 << 1 | 1 << 6)
        #expect(!CategorySet(rawValue: .max).contains(CategoryID(rawValue: 40)))
    }
}
