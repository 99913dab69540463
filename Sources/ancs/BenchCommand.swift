import ANCS
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import ArgumentParser
import Foundation

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Air time over the simulated link and memory over a long run, as tables.",
        discussion: """
            Air time: the demo scenario played --rounds times (12 apps) at each ATT MTU, connection \
            interval, pipelining depth and fetch policy; connection events and bytes on air from each \
            Added event to "ready to show" (app name, title, message, date), against the fewest the \
            link allows. Memory: resident set size while the demo runs --notifications notifications. \
            Field life: --field-days of simulated time per seed (--seed, --seeds), the phone's faults injected at random, \
            the share of notifications shown, the waits, the time told healthy while undelivered, and the writes of an idle hour. \
            CPU figures come from the benchmark package (scripts/bench.sh).
            """
    )

    @Option(help: "Rounds of the demo scenario per air-time row.") var rounds: Int = 10
    @Option(help: "Notifications in the memory run.") var notifications: Int = 100_000
    @Flag(help: "Only the air-time table.") var airTimeOnly = false
    @Flag(help: "Only the memory table.") var memoryOnly = false
    @Option(help: "Days of simulated field life with the phone's faults injected at random (0: none).") var fieldDays: Int = 30
    @Option(help: "Seed of the field life's notifications and faults (the first, with --seeds).") var seed: UInt64 = 1
    @Option(help: "Field-life runs, one row each: seeds --seed, --seed + 1, ...") var seeds: Int = 1
    @Flag(help: "Only the field-life table.") var fieldOnly = false

    func run() throws {
        if !memoryOnly && !fieldOnly { airTime() }
        if !airTimeOnly && !fieldOnly { try memory() }
        if !airTimeOnly && !memoryOnly && fieldDays > 0 { fieldLife() }
    }

    func fieldLife() {
        let reports = (0..<UInt64(max(1, seeds))).map { FieldLife(days: fieldDays, seed: seed + $0).run() }
        let bound = FieldLife.bound
        printLine("## Field life: \(fieldDays) simulated days per seed (MTU 185, 30 ms, default liveness settings, standard display policy)")
        printLine("")
        printLine("Bound on a wait: probe interval + retry interval + 2 × request timeout + 60 s = \(minutes(bound)) min. Waits leave out the time the phone did not share, the link was down or the bond was lost.")
        printLine("")
        printLine("| seed | posted | shown | share | cleared < 5 min | on the phone past the bound: shown | p99 wait | longest wait | healthy while undelivered | faults | resubscriptions / fault | CP writes / idle h | CCCD writes / idle h |")
        printLine("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for report in reports {
            printLine("| \(report.seed) | \(report.posted) | \(report.delivered) | \(f3(report.deliveredShare * 100)) % | \(report.clearedSoon) | \(report.lastingDelivered) of \(report.lasting) | \(seconds(report.p99Wait)) s | \(minutes(report.longestWait)) min | \(minutes(report.longestHealthyUndelivered)) min | \(report.faultCount) | \(f2(report.resubscriptionsPerFault)) | \(report.idleHour.controlPointWrites) | \(report.idleHour.cccdWrites) |")
        }
        printLine("")
        printLine("| faults injected (all seeds) | count |")
        printLine("|---|---:|")
        for fault in FieldLife.Fault.allCases {
            printLine("| \(fault.rawValue) | \(reports.reduce(0) { $0 + $1.faults[fault, default: 0] }) |")
        }
        printLine("")
        if let idle = reports.first?.idleHour {
            printLine("A healthy idle hour (three notifications held) costs \(idle.controlPointWrites) Control Point writes (the probes), \(idle.cccdWrites) CCCD writes (the refreshes), \(idle.extraBytesOnAir) bytes on air and \(idle.extraConnectionEvents) connection events more than the same hour without liveness.")
            printLine("")
        }
    }

    func minutes(_ duration: Duration) -> String { f1(Double(duration.components.seconds) / 60) }
    func seconds(_ duration: Duration) -> String { f1(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }

    func airTime() {
        printLine("## Air time: Added → ready to show (demo scenario × \(rounds), 12 apps, eager display policy)")
        printLine("")
        printLine("| MTU | interval | depth | notifications | events/notif. | bound | ratio | bytes/notif. | bound | ratio | median latency | app-name fetches | repeated |")
        printLine("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for mtu in [23, 185, 247] {
            for interval in [15, 30] {
                for depth in [1, 2, 4] {
                    let run = DemoRun(link: .init(mtu: mtu, connectionInterval: .milliseconds(interval)),
                                      consumer: ConsumerConfiguration(pipeliningDepth: depth), policy: .eager, repetitions: rounds)
                    run.runToEnd()
                    let r = run.summary.readiness
                    let n = Double(max(r.count, 1))
                    let events = Double(r.connectionEvents) / n
                    let boundEvents = Double(r.lowerBoundEvents) / n
                    let bytes = Double(r.bytesOnAir) / n
                    let boundBytes = Double(r.lowerBoundBytes) / n
                    let latency = Double(r.medianLatency.components.seconds) * 1000 + Double(r.medianLatency.components.attoseconds) / 1e15
                    printLine("| \(mtu) | \(interval) ms | \(depth) | \(r.count) | \(f2(events)) | \(f2(boundEvents)) | \(f3(events / boundEvents)) | \(f1(bytes)) | \(f1(boundBytes)) | \(f3(bytes / boundBytes)) | \(Int(latency)) ms | \(run.summary.appNameFetches) | \(run.summary.repeatedAppNameFetches) |")
                }
            }
        }
        printLine("")
        printLine("Lazy fetching (attributes only when a notification is opened) against eager, MTU 185, 30 ms, depth 1:")
        printLine("")
        printLine("| policy | requests | bytes on air | connection events |")
        printLine("|---|---:|---:|---:|")
        for policy in DemoRun.FetchPolicy.allCases {
            let run = DemoRun(link: .init(mtu: 185, connectionInterval: .milliseconds(30)), policy: policy, repetitions: rounds)
            run.runToEnd()
            printLine("| \(policy.rawValue) | \(run.summary.requests) | \(run.summary.counters.bytesOnAir) | \(run.summary.counters.connectionEvents) |")
        }
        printLine("")
    }

    func memory() throws {
        printLine("## Memory: `ancs demo --fast` with \(notifications) notifications")
        printLine("")
        printLine("| notifications | resident (MiB) |")
        printLine("|---:|---:|")
        let perRound = 10
        let run = DemoRun(link: .init(mtu: 185, connectionInterval: .milliseconds(30)), repetitions: (notifications + perRound - 1) / perRound + 1)
        run.recordsReadiness = false
        var checkpoints = [1_000, 10_000, 100_000, 1_000_000].filter { $0 <= notifications }
        while !run.scriptFinished, let next = checkpoints.first {
            run.run(until: run.simulation.now + .seconds(15))
            if run.summary.notifications >= next {
                checkpoints.removeFirst()
                printLine("| \(run.summary.notifications) | \(f1(residentMiB())) |")
            }
        }
        printLine("")
    }

    func residentMiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return .nan }
        return kib / 1024
    }

    func f1(_ x: Double) -> String { String(format: "%.1f", x) }
    func f2(_ x: Double) -> String { String(format: "%.2f", x) }
    func f3(_ x: Double) -> String { String(format: "%.3f", x) }
}
