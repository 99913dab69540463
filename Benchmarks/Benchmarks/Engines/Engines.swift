// The sans-I/O engines, per notification and per command, in memory.

import ANCS
import Benchmark

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 10_000)

    // The consumer engine per notification, end to end: Added event, the
    // fetch it triggers, the write result and the response fragments at MTU 185.
    let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(1), attributes: [
        .init(.appIdentifier, "com.apple.MobileSMS"), .init(.title, "Alice"), .init(.message, "On my way — 5 min 🚲 see you at the café"), .init(.date, "20261122T093102"),
    ]))
    Benchmark("Consumer per notification (added → fetched → removed, MTU 185)") { benchmark in
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes, eagerAppNames: false))
        _ = consumer.linkUp(mtu: 185, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        for iteration in benchmark.scaledIterations {
            let uid = NotificationUID(UInt32(truncatingIfNeeded: iteration))
            let added = NotificationSourceEvent(eventID: .added, eventFlags: [], categoryID: .social, categoryCount: 1, notificationUID: uid).encode()
            let actions = consumer.received(notificationSource: added, at: .zero)
            guard case .writeControlPoint(_, let token)? = actions.last else { fatalError("no fetch") }
            _ = consumer.writeCompleted(token, .success, at: .zero)
            guard case .notificationAttributes(var body) = response else { fatalError() }
            body.notificationUID = uid
            for fragment in DataSourceResponse.notificationAttributes(body).fragments(mtu: 185) {
                blackHole(consumer.received(dataSource: fragment, at: .zero))
            }
            _ = consumer.received(notificationSource: NotificationSourceEvent(eventID: .removed, eventFlags: [], categoryID: .social, categoryCount: 0, notificationUID: uid).encode(), at: .zero)
        }
    }

    Benchmark("Provider per command (Get Notification Attributes, MTU 185)") { benchmark in
        var provider = Provider()
        provider.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages")
        let uid = try! provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Alice", message: "On my way — 5 min 🚲 see you at the café", date: ANCSDate(year: 2026, month: 11, day: 22, hour: 9, minute: 31, second: 2))).uid
        _ = provider.linkUp(ConnectionID(1), mtu: 185)
        _ = provider.setSubscription(ConnectionID(1), .dataSource, enabled: true)
        let write = try! ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: ConsumerConfiguration.displayAttributes)).encode()
        for _ in benchmark.scaledIterations {
            blackHole(provider.controlPointWritten(ConnectionID(1), write))
        }
    }
}
