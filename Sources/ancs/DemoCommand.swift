import ANCS
import ANCSFormat
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import ArgumentParser
import Foundation
import Logging

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A simulated iPhone and accessory: notifications arrive, are fetched, shown and answered.",
        discussion: "No radio needed. The link is simulated with BLE timing; --fast runs it on the virtual clock at once."
    )

    @Flag(help: "Run on the virtual clock at once instead of in real time.") var fast = false
    @Flag(help: "Print one JSON object per consumer event instead of the terminal view.") var json = false
    @Option(help: "ATT MTU of the simulated link (23…517).") var mtu: Int = 185
    @Option(help: "Connection interval in milliseconds (7.5…4000).") var interval: Double = 30
    @Option(name: .customLong("repeat"), help: "Play the scenario this many times over.") var rounds: Int = 1
    @Option(help: "Fetch attributes: eager (for every new notification, as a display does) or lazy (none unless asked).")
    var policy: FetchPolicy = .eager
    @Option(help: "Pipelining depth: Control Point commands whose response may be outstanding at once.") var depth: Int = 1

    @Option(help: "Log level on stderr, in any case.") var logLevel: LogLevel = .warning
    @Flag(help: "Let logs show notification text; by default they show only lengths.") var logContents = false

    enum FetchPolicy: String, ExpressibleByArgument, CaseIterable { case eager, lazy }

    func validate() throws {
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 517, got \(mtu)") }
        guard interval >= 7.5 && interval <= 4000 else { throw ValidationError("--interval must be between 7.5 and 4000 ms, got \(interval)") }
        guard rounds >= 1 else { throw ValidationError("--repeat must be at least 1") }
        guard depth >= 1 else { throw ValidationError("--depth must be at least 1") }
    }

    func run() async throws {
        let linkConfiguration = SimulatedLink.Configuration(mtu: mtu, connectionInterval: .microseconds(Int64(interval * 1000)))
        var consumerConfiguration = ConsumerConfiguration(pipeliningDepth: depth)
        if policy == .eager { consumerConfiguration.eagerAttributes = DemoRun.displayAttributes }
        let demo = DemoRun(scenario: .standard, link: linkConfiguration, consumer: consumerConfiguration, repetitions: rounds)
        let view = DemoView(json: json, mtu: mtu, interval: interval)
        var logger = Logger(label: "ancs.demo") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = logLevel.level
        let log = ANCSTrafficLog(logger: logger, logsContents: logContents)
        demo.onLine = { time, event, model in
            if case .consumer(let consumerEvent) = event { log.log(consumerEvent) }
            view.show(time: time, event: event, demo: model)
        }
        demo.start()
        if fast {
            demo.runToEnd()
        } else {
            // Real time: advance the virtual clock in small steps, sleeping between them.
            let start = ContinuousClock.now
            let step = Duration.milliseconds(20)
            var virtual = Timestamp.zero
            while !demo.isFinished {
                virtual = virtual + step
                demo.run(until: virtual)
                try await ContinuousClock().sleep(until: start + virtual.sinceOrigin)
            }
        }
        view.summary(demo.summary)
        guard demo.summary.failedRequests == 0 || demo.summary.failedRequests == demo.summary.expectedFailures else {
            throw CommandFailure("demo: \(demo.summary.failedRequests) requests failed")
        }
    }
}

/// The terminal view of the demo: one line per thing a person would notice.
final class DemoView: @unchecked Sendable {
    let json: Bool
    let mtu: Int
    let interval: Double

    init(json: Bool, mtu: Int, interval: Double) {
        self.json = json
        self.mtu = mtu
        self.interval = interval
    }

    func show(time: Timestamp, event: DemoRun.Line, demo: DemoRun) {
        let seconds = Double(time.sinceOrigin.components.seconds) + Double(time.sinceOrigin.components.attoseconds) / 1e18
        if json {
            if case .consumer(let event) = event {
                var object = ANCSJSON.consumerEvent(event)
                if case .object(var members) = object {
                    members.insert(("time", .double((seconds * 1000).rounded() / 1000)), at: 0)
                    object = .object(members)
                }
                printLine(object.rendered)
            }
            return
        }
        let stamp = String(format: "%7.3fs", seconds)
        switch event {
        case .consumer(.sessionStarted):
            printLine("\(stamp)  ── session started (ATT MTU \(mtu), connection interval \(formatMS(interval)))")
        case .consumer(.sessionEnded(let reason)):
            printLine("\(stamp)  ── session ended (\(reason))")
        case .ready(let notification):
            printLine("\(stamp)  \(demo.describe(notification))")
        case .updated(let notification):
            printLine("\(stamp)  \(demo.describe(notification).replacingOccurrences(of: "●", with: "↻"))")
        case .removed(let notification, let title):
            printLine("\(stamp)  ✕ \(title) — removed (\(notification.categoryID), \(notification.categoryCount) left in category)")
        case .userAction(let title, let action, let label):
            printLine("\(stamp)  ▶ you pressed \(label ?? action.description) on “\(title)”")
        case .actionResult(let title, let result):
            printLine("\(stamp)    \(result) for “\(title)”")
        case .consumer:
            break
        }
    }

    func summary(_ summary: DemoRun.Summary) {
        let line = summary.line
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            printLine("")
            printLine(line)
        }
    }

    private func formatMS(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) ms" : "\(value) ms"
    }
}
