// What the display fetches: hidden categories and Silent notifications are
// not fetched (never `.ready`), and the phone's backlog (PreExisting) is
// fetched newest first, up to `maximumPreExisting`.

import Testing
@testable import ANCS

@Suite("Consumer: what the display fetches")
struct ConsumerFilterTests {
    /// A phone that answers each fetch at once with `standardResponse`;
    /// returns the UIDs fetched, in order, and those told `.ready`.
    func play(_ configuration: ConsumerConfiguration, _ announce: (inout Consumer) -> [ConsumerAction]) throws -> (fetched: [UInt32], ready: [UInt32], model: Int) {
        var consumer = sessionConsumer(configuration)
        var pending = announce(&consumer)
        var fetched: [UInt32] = [], ready: [UInt32] = []
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .writeControlPoint:
                let write = try onlyWrite([action])
                guard case .getNotificationAttributes(let asked) = write.command else { continue }
                fetched.append(asked.notificationUID.rawValue)
                pending += consumer.writeCompleted(write.token, .success, at: .zero)
                pending += consumer.received(dataSource: DataSourceResponse.notificationAttributes(standardResponse(asked.notificationUID.rawValue)).encode(), at: .zero)
            case .emit(.ready(let notification, _)):
                ready.append(notification.uid.rawValue)
            default:
                break
            }
        }
        return (fetched, ready, consumer.liveNotifications.count)
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
        #expect(result.fetched == [2] && result.ready == [2] && result.model == 2)
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
            let (_, actions) = consumer.fetchAppAttributes(mailApp, at: .zero)
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
