import ANCS
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import Testing

/// The faults of real iPhones (docs/REAL-IPHONE.md, "When notifications stop") against a
/// `ConsumerClient` with its liveness checks on (the defaults: a probe every
/// 5 minutes, a silence limit of 6 hours, a retry every 15 seconds), on the
/// simulated phone and link, fast and slow (1 s connection interval). After
/// each fault the consumer recovers by itself and shows the next
/// notification; hours pass on the virtual clock in milliseconds.
@Suite struct LivenessRuntimeTests {
    static let intervals: [Duration] = [.milliseconds(30), .milliseconds(1000)]
    /// One probe interval, and what a probe and a subscription take on the slow link.
    static let probeInterval = ConsumerConfiguration.default.probeInterval
    static let roundTrips: Duration = .seconds(20)

    static func note(_ title: String) -> ProviderNotification {
        ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: title)
    }

    static func healthEvents(_ rig: SimulationRig) -> [ConsumerHealth] {
        rig.consumerEvents.compactMap { if case .health(let state) = $0 { state } else { nil } }
    }

    /// Connects and lets the session start (and its first probe be answered).
    static func connected(interval: Duration) -> SimulationRig {
        let rig = SimulationRig(interval: interval, liveness: true)
        rig.link.connect()
        rig.simulation.run(for: roundTrips)
        return rig
    }

    /// Adds a notification on the phone without waiting for the link to be quiet.
    static func add(_ title: String, to rig: SimulationRig) -> Task<NotificationUID, any Error> {
        let provider = rig.provider
        return rig.simulation.spawn { try await provider.add(note(title)) }
    }

    /// Runs until `task` has finished (not until the link is idle: with the
    /// probe's timer running it never is), and returns its value.
    static func value<T: Sendable>(of rig: SimulationRig, _ task: Task<T, any Error>) throws -> T {
        let done = Box<Result<T, any Error>>()
        rig.simulation.spawn { done.value = await task.result }
        rig.simulation.run(while: { done.value == nil }, limit: .seconds(60))
        guard let outcome = done.value else { throw SimulationRigError("the task did not finish") }
        return try outcome.get()
    }

    /// Runs until `uid` is in the consumer's model, at most `limit`; returns how long it took.
    static func time(until uid: NotificationUID, in rig: SimulationRig, limit: Duration) async -> Duration? {
        let start = rig.simulation.now
        let consumer = rig.consumer
        let found = Box<Bool>()
        while rig.simulation.now - start < limit {
            rig.simulation.run(for: .seconds(1))
            rig.simulation.spawn { found.value = await consumer.notifications[uid] != nil }
            rig.simulation.run(for: .zero)
            if found.value == true { return rig.simulation.now - start }
        }
        return nil
    }

    @Test("a quiet, healthy session: one probe per interval, answered; nothing else changes", arguments: intervals)
    func quiet(interval: Duration) async throws {
        let rig = Self.connected(interval: interval)
        let writes = rig.link.counters.writes
        rig.simulation.run(for: Self.probeInterval * 4 + .seconds(60))
        #expect(rig.link.counters.writes - writes == 4)
        #expect(Self.healthEvents(rig).isEmpty)
        #expect(!rig.consumerEvents.contains { if case .added = $0 { true } else { false } })
        #expect(await rig.consumer.isInSession)
        #expect(!rig.consumerEvents.contains { if case .sessionEnded = $0 { true } else { false } })
    }

    @Test("subscriptions forgotten in silence, or ANCS restarted without Service Changed: the next probe finds it, the consumer subscribes again, and the notification shows within a probe interval",
          arguments: intervals)
    func forgotten(interval: Duration) async throws {
        for silentRestart in [false, true] {
            let rig = Self.connected(interval: interval)
            if silentRestart {
                rig.link.unpublishANCS(serviceChanged: false)
                rig.link.publishANCS(serviceChanged: false)
            } else {
                let provider = rig.provider
                rig.simulation.spawn { await provider.forgetSubscriptions() }
            }
            rig.simulation.run(for: .seconds(1))
            let lost = try Self.value(of: rig, Self.add("Lost", to: rig))
            let took = await Self.time(until: lost, in: rig, limit: Self.probeInterval + Self.roundTrips)
            #expect(took != nil, "restart: \(silentRestart)")
            let health = Self.healthEvents(rig)
            #expect(health.first.map { if case .resubscribing = $0 { true } else { false } } == true, "\(health)")
            #expect(health.last == .healthy, "\(health)")
            // And the next one shows at once.
            let next = try Self.value(of: rig, Self.add("Next", to: rig))
            #expect(await Self.time(until: next, in: rig, limit: Self.roundTrips) != nil)
        }
    }

    @Test("sharing off when the accessory connects: 'not shared' within two retries, told once, nothing fetched; sharing on: what the phone holds shows within the backed-off retry (16 × the retry interval), and the consumer is healthy",
          arguments: intervals)
    func sharing(interval: Duration) async throws {
        let rig = SimulationRig(interval: interval, liveness: true)
        let provider = rig.provider
        rig.simulation.spawn { await provider.setSharing(false) }
        let held = try Self.value(of: rig, Self.add("Held", to: rig))
        rig.link.connect()
        rig.simulation.run(for: .seconds(45))
        #expect(Self.healthEvents(rig) == [.notShared])
        #expect(await rig.notifications().isEmpty)
        rig.simulation.run(for: .seconds(600))
        #expect(Self.healthEvents(rig) == [.notShared], "told once, however long it lasts")
        rig.simulation.spawn { await provider.setSharing(true) }
        // Nothing announced: the probe finds it, backed off to 16 × 15 s after ten minutes refused.
        let took = await Self.time(until: held, in: rig, limit: .seconds(240) + Self.roundTrips)
        #expect(took != nil)
        #expect(await rig.notifications()[held]?.isPreExisting == true)
        rig.simulation.run(for: Self.roundTrips)
        #expect(Self.healthEvents(rig).last == .healthy)
        let next = try Self.value(of: rig, Self.add("Next", to: rig))
        #expect(await Self.time(until: next, in: rig, limit: Self.roundTrips) != nil)
    }

    @Test("the phone forgot the bond: the host says so as the link drops, the consumer tells 'bond lost' once; paired again, what the phone holds shows and the consumer is healthy",
          arguments: intervals)
    func bondForgotten(interval: Duration) async throws {
        let rig = Self.connected(interval: interval)
        rig.link.disconnect()
        rig.link.reportBondLost()
        rig.simulation.run(for: .seconds(1))
        #expect(Self.healthEvents(rig) == [.bondLost])
        // Posted while the person pairs again: announced as PreExisting on the new link.
        let held = try Self.value(of: rig, Self.add("Held", to: rig))
        rig.simulation.run(for: .seconds(600))
        #expect(Self.healthEvents(rig) == [.bondLost], "told once, however long it lasts")
        rig.link.connect()
        let took = await Self.time(until: held, in: rig, limit: Self.roundTrips)
        #expect(took != nil)
        #expect(await rig.notifications()[held]?.isPreExisting == true)
        #expect(Self.healthEvents(rig) == [.bondLost, .healthy])
        let next = try Self.value(of: rig, Self.add("Next", to: rig))
        #expect(await Self.time(until: next, in: rig, limit: Self.roundTrips) != nil)
    }

    @Test("sharing turned on while the accessory is connected and not shared, between two backed-off retries: the notification's announcement brings the probe within a retry interval, and it is shown",
          arguments: intervals)
    func sharingTurnedOnLater(interval: Duration) async throws {
        let rig = SimulationRig(interval: interval, liveness: true)
        let provider = rig.provider
        rig.simulation.spawn { await provider.setSharing(false) }
        rig.link.connect()
        rig.simulation.run(for: .seconds(100))
        #expect(Self.healthEvents(rig) == [.notShared])
        // Turned on, and a notification comes, before the next retry.
        rig.simulation.spawn { await provider.setSharing(true) }
        let first = try Self.value(of: rig, Self.add("First", to: rig))
        let took = await Self.time(until: first, in: rig, limit: .seconds(15) + Self.roundTrips)
        #expect(took != nil)
        rig.simulation.run(for: Self.roundTrips)
        #expect(await rig.consumer.health == .healthy)
    }

    @Test("Notification Source quiet while the Control Point answers every probe: the refresh after the next interval's probe subscribes to it again, the phone announces what it holds, one newer than every announcement starts a new session; what came meanwhile shows within a probe interval, and so does the next notification",
          arguments: intervals)
    func quietNotificationSource(interval: Duration) async throws {
        let rig = Self.connected(interval: interval)
        let provider = rig.provider
        rig.simulation.spawn { await provider.setNotificationSourceQuiet(true) }
        let unheard = try Self.value(of: rig, Self.add("Unheard", to: rig))
        #expect(await rig.notifications()[unheard] == nil)
        let took = await Self.time(until: unheard, in: rig, limit: Self.probeInterval + .seconds(60) + Self.roundTrips)
        #expect(took != nil)
        #expect(Self.healthEvents(rig).first == .resubscribing(.missedNotification))
        let next = try Self.value(of: rig, Self.add("Next", to: rig))
        #expect(await Self.time(until: next, in: rig, limit: Self.roundTrips) != nil)
        #expect(await rig.consumer.health == .healthy)
    }

    /// Runs until `uid` was told `.ready`, at most `limit`; returns how long it took.
    static func time(untilReady uid: NotificationUID, in rig: SimulationRig, limit: Duration) -> Duration? {
        let start = rig.simulation.now
        func shown() -> Bool { rig.events.contains { if case .ready(let shown) = $0 { shown.uid == uid } else { false } } }
        while rig.simulation.now - start < limit {
            rig.simulation.run(for: .seconds(1))
            if shown() { return rig.simulation.now - start }
        }
        return nil
    }

    /// A rig showing notifications (the standard display policy), connected, its session's first probe answered.
    static func showing(interval: Duration) -> SimulationRig {
        let rig = SimulationRig(interval: interval, liveness: true, display: .standard)
        rig.link.connect()
        rig.simulation.run(for: roundTrips)
        return rig
    }

    @Test("Notification Source lost in silence (Data Source kept), and the next notification cleared on the phone a minute later: the probe's UID answers 0xA2, the refresh after it hears the phone announce a later one, and that one is shown within the bound; both counts of CCCD writes stay at a refresh per probe",
          arguments: intervals)
    func notificationSourceLostAndCleared(interval: Duration) async throws {
        let rig = Self.showing(interval: interval)
        let provider = rig.provider
        let before = try Self.value(of: rig, Self.add("Before", to: rig))
        #expect(Self.time(untilReady: before, in: rig, limit: Self.roundTrips) != nil)
        rig.simulation.spawn { await provider.loseSubscription(.notificationSource) }
        rig.simulation.run(for: .seconds(1))
        let cleared = try Self.value(of: rig, Self.add("Cleared", to: rig))
        rig.simulation.run(for: .seconds(60))
        rig.simulation.spawn { try? await provider.remove(cleared) }
        rig.simulation.run(for: .seconds(60))
        let kept = try Self.value(of: rig, Self.add("Kept", to: rig))
        let took = Self.time(untilReady: kept, in: rig, limit: FieldLife.bound)
        #expect(took != nil)
        #expect(Self.healthEvents(rig).first == .resubscribing(.missedNotification), "\(Self.healthEvents(rig))")
        #expect(!rig.events.contains { if case .ready(let shown) = $0 { shown.uid == cleared } else { false } })
        let next = try Self.value(of: rig, Self.add("Next", to: rig))
        #expect(Self.time(untilReady: next, in: rig, limit: Self.roundTrips) != nil)
        #expect(await rig.consumer.health == .healthy)
    }

    @Test("Data Source lost in silence (Notification Source kept) while notifications keep coming: the first fetch's timeout asks again, unanswered again the consumer subscribes again; shown within 2 × the request timeout and a round trip, one resubscription",
          arguments: intervals)
    func dataSourceLostAlone(interval: Duration) async throws {
        let rig = Self.showing(interval: interval)
        let provider = rig.provider
        rig.simulation.spawn { await provider.loseSubscription(.dataSource) }
        rig.simulation.run(for: .seconds(1))
        let first = try Self.value(of: rig, Self.add("First", to: rig))
        let took = Self.time(untilReady: first, in: rig, limit: ConsumerConfiguration.default.requestTimeout * 2 + Self.roundTrips)
        #expect(took != nil)
        #expect(Self.healthEvents(rig) == [.resubscribing(.probeUnanswered), .healthy], "\(Self.healthEvents(rig))")
        // Notifications keep coming: each shown at once.
        for title in ["Second", "Third"] {
            rig.simulation.run(for: .seconds(120))
            let next = try Self.value(of: rig, Self.add(title, to: rig))
            #expect(Self.time(untilReady: next, in: rig, limit: Self.roundTrips) != nil)
        }
        #expect(Self.healthEvents(rig).count == 2)
    }
}
