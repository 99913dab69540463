import ANCS
import ANCSRuntime
import ANCSSimulation
import Foundation

/// A month of an accessory's field life on the virtual clock: a
/// `ConsumerClient` with its default liveness checks against the simulated
/// iPhone (`ProviderServer`) on a `SimulatedLink`, notifications arriving
/// at a realistic rate and staying on the phone until the person clears
/// them, and the faults iPhones produce in the field injected at random
/// (seeded): subscriptions forgotten in silence, Notification Source quiet,
/// sharing turned off and on, ANCS restarted with and without Service
/// Changed, link drops, the bond forgotten ("Forget This Device": the link
/// drops, the host tells the consumer `bondLost` as it finds the phone can no
/// longer encrypt, and the phone shares nothing until the person pairs it
/// again, from a minute to two hours later).
///
/// It measures what the person gets: the share of the notifications posted
/// while the phone was sharing that reached the accessory while they were on
/// the phone, the longest such a notification waited, and what the probes
/// cost. Used by `ancs bench --field-days`.
public final class FieldLife: @unchecked Sendable {
    public enum Fault: String, CaseIterable, Sendable {
        case subscriptionsForgotten, notificationSourceQuiet, sharingOff, ancsRestarted, ancsRestartedSilently, linkDrop, bondForgotten
    }

    public struct Report: Sendable {
        public var days: Int
        public var seed: UInt64
        /// Notifications posted while the phone was sharing.
        public var posted = 0
        /// Of those, the ones the accessory heard of while they were on the phone.
        public var reached = 0
        /// The longest a notification posted while sharing waited to reach the
        /// accessory (or, if it never did, how long it was on the phone).
        public var longestWait: Duration = .zero
        public var faults: [Fault: Int] = [:]
        /// Liveness probes the phone answered, and what one costs on the air.
        public var probes = 0
        public var probeBytesOnAir = 0
        public var probeConnectionEvents = 0
        /// Times the consumer subscribed again, and the health states it told.
        public var resubscriptions = 0
        public var healthEvents = 0
        /// Times the consumer told `bondLost`.
        public var bondsLost = 0
        public var bytesOnAir = 0

        public var reachedShare: Double { posted == 0 ? 1 : Double(reached) / Double(posted) }
    }

    let days: Int
    let seed: UInt64
    /// Notifications per day on average, and how long one stays on the phone.
    let perDay: Double
    let faultsPerDay: Double

    public init(days: Int = 30, seed: UInt64 = 1, notificationsPerDay: Double = 120, faultsPerDay: Double = 2) {
        self.days = days
        self.seed = seed
        perDay = notificationsPerDay
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
        var posted: [(uid: NotificationUID, at: Timestamp, until: Timestamp, sharing: Bool)] = []
        var heard: [NotificationUID: Timestamp] = [:]
        var probes = 0
        var resubscriptions = 0
        var healthEvents = 0
        var bondsLost = 0
    }

    public func run() -> Report {
        var generator = Generator(state: seed)
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 185, connectionInterval: .milliseconds(30)))
        let provider = ProviderServer(transport: server)
        let consumer = ConsumerClient(transport: link.client, configuration: .default, clock: simulation.clock, executor: simulation.executor)
        let record = Record()
        simulation.spawn { try await provider.run() }
        simulation.spawn { try await consumer.run() }
        simulation.spawn {
            for await event in consumer.events {
                guard case .consumer(let event) = event else { continue }
                switch event {
                case .added(let notification):
                    if record.heard[notification.uid] == nil { record.heard[notification.uid] = simulation.now }
                case .health(let state):
                    record.healthEvents += 1
                    if case .resubscribing = state { record.resubscriptions += 1 }
                    if case .bondLost = state { record.bondsLost += 1 }
                default:
                    break
                }
            }
        }
        simulation.spawn {
            for await event in provider.events {
                if case .notificationAttributesSent(_, let command) = event, command.attributes == [NotificationAttributeRequest(.appIdentifier)] {
                    record.probes += 1  // a probe that found a notification never announced
                } else if case .commandRejected(_, .unknownNotification) = event {
                    record.probes += 1  // (the only commands for unknown UIDs here are probes)
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
        var time = start
        var posts = 0
        while true {
            time = time + generator.exponential(mean: 86_400 / perDay)
            guard time < end else { break }
            // On the phone from 10 minutes to a day, until the person clears it.
            let stays = generator.seconds(600, 86_400)
            schedule(time, .post(stays))
            schedule(time + stays, .remove(posts))
            posts += 1
        }
        time = start
        var report = Report(days: days, seed: seed)
        // A fault of a kind still going on is not injected again (one
        // switch per kind on the phone: a second would end the first).
        var busyUntil: [Fault: Timestamp] = [:]
        while true {
            time = time + generator.exponential(mean: 86_400 / faultsPerDay)
            guard time < end else { break }
            let fault = Fault.allCases[Int(generator.next() % UInt64(Fault.allCases.count))]
            let length: Duration
            switch fault {
            // Quiet until the consumer subscribes again (as the simulated phone does).
            case .notificationSourceQuiet, .subscriptionsForgotten: length = .zero
            case .sharingOff, .bondForgotten: length = generator.seconds(60, 2 * 3600)
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
        var sharingOff = false, bondForgotten = false, dropped = false
        var sharing: Bool { !sharingOff && !bondForgotten }
        for (at, _, step) in timeline {
            simulation.run(until: at)
            switch step {
            case .post(let stays):
                let task = simulation.spawn { try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "Field")) }
                let index = record.posted.count
                record.posted.append((NotificationUID(0), at, at + stays, sharing))
                simulation.spawn {
                    if let uid = try? await task.value { record.posted[index].uid = uid }
                }
                simulation.run(for: .zero)
            case .remove(let index):
                let uid = record.posted[index].uid
                simulation.spawn { try? await provider.remove(uid) }
            case .fault(let fault, _):
                switch fault {
                case .subscriptionsForgotten: simulation.spawn { await provider.forgetSubscriptions() }
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
                case .subscriptionsForgotten, .notificationSourceQuiet: break
                }
            }
        }
        simulation.run(until: end)
        report.bytesOnAir = link.counters.bytesOnAir
        report.probes = record.probes
        report.resubscriptions = record.resubscriptions
        report.healthEvents = record.healthEvents
        report.bondsLost = record.bondsLost
        for posted in record.posted where posted.sharing {
            report.posted += 1
            let leaves = min(posted.until, end)
            if let heard = record.heard[posted.uid], heard <= leaves {
                report.reached += 1
                report.longestWait = max(report.longestWait, heard - posted.at)
            } else {
                report.longestWait = max(report.longestWait, leaves - posted.at)
            }
        }
        let cost = Self.probeCost()
        report.probeBytesOnAir = cost.bytes
        report.probeConnectionEvents = cost.events
        return report
    }

    /// The air one probe costs: an idle hour with liveness on, less the same
    /// hour with it off, per probe answered.
    static func probeCost() -> (bytes: Int, events: Int) {
        func idleHour(liveness: Bool) -> (SimulatedLink.Counters, Int) {
            let simulation = Simulation()
            let server = SimulatedServer()
            let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 185, connectionInterval: .milliseconds(30)))
            let provider = ProviderServer(transport: server)
            var configuration = ConsumerConfiguration.default
            if !liveness {
                configuration.probeInterval = .zero
                configuration.silenceLimit = .zero
            }
            let consumer = ConsumerClient(transport: link.client, configuration: configuration, clock: simulation.clock, executor: simulation.executor)
            let probes = Box()
            simulation.spawn { try await provider.run() }
            simulation.spawn { try await consumer.run() }
            simulation.spawn {
                for await event in provider.events {
                    if case .commandRejected = event { probes.count += 1 }
                }
            }
            link.connect()
            simulation.run(for: .seconds(3600))
            return (link.counters, probes.count)
        }
        let (with, probes) = idleHour(liveness: true)
        let (without, _) = idleHour(liveness: false)
        guard probes > 0 else { return (0, 0) }
        return ((with.bytesOnAir - without.bytesOnAir) / probes, (with.connectionEvents - without.connectionEvents) / probes)
    }

    final class Box: @unchecked Sendable { var count = 0 }
}
