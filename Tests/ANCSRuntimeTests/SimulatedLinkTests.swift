import ANCS
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import Testing

/// End to end: a ProviderServer and a ConsumerClient over the simulated BLE link.
@Suite struct SimulatedLinkTests {
    static let longMessage = String(repeating: "Ünïcödé 🚲 text, ", count: 40)

    @Test("the demo scenario shows every notification", arguments: [23, 185, 517])
    func demoScenario(mtu: Int) async {
        let run = DemoRun(link: .init(mtu: mtu, connectionInterval: .milliseconds(30)))
        run.runToEnd()
        #expect(run.summary.notifications == 12)
        #expect(run.summary.shown == 12)
        #expect(run.summary.failedRequests == 0)
        #expect(run.summary.unsettled == 0)
        #expect(run.summary.repeatedAppNameFetches == 0)
        #expect(run.summary.counters.connectionEvents > 0)
        // 12 shown; the answered call, the declined call, the mail and the cleared chat are gone.
        #expect(await run.consumer.notifications.count == 8)
    }

    @Test("the simulation is deterministic")
    func deterministic() {
        func summary() -> DemoRun.Summary {
            let run = DemoRun(link: .init(mtu: 23, connectionInterval: .milliseconds(15)))
            run.runToEnd()
            return run.summary
        }
        #expect(summary() == summary())
    }

    @Test("a smaller MTU needs more connection events and packets")
    func mtuCost() {
        func counters(_ mtu: Int) -> SimulatedLink.Counters {
            let run = DemoRun(link: .init(mtu: mtu, connectionInterval: .milliseconds(30)))
            run.runToEnd()
            return run.summary.counters
        }
        let small = counters(23), large = counters(247)
        #expect(small.packetsToConsumer > large.packetsToConsumer)
        #expect(small.notifications > large.notifications)
        #expect(small.connectionEvents >= large.connectionEvents)
    }

    @Test("on a slow link the demo runs until every notification is shown", arguments: [1000.0, 4000.0])
    func slowLink(interval: Double) {
        let run = DemoRun(link: .init(mtu: 185, connectionInterval: .milliseconds(interval)))
        run.runToEnd()
        #expect(run.isFinished)
        #expect(run.summary.unsettled == 0)
        #expect(run.summary.failedRequests == 0)
        // The mail may be removed on the phone before a slow link shows it.
        #expect(run.summary.shown >= 11)
        #expect(run.summary.simulated > .seconds(15), "a slow link takes longer than the timeline")
    }

    @Test("lazy fetching writes fewer commands than eager; pipelining shortens a burst at MTU 23")
    func policyAndDepth() {
        func summary(_ policy: DemoRun.FetchPolicy, depth: Int = 1) -> DemoRun.Summary {
            let run = DemoRun(link: .init(mtu: 23, connectionInterval: .milliseconds(100)), consumer: ConsumerConfiguration(pipeliningDepth: depth), policy: policy)
            run.runToEnd()
            return run.summary
        }
        let eager = summary(.eager), lazy = summary(.lazy), deep = summary(.eager, depth: 4)
        #expect(lazy.requests < eager.requests)
        #expect(lazy.counters.bytesOnAir < eager.counters.bytesOnAir)
        #expect(lazy.shown == 12)
        #expect(deep.requests == eager.requests)
        #expect(deep.readiness.maximumLatency < eager.readiness.maximumLatency)
    }

    @Test("a response is fragmented to MTU − 3 and reassembled", arguments: [23, 185, 517])
    func fragmentation(mtu: Int) throws {
        let rig = SimulationRig(mtu: mtu)
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Alice", message: Self.longMessage))
        let before = rig.link.counters.notifications
        let response = try #require(try rig.fetch(uid, [.init(.title, maxLength: 100), .init(.message, maxLength: 1000)])?.get())
        #expect(response[.title]?.string == "Alice")
        let message = Array(Self.longMessage.utf8.prefix(1000))
        #expect(response[.message]?.bytes == message)
        let responseLength = 5 + 3 + 5 + 3 + message.count
        let fragments = (responseLength + mtu - 4) / (mtu - 3)
        #expect(rig.link.counters.notifications - before == fragments)
    }

    @Test("an ATT error on the Control Point write fails that request with its typed error")
    func writeError() throws {
        let rig = SimulationRig()
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Hi"))
        for (code, expected) in [(ATTErrorCode.unknownCommand, ConsumerError.unknownCommand), (.invalidCommand, .invalidCommand),
                                 (.invalidParameter, .invalidParameter), (.actionFailed, .actionFailed), (.insufficientAuthentication, .att(.insufficientAuthentication))] {
            rig.link.failNextControlPointWrite(with: .attError(code))
            let failing = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.title)], for: uid) }
            let next = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.title, maxLength: 2)], for: uid) }
            rig.simulation.runUntilIdle()
            #expect(failing.error == expected)
            #expect(next.value?[.title]?.string == "Hi", "the request after the failed one")
        }
    }

    @Test("a write that is never answered times out; ATT's 30 s timeout drops the link; the next session works")
    func writeNeverAnswered() async throws {
        let rig = SimulationRig()
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Hi"))
        rig.link.neverAnswerNextControlPointWrite()
        let start = rig.now
        #expect(rig.fetch(uid) == .failure(.timedOut))
        #expect(rig.now - start >= .seconds(10))
        #expect(!rig.link.isConnected, "ATT transaction timeout drops the link")
        rig.connect()
        #expect(try rig.fetch(uid)?.get() != nil)
    }

    @Test("the link dropping in the middle of a response ends the session; the next session works")
    func linkDropMidResponse() async throws {
        for dropAfter in stride(from: 0, through: 1100, by: 37) {
            let rig = SimulationRig(mtu: 23)
            rig.connect()
            let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: Self.longMessage))
            rig.link.dropLink(afterBytes: dropAfter)
            let result = rig.fetch(uid, [.init(.message, maxLength: 600)])
            #expect(result != nil, "drop after \(dropAfter) bytes: request never ended")
            if !rig.link.isConnected {
                #expect(result == .failure(.sessionEnded))
                #expect(await rig.notifications().isEmpty)
                #expect(rig.consumerEvents.contains(.sessionEnded(.linkDown)))
                rig.connect()
                #expect(await rig.notifications()[uid]?.isPreExisting == true)
                #expect(try rig.fetch(uid, [.init(.title)])?.get() != nil, "drop after \(dropAfter): next session fetch failed")
            }
        }
    }

    @Test("ANCS unpublished in the middle of a fetch, then published again")
    func unpublishMidFetch() async throws {
        let rig = SimulationRig(mtu: 23)
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: Self.longMessage))
        let fetch = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.message, maxLength: 800)], for: uid) }
        rig.simulation.run(for: .milliseconds(60))
        #expect(fetch.outcome == nil, "the fetch should still be streaming")
        rig.link.unpublishANCS()
        rig.simulation.runUntilIdle()
        #expect(fetch.error == .sessionEnded)
        #expect(await rig.notifications().isEmpty)
        rig.link.publishANCS()
        rig.simulation.runUntilIdle()
        #expect(await rig.notifications()[uid]?.isPreExisting == true)
        let again = try #require(try rig.fetch(uid, [.init(.message, maxLength: 800)])?.get())
        #expect(again[.message]?.count == 800)
    }

    @Test("ANCS removed by Service Changed, then the link drops: the next link starts a session",
          arguments: [Duration.milliseconds(30), .milliseconds(1000)])
    func unpublishedThenReconnected(interval: Duration) async throws {
        let rig = SimulationRig(interval: interval)
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice"))
        rig.link.unpublishANCS()
        rig.simulation.runUntilIdle()
        #expect(rig.consumerEvents.contains(.sessionEnded(.serviceUnpublished)))
        rig.link.disconnect()
        rig.simulation.runUntilIdle()
        rig.link.publishANCS()
        rig.connect()
        #expect(await rig.consumer.isInSession, "the new link never subscribed")
        #expect(await rig.notifications()[uid]?.isPreExisting == true)
        let next = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Bob"))
        #expect(await rig.notifications()[next] != nil)
        #expect(try rig.fetch(next, [.init(.title, maxLength: 16)])?.get()[.title]?.string == "Bob")
    }

    @Test("a link made while ANCS is absent subscribes once Service Changed brings it back")
    func absentAtConnection() async throws {
        let rig = SimulationRig()
        rig.link.unpublishANCS()
        rig.connect()
        #expect(await !rig.consumer.isInSession)
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice"))
        rig.link.publishANCS()
        rig.simulation.runUntilIdle()
        #expect(await rig.consumer.isInSession)
        #expect(await rig.notifications()[uid]?.isPreExisting == true)
    }

    @Test("after ANCS is unpublished with a write in flight, the next session writes at once")
    func unpublishWithWriteInFlight() async throws {
        let rig = SimulationRig(mtu: 185)
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice"))
        // A slow phone: the write is still unanswered when ANCS goes away.
        rig.link.serverDelay = .milliseconds(300)
        let stuck = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.title)], for: uid) }
        rig.simulation.run(for: .milliseconds(100))
        #expect(stuck.outcome == nil)
        rig.link.unpublishANCS()
        rig.simulation.run(for: .milliseconds(10))
        #expect(stuck.error == .sessionEnded)
        rig.link.serverDelay = .zero
        rig.link.publishANCS()
        rig.simulation.run(for: .milliseconds(600))
        #expect(await rig.consumer.isInSession)
        let start = rig.now
        let next = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.title)], for: uid) }
        rig.simulation.run(for: .seconds(1))
        // The engine does not wait out the request timeout (10 s) for the old write.
        #expect(next.value?[.title]?.string == "Alice", "the next session's fetch did not complete promptly: \(String(describing: next.outcome))")
        #expect(rig.now - start <= .seconds(1))
    }

    @Test("a long silence on Notification Source changes nothing")
    func longSilence() async throws {
        let rig = SimulationRig()
        rig.connect()
        let uid = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice"))
        rig.simulation.run(for: .seconds(6 * 3600))
        #expect(rig.link.isConnected)
        #expect(await rig.notifications()[uid] != nil)
        #expect(try rig.fetch(uid)?.get() != nil)
    }

    @Test("a notification longer than MTU − 3 is cut by the link")
    func oversizedNotificationIsCut() throws {
        let rig = SimulationRig(mtu: 23)
        rig.connect()
        let server = rig.server, connection = rig.link.connection
        let before = rig.link.counters
        let sent = rig.simulation.spawn { try await server.notify(connection, .dataSource, Array(repeating: 1, count: 40)) }
        rig.simulation.runUntilIdle()
        try rig.unwrap(sent)
        // One Handle Value Notification: a 3-byte ATT header and MTU − 3 = 20 bytes of the 40.
        #expect(rig.link.counters.notifications - before.notifications == 1)
        #expect(rig.link.counters.attBytesToConsumer - before.attBytesToConsumer == 3 + 20)
        #expect(rig.consumerEvents.filter(\.isProtocolError).count == 1)
    }

    @Test("a notification for a consumer that did not subscribe, or is gone, is refused")
    func notifyRefused() throws {
        let rig = SimulationRig()
        let server = rig.server, connection = rig.link.connection
        let notConnected = rig.simulation.spawn { try await server.notify(connection, .notificationSource, [0, 0, 0, 1, 1, 0, 0, 0]) }
        rig.simulation.runUntilIdle()
        #expect(throws: TransportError.self) { try rig.unwrap(notConnected) }
    }

    @Test("a consumer's stack that dies ends run() with its error; the phone's likewise")
    func stackDies() {
        let rig = SimulationRig()
        rig.connect()
        rig.link.failClient(TransportError(.stackEnded, "the host process exited"))
        rig.simulation.runUntilIdle()
        guard case .failure(let error as TransportError)? = rig.consumerRunEnded else {
            Issue.record("run() did not throw the transport's error: \(String(describing: rig.consumerRunEnded))")
            return
        }
        #expect(error.message == "the host process exited")
        #expect(rig.consumerEvents.last == .sessionEnded(.linkDown))
        rig.server.fail(TransportError(.stackEnded, "the phone's stack died"))
        rig.simulation.runUntilIdle()
        guard case .failure(let serverError as TransportError)? = rig.providerRunEnded else {
            Issue.record("the provider's run() did not throw: \(String(describing: rig.providerRunEnded))")
            return
        }
        #expect(serverError.message == "the phone's stack died")
    }

    @Test("the display policy tells ready once attributes and app name are in, and never fetches an app name twice")
    func displayReady() async throws {
        let rig = SimulationRig(display: .standard)
        rig.connect()
        let first = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, flags: [.negativeAction],
                                                     title: "Alice", message: "On my way", negativeActionLabel: "Clear"))
        let second = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Bob", message: "Hi"))
        let ready = rig.events.compactMap { if case .ready(let shown) = $0 { shown } else { nil } }
        #expect(ready.map(\.uid) == [first, second])
        #expect(ready.first?.appName == "Messages")
        #expect(ready.first?.title == "Alice")
        #expect(ready.first?.label(of: .negative) == "Clear")
        #expect(ready.first?.label(of: .positive) == nil)
        let appFetches = rig.consumerEvents.filter { if case .appAttributes = $0 { true } else { false } }
        #expect(appFetches.count == 1)
        // An unknown app: shown with its identifier.
        let unknown = try rig.add(ProviderNotification(appIdentifier: "com.example.unknown", title: "?"))
        let shown = rig.events.compactMap { if case .ready(let shown) = $0, shown.uid == unknown { shown } else { nil } }
        #expect(shown.first?.appName == nil)
        #expect(shown.first?.appLabel == "com.example.unknown")
        // Removed before its fetch: neither ready nor failed.
        let provider = rig.provider
        rig.simulation.spawn {
            let uid = try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "gone"))
            try await provider.remove(uid)
        }
        rig.simulation.runUntilIdle()
        #expect(!rig.events.contains { if case .displayFailed = $0 { true } else { false } })
    }

    @Test("a notification removed before its display fetch is written is never fetched")
    func removedBeforeFetch() throws {
        let rig = SimulationRig(mtu: 23, interval: .milliseconds(100), display: .standard)
        rig.connect()
        let provider = rig.provider
        // A burst: the fetches queue behind one another on the slow link.
        let added = Box<[NotificationUID]>()
        rig.simulation.spawn {
            var uids: [NotificationUID] = []
            for index in 0..<4 {
                uids.append(try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "n\(index)", message: String(repeating: "x", count: 200))))
            }
            added.value = uids
        }
        rig.simulation.run(for: .milliseconds(250))
        let uids = try #require(added.value)
        #expect(rig.providerEvents.isEmpty || !rig.providerEvents.contains { if case .notificationAttributesSent(_, let r) = $0 { r.notificationUID == uids[3] } else { false } },
                "the last fetch must still be queued when the notification is removed")
        rig.remove(uids[3])
        let fetched = rig.providerEvents.compactMap { event -> NotificationUID? in
            if case .notificationAttributesSent(_, let request) = event { return request.notificationUID }
            return nil
        }
        #expect(!fetched.contains(uids[3]))
        // Three notifications' attributes and one app name: nothing written for the removed one.
        #expect(rig.link.counters.writes == 4)
        let ready = rig.events.compactMap { if case .ready(let shown) = $0 { shown.uid } else { nil } }
        #expect(ready == Array(uids.prefix(3)))
        #expect(!rig.events.contains { if case .displayFailed = $0 { true } else { false } })
    }

    @Test("withRunning returns the body's result and leaves the phone cleanly; a dying stack ends it with the error")
    func withRunning() throws {
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server)
        let provider = ProviderServer(transport: server)
        let phoneEvents = Box<[ProviderEvent]>()
        phoneEvents.value = []
        simulation.spawn { try await provider.run() }
        simulation.spawn { for await event in provider.events { phoneEvents.value?.append(event) } }
        simulation.spawn {
            await provider.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages")
            try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Alice", message: "Hi"))
        }
        link.connect()
        let shown = Box<String>()
        simulation.spawn {
            shown.value = try await ConsumerClient.withRunning(transport: link.client, configuration: .displaying(.standard),
                                                               clock: simulation.clock, executor: simulation.executor) { client in
                for await event in client.events {
                    if case .ready(let notification) = event { return "\(notification.appLabel): \(notification.title ?? "")" }
                }
                return "no notification"
            }
        }
        simulation.runUntilIdle()
        #expect(shown.value == "Messages: Alice")
        // Leaving unsubscribed from Notification Source: the phone's session ended, the link is still up.
        #expect(phoneEvents.value?.contains { if case .sessionEnded = $0 { true } else { false } } == true)
        #expect(link.isConnected)

        // A second accessory: its stack dies while the body waits.
        let second = SimulatedLink(in: simulation, to: server)
        second.connect()
        let outcome = Box<Result<String, any Error>>()
        simulation.spawn {
            do {
                let value = try await ConsumerClient.withRunning(transport: second.client, clock: simulation.clock, executor: simulation.executor) { client in
                    try await simulation.clock.sleep(for: .seconds(3600))
                    return "slept"
                }
                outcome.value = .success(value)
            } catch {
                outcome.value = .failure(error)
            }
        }
        simulation.run(for: .seconds(1))
        second.failClient(TransportError(.stackEnded, "the host process exited"))
        simulation.runUntilIdle()
        guard case .failure(let error as TransportError)? = outcome.value else {
            Issue.record("withRunning did not throw the transport's error: \(String(describing: outcome.value))")
            return
        }
        #expect(error.message == "the host process exited")
        #expect(simulation.now < .zero + .seconds(60), "the body was cancelled, not waited for")
    }
}
