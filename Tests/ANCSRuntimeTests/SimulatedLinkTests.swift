import ANCS
import Testing
import ANCSDemo
@testable import ANCSRuntime
@testable import ANCSSimulation

/// End-to-end: a Provider and a Consumer over the simulated BLE link.
@Suite struct SimulatedLinkTests {
    /// A link to a provider with one app and no notifications yet.
    func makeLink(mtu: Int = 185, consumer: ConsumerConfiguration = .default) -> (SimulatedLink, ProviderHost) {
        let host = ProviderHost()
        host.registerApp("com.apple.MobileSMS", displayName: "Messages")
        let link = SimulatedLink(configuration: .init(mtu: mtu, connectionInterval: .milliseconds(30)), consumer: Consumer(configuration: consumer)) { input, now in
            host.serve(ConnectionID(1), input, at: now)
        }
        host.attach(link, as: ConnectionID(1))
        return (link, host)
    }

    func completions(_ link: SimulatedLink) -> [ConsumerRequestID: ConsumerResult] {
        var results: [ConsumerRequestID: ConsumerResult] = [:]
        for (_, event) in link.events {
            if case .completed(let id, let result) = event {
                #expect(results[id] == nil, "request \(id) ended twice")
                results[id] = result
            }
        }
        return results
    }

    static let longMessage = String(repeating: "Ünïcödé 🚲 text, ", count: 40)

    @Test("the demo scenario shows every notification", arguments: [23, 185, 517])
    func demoScenario(mtu: Int) {
        let run = DemoRun(link: .init(mtu: mtu, connectionInterval: .milliseconds(30)))
        run.start()
        run.runToEnd()
        #expect(run.summary.notifications == 12)
        #expect(run.summary.shown == 12)
        #expect(run.summary.failedRequests == 0)
        #expect(run.summary.repeatedAppNameFetches == 0)
        #expect(run.summary.counters.connectionEvents > 0)
        // 12 shown; the answered call, the declined call, the mail and the cleared chat are gone.
        #expect(run.link.consumer.notifications.count == 8)
    }

    @Test("the simulation is deterministic")
    func deterministic() {
        func summary() -> DemoRun.Summary {
            let run = DemoRun(link: .init(mtu: 23, connectionInterval: .milliseconds(15)))
            run.start()
            run.runToEnd()
            return run.summary
        }
        #expect(summary() == summary())
    }

    @Test("a smaller MTU needs more connection events and packets")
    func mtuCost() {
        func counters(_ mtu: Int) -> SimulatedLink.Counters {
            let run = DemoRun(link: .init(mtu: mtu, connectionInterval: .milliseconds(30)))
            run.start()
            run.runToEnd()
            return run.summary.counters
        }
        let small = counters(23), large = counters(247)
        #expect(small.packetsToConsumer > large.packetsToConsumer)
        #expect(small.notifications > large.notifications)
        #expect(small.connectionEvents >= large.connectionEvents)
    }

    @Test("a response is fragmented to MTU − 3 and reassembled", arguments: [23, 185, 517])
    func fragmentation(mtu: Int) throws {
        let (link, host) = makeLink(mtu: mtu)
        link.connect()
        link.runUntilIdle()
        let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Alice", message: Self.longMessage), at: link.now))
        link.runUntilIdle()
        let before = link.counters.notifications
        let id = link.request { consumer, now in
            consumer.fetchAttributes([.init(.title, maxLength: 100), .init(.message, maxLength: 1000)], for: uid, at: now)
        }
        link.runUntilIdle()
        guard case .success(.notificationAttributes(let response))? = completions(link)[id] else {
            Issue.record("fetch did not succeed: \(String(describing: completions(link)[id]))")
            return
        }
        #expect(response[.title]?.string == "Alice")
        let message = Array(Self.longMessage.utf8.prefix(1000))
        #expect(response[.message]?.bytes == message)
        let responseLength = 5 + 3 + 5 + 3 + message.count
        let fragments = (responseLength + mtu - 4) / (mtu - 3)
        #expect(link.counters.notifications - before == fragments)
    }

    @Test("an ATT error on the Control Point write fails that request with its typed error")
    func writeError() throws {
        let (link, host) = makeLink()
        link.connect()
        link.runUntilIdle()
        let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Hi"), at: link.now))
        link.runUntilIdle()
        for (code, expected) in [(ANCSErrorCode.unknownCommand, ConsumerError.unknownCommand), (.invalidCommand, .invalidCommand),
                                 (.invalidParameter, .invalidParameter), (.actionFailed, .actionFailed), (ANCSErrorCode(rawValue: 0x05), .att(0x05))] {
            link.failNextControlPointWrite(with: .attError(code))
            let failing = link.request { consumer, now in consumer.fetchAttributes([.init(.title)], for: uid, at: now) }
            let next = link.request { consumer, now in consumer.fetchAttributes([.init(.title, maxLength: 2)], for: uid, at: now) }
            link.runUntilIdle()
            #expect(completions(link)[failing] == .failure(expected))
            guard case .success(.notificationAttributes(let response))? = completions(link)[next] else {
                Issue.record("the request after the failed one did not succeed")
                continue
            }
            #expect(response[.title]?.string == "Hi")
        }
    }

    @Test("a write that is never answered times out; ATT's 30 s timeout drops the link; the next session works")
    func writeNeverAnswered() throws {
        let (link, host) = makeLink()
        link.connect()
        link.runUntilIdle()
        let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Hi"), at: link.now))
        link.runUntilIdle()
        link.neverAnswerNextControlPointWrite()
        let start = link.now
        let hung = link.request { consumer, now in consumer.fetchAttributes([.init(.title)], for: uid, at: now) }
        link.runUntilIdle()
        #expect(completions(link)[hung] == .failure(.timedOut))
        #expect(link.now - start >= .seconds(10))
        #expect(!link.isConnected, "ATT transaction timeout drops the link")
        link.connect()
        link.runUntilIdle()
        let next = link.request { consumer, now in consumer.fetchAttributes([.init(.title)], for: uid, at: now) }
        link.runUntilIdle()
        #expect(completions(link)[next]?.error == nil)
    }

    @Test("the link dropping in the middle of a response ends the session; the next session works")
    func linkDropMidResponse() throws {
        for dropAfter in stride(from: 0, through: 1100, by: 37) {
            let (link, host) = makeLink(mtu: 23)
            link.connect()
            link.runUntilIdle()
            let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: Self.longMessage), at: link.now))
            link.runUntilIdle()
            link.dropLink(afterBytes: dropAfter)
            let id = link.request { consumer, now in consumer.fetchAttributes([.init(.message, maxLength: 600)], for: uid, at: now) }
            link.runUntilIdle()
            let result = completions(link)[id]
            #expect(result != nil, "drop after \(dropAfter) bytes: request never ended")
            if !link.isConnected {
                #expect(result == .failure(.sessionEnded))
                #expect(link.consumer.notifications.isEmpty)
                #expect(link.events.contains { if case .sessionEnded(.linkDown) = $0.1 { true } else { false } })
                link.connect()
                link.runUntilIdle()
                #expect(link.consumer.notifications[uid]?.isPreExisting == true)
                let again = link.request { consumer, now in consumer.fetchAttributes([.init(.title)], for: uid, at: now) }
                link.runUntilIdle()
                #expect(completions(link)[again]?.error == nil, "drop after \(dropAfter): next session fetch failed")
            }
        }
    }

    @Test("ANCS unpublished in the middle of a fetch, then published again")
    func unpublishMidFetch() throws {
        let (link, host) = makeLink(mtu: 23)
        link.connect()
        link.runUntilIdle()
        let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: Self.longMessage), at: link.now))
        link.runUntilIdle()
        let id = link.request { consumer, now in consumer.fetchAttributes([.init(.message, maxLength: 800)], for: uid, at: now) }
        link.run(until: link.now + .milliseconds(60))
        #expect(completions(link)[id] == nil, "the fetch should still be streaming")
        link.unpublishANCS()
        link.runUntilIdle()
        #expect(completions(link)[id] == .failure(.sessionEnded))
        #expect(link.consumer.notifications.isEmpty)
        link.publishANCS()
        link.runUntilIdle()
        #expect(link.consumer.notifications[uid]?.isPreExisting == true)
        let again = link.request { consumer, now in consumer.fetchAttributes([.init(.message, maxLength: 800)], for: uid, at: now) }
        link.runUntilIdle()
        guard case .success(.notificationAttributes(let response))? = completions(link)[again] else {
            Issue.record("fetch after republish failed")
            return
        }
        #expect(response[.message]?.count == 800)
    }

    @Test("a long silence on Notification Source changes nothing")
    func longSilence() throws {
        let (link, host) = makeLink()
        link.connect()
        link.runUntilIdle()
        let uid = try #require(host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice"), at: link.now))
        link.run(until: link.now + .seconds(6 * 3600))
        #expect(link.isConnected)
        #expect(link.consumer.notifications[uid] != nil)
        let id = link.request { consumer, now in consumer.fetchAttributes([.init(.title)], for: uid, at: now) }
        link.runUntilIdle()
        #expect(completions(link)[id]?.error == nil)
    }

    @Test("a notification longer than MTU − 3 is cut by the link")
    func oversizedNotificationIsCut() {
        let link = SimulatedLink(configuration: .init(mtu: 23)) { input, _ in
            if case .subscription(.notificationSource, true) = input {
                return [.notify(.notificationSource, Array(repeating: 0, count: 8)), .notify(.dataSource, Array(repeating: 1, count: 40))]
            }
            return []
        }
        link.connect()
        link.runUntilIdle()
        #expect(link.counters.attBytesToConsumer >= 3 + 8 + 3 + 20)
        #expect(link.events.contains { if case .protocolError = $0.1 { true } else { false } })
    }
}
