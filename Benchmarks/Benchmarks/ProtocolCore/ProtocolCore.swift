// The protocol core: Notification Source decode, Control Point encode, and
// the standard Data Source workload through DataSourceReassembler at ATT MTU
// 23, 185 and 517 (every notification fed, every value materialized as a
// String). The workload is checked against its manifest's checksum before
// it is timed; a mismatch stops the run.

import ANCS
import Benchmark
import DataSourceWorkload

/// Keeps one reassembler across iterations, as a connection does.
final class ReassemblerBox: @unchecked Sendable {
    var reassembler = DataSourceReassembler()
}

enum Metrics {
    /// Megabytes (10^6) of response bytes per second, this iteration.
    static let megabytesPerSecond = BenchmarkMetric.custom("Throughput (MB/s)", polarity: .prefersLarger, useScalingFactor: false)
    /// Nanoseconds per response, this iteration.
    static let nanosecondsPerResponse = BenchmarkMetric.custom("Time per response (ns)", polarity: .prefersSmaller, useScalingFactor: false)
}

func nanoseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 10_000)

    // MARK: Notification Source

    let event: [UInt8] = NotificationSourceEvent(
        eventID: .added, eventFlags: [.important], categoryID: .social, categoryCount: 3,
        notificationUID: NotificationUID(0x1234_5678)).encode()
    Benchmark("Notification Source decode") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? NotificationSourceEvent.decode(event))
        }
    }
    Benchmark("Notification Source decode (raw buffer)") { benchmark in
        event.withUnsafeBytes { raw in
            for _ in benchmark.scaledIterations {
                blackHole(try? NotificationSourceEvent.decode(raw))
            }
        }
    }

    // MARK: Control Point

    let getAttributes = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
        notificationUID: NotificationUID(67), attributes: DataSourceWorkload.attributes))
    Benchmark("Control Point encode (Get Notification Attributes, 5 attributes)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? getAttributes.encode())
        }
    }
    let action = ControlPointCommand.performNotificationAction(PerformNotificationAction(
        notificationUID: NotificationUID(67), actionID: .positive))
    Benchmark("Control Point encode (Perform Notification Action)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? action.encode())
        }
    }

    // MARK: Data Source workload

    for mtu in DataSourceWorkload.mtus {
        let workload: DataSourceWorkload
        do {
            workload = try DataSourceWorkload(mtu: mtu)
        } catch {
            fatalError("\(error)")
        }
        workload.verify()  // stops here unless every value decodes to the manifest's checksum
        let box = ReassemblerBox()
        // One iteration is one pass over the whole workload.
        Benchmark(
            "Data Source workload MTU \(mtu) (\(workload.responseCount) responses, \(workload.fragmentCount) notifications, \(workload.responseBytes) B)",
            configuration: .init(
                metrics: [.wallClock, .mallocCountTotal, Metrics.megabytesPerSecond, Metrics.nanosecondsPerResponse],
                timeUnits: .microseconds, scalingFactor: .one,
                maxDuration: .seconds(3), maxIterations: 5_000)
        ) { benchmark in
            var tally = Tally()
            let clock = ContinuousClock()
            let start = clock.now
            workload.run(&box.reassembler) { tally.add($0) }
            let elapsed = nanoseconds(clock.now - start)
            benchmark.measurement(Metrics.megabytesPerSecond, Int((Double(workload.responseBytes) / elapsed * 1e3).rounded()))
            benchmark.measurement(Metrics.nanosecondsPerResponse, Int((elapsed / Double(workload.responseCount)).rounded()))
            tally.check(against: workload)
        }
    }
}
