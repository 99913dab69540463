// The consumer against a phone that takes every Control Point write and never
// answers on Data Source (its Data Source subscription gone), while
// Notification Source still speaks and the application keeps asking.

import Testing
@testable import ANCS

@Suite("Consumer: a phone that takes the writes and answers none")
struct ConsumerUnansweredTests {
    /// Plays 1 000 rounds of: the application asks, the phone takes the
    /// write and never answers, the request times out. Subscriptions the
    /// consumer makes again are granted at once.
    func run(_ configuration: ConsumerConfiguration, announce: Bool) -> (largest: Int, health: [ConsumerHealth], ended: Int, asked: Int) {
        var consumer = sessionConsumer(configuration, with: [(1, [])])
        var now = Timestamp.zero
        var largest = 0, ended = 0, asked = 0
        var health: [ConsumerHealth] = []
        var nextUID: UInt32 = 2
        func play(_ actions: [ConsumerAction]) {
            var pending = actions
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .writeControlPoint(_, let token): pending += consumer.writeCompleted(token, .success, at: now)
                case .subscribe(let characteristic): pending += consumer.subscriptionCompleted(characteristic, .success, at: now)
                case .unsubscribe: break
                case .emit(.health(let state)): health.append(state)
                case .emit(.completed): ended += 1
                default: break
                }
            }
        }
        for _ in 0..<1_000 {
            if consumer.isInSession {
                if announce {
                    // Notification Source still speaks: the display's fetches keep the probe away.
                    play(consumer.received(notificationSource: sourceEvent(.added, nextUID), at: now))
                    nextUID += 1
                }
                var actions: [ConsumerAction] = []
                _ = consumer.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 32)], for: uid(1), at: now, into: &actions)
                asked += 1
                play(actions)
            }
            now = now + .milliseconds(1_100)
            play(consumer.tick(at: now))
            largest = max(largest, consumer.reassembler.outstandingCount)
        }
        play(consumer.linkDown(at: now))
        return (largest, health, ended, asked)
    }

    @Test("the consumer subscribes again, and its memory stays bounded", arguments: [false, true])
    func subscribesAgainAndStaysBounded(announce: Bool) {
        var configuration = ConsumerConfiguration(requestTimeout: .seconds(1), eagerAttributes: announce ? ConsumerConfiguration.displayAttributes : [])
        configuration.retryInterval = .zero
        let result = run(configuration, announce: announce)
        // Before, the reassembler kept every request given up on: 1 000 of them here.
        #expect(result.largest <= configuration.pipeliningDepth + 3, "the reassembler kept \(result.largest) requests")
        #expect(result.health.contains(.resubscribing(.probeUnanswered)))
        // Every request the application made ended (timed out, or with its session).
        #expect(result.ended == result.asked)
    }
}
