import ANCS
import ANCSRuntime
import ANCSSimulation
import Foundation

/// A month of an accessory's field life on the virtual clock: a
/// `ConsumerClient` showing notifications (`DisplayPolicy.standard`) with
/// its default liveness checks, against the simulated iPhone
/// (`ProviderServer`) on a `SimulatedLink`, living as people and phones do:
///
/// - notifications come about every 10 minutes by day (07:00–23:00) and
///   once an hour at night;
/// - the person clears a quarter of them on the phone 20 s to 5 min after
///   they arrive (a message read on the phone); the others stay from ten
///   minutes to a day;
/// - faults come at random (seeded): both subscriptions forgotten in
///   silence, Notification Source lost alone, Data Source lost alone
///   (writes still taken, no response delivered), Notification Source
///   quiet, sharing turned off and on, ANCS restarted with and without
///   Service Changed, link drops, the bond forgotten ("Forget This Device":
///   the link drops, the host tells the consumer `bondLost`, and the phone
///   shares nothing until the person pairs it again), and a slow phone
///   whose Data Source answers come 10–12 s late, just past the request
///   timeout, for ten minutes to two hours.
///
/// It measures what the person gets, per notification, with the time the
/// phone did not share, the link was down or the bond lost left out: the
/// share that reached `.ready` while on the phone, the wait from post to
/// ready (p99 and longest), and the longest time a notification waited
/// undelivered while the consumer said `healthy`. And what it costs: the
/// resubscriptions per fault, and the writes of a healthy idle hour. Used
/// by `ancs bench --field-days` and the field-life tests.
public final class FieldLife: @unchecked Sendable {
    public enum Fault: String, CaseIterable, Sendable {
        case subscriptionsForgotten, notificationSourceLost, dataSourceLost, notificationSourceQuiet, sharingOff
        case ancsRestarted, ancsRestartedSilently, linkDrop, bondForgotten, slowPhone
    }

    public struct Report: Sendable {
        public var days: Int
        public var seed: UInt64
        /// Notifications that were on the phone while it shared and the link was up.
        public var posted = 0
        /// Of those, the ones told `.ready` while they were on the phone.
        public var delivered = 0
        /// Cleared on the phone within five minutes of their post.
        public var clearedSoon = 0
        /// Notifications on the phone longer than `FieldLife.bound` (time
        /// without sharing, link or bond left out), and of those the ones
        /// shown: every one of them must be. (One cleared sooner may be gone
        /// before a lost subscription can be found: the share above.)
        public var lasting = 0
        public var lastingDelivered = 0
        /// From post to `.ready` (time without sharing, link or bond left
        /// out); for one never shown, how long it was on the phone.
        public var p99Wait: Duration = .zero
        public var longestWait: Duration = .zero
        /// The longest a notification waited undelivered while the consumer told `healthy`.
        public var longestHealthyUndelivered: Duration = .zero
        public var faults: [Fault: Int] = [:]
        /// Times the consumer subscribed again, and the health states it told.
        public var resubscriptions = 0
        public var healthEvents = 0
        /// Times the consumer told `bondLost`.
        public var bondsLost = 0
        public var bytesOnAir = 0
        /// A healthy idle hour (three notifications held): Control Point
        /// writes, CCCD writes, and air bytes and connection events over
        /// the same hour without liveness.
        public var idleHour = IdleHour()

        public var deliveredShare: Double { posted == 0 ? 1 : Double(delivered) / Double(posted) }
        public var faultCount: Int { faults.values.reduce(0, +) }
        public var resubscriptionsPerFault: Double { faultCount == 0 ? 0 : Double(resubscriptions) / Double(faultCount) }
    }

    public struct IdleHour: Sendable, Hashable {
        public var controlPointWrites = 0
        public var cccdWrites = 0
        public var extraBytesOnAir = 0
        public var extraConnectionEvents = 0
    }

    /// What the bound allows between a post and `.ready`:
    /// `probeInterval + retryInterval + 2 × requestTimeout + 60 s`.
    public static var bound: Duration {
        let configuration = ConsumerConfiguration.default
        return configuration.probeInterval + configuration.retryInterval + configuration.requestTimeout * 2 + .seconds(60)
    }

    let days: Int
    let seed: UInt64
    let faultsPerDay: Double

    public init(days: Int = 30, seed: UInt64 = 1, faultsPerDay: Double = 2) {
        self.days = days
        self.seed = seed
        self.faultsPerDay = faultsPerDay
    }

    /// A small seeded generator (SplitMix64): the same seed, the same month.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        /// Uniform in [0, 1).
        mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
        /// Uniform in [low, high) seconds.
        mutating func seconds(_ low: Double, _ high: Double) -> Duration { .milliseconds(Int64((low + (high - low) * unit()) * 1000)) }
        /// Exponentially distributed, with this mean in seconds.
        mutating func exponential(mean: Double) -> Duration {
            .milliseconds(Int64(-mean * log(1 - unit()) * 1000))
        }
    }

    enum Step {
        case post(Duration)  // a notification, on the phone for this long
        case remove(Int)  // the n-th posted
        case fault(Fault, Duration)
        case endFault(Fault)
    }

    final class Record: @unchecked Sendable {
        var posted: [(uid: NotificationUID?, at: Timestamp, until: Timestamp)] = []
        var ready: [NotificationUID: Timestamp] = [:]
        /// When the consumer's health changed, and whether it was then `healthy`.
        var healthy: [(Timestamp, Bool)] = []
        var resubscriptions = 0
        var healthEvents = 0
        var bondsLost = 0
    }

    /// Stretches of time as sorted, disjoint [start, end) intervals.
    struct Stretches {
        var intervals: [(Timestamp, Timestamp)] = []
        /// How much of [from, to) they cover.
        func overlap(_ from: Timestamp, _ to: Timestamp) -> Duration {
            var total = Duration.zero
            for (start, end) in intervals where end > from && start < to {
                total += min(end, to) - max(start, from)
            }
            return total
        }
    }

    public func run() -> Report {
        var generator = Generator(state: seed)
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 185, connectionInterval: .milliseconds(30)))
        let provider = ProviderServer(transport: server)
        let consumer = ConsumerClient(transport: link.client, configuration: .displaying(.standard),
                                      clock: simulation.clock, executor: simulation.executor)
        let record = Record()
        simulation.spawn { try await provider.run() }
        simulation.spawn { try await consumer.run() }
        simulation.spawn {
            for await event in consumer.events {
                switch event {
                case .ready(let shown):
                    if record.ready[shown.uid] == nil { record.ready[shown.uid] = simulation.now }
                case .health(let state):
                    record.healthEvents += 1
                    record.healthy.append((simulation.now, state == .healthy))
                    if case .resubscribing = state { record.resubscriptions += 1 }
                    if case .bondLost = state { record.bondsLost += 1 }
                default:
                    break
                }
            }
        }
        simulation.spawn { await provider.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages") }
        link.connect()
        simulation.run(for: .seconds(10))

        // The month's timeline, drawn up front.
        let start = simulation.now
        let end = start + .seconds(Int64(days) * 86_400)
        var timeline: [(Timestamp, Int, Step)] = []  // (time, order, step)
        var order = 0
        func schedule(_ time: Timestamp, _ step: Step) {
            guard time < end else { return }
            timeline.append((time, order, step))
            order += 1
        }
        var report = Report(days: days, seed: seed)
        var time = start
        var posts = 0
        while true {
            // The clock starts at midnight: by day one every 10 minutes, at night one an hour.
            let hour = (time - start).components.seconds % 86_400 / 3600
            time = time + generator.exponential(mean: (7..<23).contains(hour) ? 600 : 3600)
            guard time < end else { break }
            let clearedSoon = generator.unit() < 0.25
            let stays = clearedSoon ? generator.seconds(20, 300) : generator.seconds(600, 86_400)
            if clearedSoon { report.clearedSoon += 1 }
            schedule(time, .post(stays))
            schedule(time + stays, .remove(posts))
            posts += 1
        }
        time = start
        // A fault of a kind still going on is not injected again (one
        // switch per kind on the phone: a second would end the first).
        var busyUntil: [Fault: Timestamp] = [:]
        while true {
            time = time + generator.exponential(mean: 86_400 / faultsPerDay)
            guard time < end else { break }
            let fault = Fault.allCases[Int(generator.next() % UInt64(Fault.allCases.count))]
            let length: Duration
            switch fault {
            // Lost until the consumer subscribes again (as the simulated phone does).
            case .notificationSourceQuiet, .subscriptionsForgotten, .notificationSourceLost, .dataSourceLost: length = .zero
            case .sharingOff, .bondForgotten, .slowPhone: length = generator.seconds(600, 2 * 3600)
            case .linkDrop: length = generator.seconds(5, 600)
            case .ancsRestarted, .ancsRestartedSilently: length = generator.seconds(1, 30)
            }
            if let busy = busyUntil[fault], time < busy { continue }
            busyUntil[fault] = time + length
            schedule(time, .fault(fault, length))
            if length > .zero { schedule(time + length, .endFault(fault)) }
            report.faults[fault, default: 0] += 1
        }
        timeline.sort { ($0.0, $0.1) < ($1.0, $1.1) }

        // The phone shares while sharing is on and it holds the bond; the
        // link is up unless dropped or waiting for the person to pair again.
        // Time otherwise is an outage: no notification can reach the accessory.
        var sharingOff = false, bondForgotten = false, dropped = false
        var outages = Stretches()
        var outageSince: Timestamp?
        func noteOutage(_ at: Timestamp) {
            let out = sharingOff || bondForgotten || dropped
            if out, outageSince == nil { outageSince = at }
            if !out, let since = outageSince {
                outages.intervals.append((since, at))
                outageSince = nil
            }
        }
        for (at, _, step) in timeline {
            simulation.run(until: at)
            switch step {
            case .post(let stays):
                let task = simulation.spawn { try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Field", message: "A message")) }
                let index = record.posted.count
                record.posted.append((nil, at, at + stays))
                simulation.spawn {
                    if let uid = try? await task.value { record.posted[index].uid = uid }
                }
                simulation.run(for: .zero)
            case .remove(let index):
                guard let uid = record.posted[index].uid else { continue }
                simulation.spawn { try? await provider.remove(uid) }
            case .fault(let fault, _):
                switch fault {
                case .subscriptionsForgotten: simulation.spawn { await provider.forgetSubscriptions() }
                case .notificationSourceLost: simulation.spawn { await provider.loseSubscription(.notificationSource) }
                case .dataSourceLost: simulation.spawn { await provider.loseSubscription(.dataSource) }
                case .notificationSourceQuiet: simulation.spawn { await provider.setNotificationSourceQuiet(true) }
                case .sharingOff:
                    sharingOff = true
                    simulation.spawn { await provider.setSharing(false) }
                case .ancsRestarted: link.unpublishANCS(serviceChanged: true)
                case .ancsRestartedSilently: link.unpublishANCS(serviceChanged: false)
                case .linkDrop:
                    dropped = true
                    link.disconnect()
                case .bondForgotten:
                    bondForgotten = true
                    link.disconnect()
                    link.reportBondLost()
                case .slowPhone: link.dataSourceDelay = generator.seconds(10, 12)
                }
            case .endFault(let fault):
                switch fault {
                case .sharingOff:
                    sharingOff = false
                    simulation.spawn { await provider.setSharing(true) }
                case .ancsRestarted: link.publishANCS(serviceChanged: true)
                case .ancsRestartedSilently: link.publishANCS(serviceChanged: false)
                case .linkDrop:
                    dropped = false
                    if !bondForgotten { link.connect() }
                case .bondForgotten:  // paired again
                    bondForgotten = false
                    if !dropped { link.connect() }
                case .slowPhone: link.dataSourceDelay = .zero
                case .subscriptionsForgotten, .notificationSourceLost, .dataSourceLost, .notificationSourceQuiet: break
                }
            }
            noteOutage(at)
        }
        simulation.run(until: end)
        if let since = outageSince { outages.intervals.append((since, end)) }
        report.bytesOnAir = link.counters.bytesOnAir
        report.resubscriptions = record.resubscriptions
        report.healthEvents = record.healthEvents
        report.bondsLost = record.bondsLost

        // Healthy stretches: from each change to healthy until the next change.
        var healthy = Stretches()
        var healthySince: Timestamp? = start
        for (at, isHealthy) in record.healthy {
            if isHealthy, healthySince == nil { healthySince = at }
            if !isHealthy, let since = healthySince {
                healthy.intervals.append((since, at))
                healthySince = nil
            }
        }
        if let since = healthySince { healthy.intervals.append((since, end)) }

        var waits: [Duration] = []
        for posted in record.posted {
            let leaves = min(posted.until, end)
            let onPhone = leaves - posted.at - outages.overlap(posted.at, leaves)
            guard onPhone > .zero else { continue }  // never on the phone while it could reach the accessory
            report.posted += 1
            let shown = posted.uid.flatMap { record.ready[$0] }.flatMap { $0 <= leaves && $0 >= posted.at ? $0 : nil }
            let until = shown ?? leaves
            if shown != nil { report.delivered += 1 }
            if onPhone > Self.bound {
                report.lasting += 1
                if shown != nil { report.lastingDelivered += 1 }
            }
            let wait = until - posted.at - outages.overlap(posted.at, until)
            waits.append(wait)
            // Undelivered while told healthy (outages left out: health says bondLost or notShared then, or the link is down).
            var healthyWait = healthy.overlap(posted.at, until)
            for (outStart, outEnd) in outages.intervals where outEnd > posted.at && outStart < until {
                healthyWait -= healthy.overlap(max(outStart, posted.at), min(outEnd, until))
            }
            report.longestHealthyUndelivered = max(report.longestHealthyUndelivered, healthyWait)
        }
        waits.sort()
        report.longestWait = waits.last ?? .zero
        if !waits.isEmpty { report.p99Wait = waits[min(waits.count - 1, waits.count * 99 / 100)] }
        report.idleHour = Self.idleHour()
        return report
    }

    /// A healthy idle hour with three notifications held, with liveness and
    /// without: the writes liveness makes, and what it costs on the air.
    static func idleHour() -> IdleHour {
        func hour(liveness: Bool) -> SimulatedLink.Counters {
            let simulation = Simulation()
            let server = SimulatedServer()
            let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 185, connectionInterval: .milliseconds(30)))
            let provider = ProviderServer(transport: server)
            var configuration = ConsumerConfiguration.default
            if !liveness {
                configuration.probeInterval = .zero
                configuration.silenceLimit = .zero
            }
            configuration.display = .standard
            let consumer = ConsumerClient(transport: link.client, configuration: configuration,
                                          clock: simulation.clock, executor: simulation.executor)
            simulation.spawn { try await provider.run() }
            simulation.spawn { try await consumer.run() }
            simulation.spawn {
                for _ in 0..<3 { _ = try? await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Held")) }
            }
            link.connect()
            // Past the session's start and its first probe: then an hour.
            simulation.run(for: .seconds(60))
            let before = link.counters
            simulation.run(for: .seconds(3600))
            var counters = link.counters
            counters.writes -= before.writes
            counters.cccdWrites -= before.cccdWrites
            counters.connectionEvents -= before.connectionEvents
            counters.bytesOnAirToConsumer -= before.bytesOnAirToConsumer
            counters.bytesOnAirToProvider -= before.bytesOnAirToProvider
            return counters
        }
        let with = hour(liveness: true)
        let without = hour(liveness: false)
        return IdleHour(controlPointWrites: with.writes, cccdWrites: with.cccdWrites,
                        extraBytesOnAir: with.bytesOnAir - without.bytesOnAir,
                        extraConnectionEvents: with.connectionEvents - without.connectionEvents)
    }
}
