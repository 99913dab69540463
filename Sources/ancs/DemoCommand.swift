import ANCS
import ANCSFormat
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import ANCSTerminal
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
    var policy: DemoRun.FetchPolicy = .eager
    @Option(help: "Pipelining depth: Control Point commands whose response may be outstanding at once.") var depth: Int = 1

    @OptionGroup(title: "What is shown") var filters: DisplayFilterOptions
    @OptionGroup var logging: LoggingOptions

    typealias FetchPolicy = DemoRun.FetchPolicy

    func validate() throws {
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 517, got \(mtu)") }
        guard interval >= 7.5 && interval <= 4000 else { throw ValidationError("--interval must be between 7.5 and 4000 ms, got \(interval)") }
        guard rounds >= 1 else { throw ValidationError("--repeat must be at least 1") }
        guard depth >= 1 else { throw ValidationError("--depth must be at least 1") }
    }

    func run() async throws {
        let linkConfiguration = SimulatedLink.Configuration(mtu: mtu, connectionInterval: .microseconds(Int64(interval * 1000)))
        var consumer = ConsumerConfiguration(pipeliningDepth: depth)
        filters.apply(to: &consumer)
        let demo = DemoRun(scenario: .standard, link: linkConfiguration, consumer: consumer,
                           policy: policy, repetitions: rounds)
        let view = DemoView(json: json, mtu: mtu, interval: interval, policy: policy, depth: depth)
        let log = logging.trafficLog(label: "ancs.demo")
        demo.onLine = { time, line in
            if case .consumer(let consumerEvent) = line { log.log(consumerEvent) }
            view.show(time: time, line: line)
        }
        if fast {
            demo.runToEnd()
        } else {
            // Real time: advance the virtual clock in small steps, sleeping
            // between them, until the scenario has played and every request
            // has settled (or nothing is left that could settle it).
            let start = ContinuousClock.now
            let step = Duration.milliseconds(20)
            var virtual = Timestamp.zero
            demo.start()
            while !demo.isFinished {
                if demo.scriptFinished, demo.simulation.nextActivity == nil, !demo.simulation.executor.hasWork { break }
                virtual = virtual + step
                demo.run(until: virtual)
                try await ContinuousClock().sleep(until: start + virtual.sinceOrigin)
            }
            demo.finish()
        }
        demo.endSession()
        view.summary(demo.summary)
        if demo.summary.unsettled > 0 {
            throw CommandFailure("demo: \(demo.summary.unsettled) notifications were never shown")
        }
        if demo.summary.failedRequests > 0 {
            throw CommandFailure("demo: \(demo.summary.failedRequests) requests failed")
        }
    }
}

extension DemoRun.FetchPolicy: ExpressibleByArgument {}

extension JSON {
    /// An object with `members` inserted at `index`; anything else unchanged.
    func inserting(_ member: (String, JSON), at index: Int) -> JSON {
        guard case .object(var members) = self else { return self }
        members.insert(member, at: index)
        return .object(members)
    }

    /// An object with `members` appended; anything else unchanged.
    func adding(_ added: (String, JSON)...) -> JSON {
        guard case .object(let members) = self else { return self }
        return .object(members + added)
    }
}

/// The terminal view of the demo: one line per thing a person would notice.
final class DemoView: @unchecked Sendable {
    let json: Bool
    let mtu: Int
    let interval: Double
    let policy: DemoRun.FetchPolicy
    let depth: Int

    init(json: Bool, mtu: Int, interval: Double, policy: DemoRun.FetchPolicy, depth: Int) {
        self.json = json
        self.mtu = mtu
        self.interval = interval
        self.policy = policy
        self.depth = depth
    }

    func show(time: Timestamp, line: DemoRun.Line) {
        let seconds = Double(time.sinceOrigin.components.seconds) + Double(time.sinceOrigin.components.attoseconds) / 1e18
        if json {
            // One object per consumer event, and one per request the person
            // made (`completed`, numbered in order, as `ancs listen --json`).
            let object: JSON
            switch line {
            case .consumer(let event):
                object = ANCSJSON.consumerEvent(event)
            case .actionResult(_, let uid, let action, let request, let result):
                object = ANCSJSON.consumerEvent(.completed(ConsumerRequestID(rawValue: UInt32(request)), result))
                    .adding(("uid", .integer(Int(uid.rawValue))), ("action", .string(action == .positive ? "positive" : "negative")))
            default:
                return
            }
            printLine(object.inserting(("time", .double((seconds * 1000).rounded() / 1000)), at: 0).rendered)
            return
        }
        let stamp = String(format: "%7.3fs", seconds)
        switch line {
        case .consumer(.sessionStarted):
            printLine("\(stamp)  ── session started (ATT MTU \(mtu), connection interval \(formatMS(interval)), \(policy.rawValue) fetching, pipelining depth \(depth))")
        case .consumer(.sessionEnded(let reason)):
            printLine("\(stamp)  ── session ended (\(reason))")
        case .consumer(.protocolError(let error)):
            printLine("\(stamp)  ⚠ the phone sent bytes that were dropped: \(error)")
        case .ready(let shown):
            printLine("\(stamp)  \(TerminalLine.notification(shown))")
        case .opened(let shown):
            printLine("\(stamp)  ⤷ opened: \(TerminalLine.notification(shown))")
        case .updated(let shown):
            printLine("\(stamp)  \(TerminalLine.updated(shown))")
        case .announced(let notification):
            printLine("\(stamp)  \(TerminalLine.announced(notification))")
        case .removed(let notification, let title):
            printLine("\(stamp)  ✕ \(title) — removed (\(notification.categoryID), \(notification.categoryCount) left in category)")
        case .userAction(let title, let action, let label):
            printLine("\(stamp)  ▶ you pressed \(label ?? action.description) on “\(title)”")
        case .actionResult(let title, _, _, _, .success):
            printLine("\(stamp)    the phone performed the action for “\(title)”")
        case .actionResult(let title, _, _, _, .failure(let error)):
            printLine("\(stamp)    the action failed: \(error) for “\(title)”")
        case .failed(let uid, let error):
            printLine("\(stamp)  ⚠ notification \(uid) could not be fetched: \(error)")
        case .nowPlaying(let playing, let elapsed, let cut):
            printLine("\(stamp)  \(TerminalLine.nowPlaying(playing, elapsed: elapsed, cut: cut))")
        case .mediaPressed(let command):
            printLine("\(stamp)  ▶ you pressed \(TerminalLine.command(command)) on the now-playing line")
        case .mediaResult(let command, nil):
            printLine("\(stamp)    the phone performed \(TerminalLine.command(command))")
        case .mediaResult(let command, let error?):
            printLine("\(stamp)    \(TerminalLine.command(command)) failed: \(error)")
        case .consumer:
            break
        }
    }

    func summary(_ summary: DemoRun.Summary) {
        let line = summary.line
        if json {
            printResultToStandardError(line)
        } else {
            printLine("")
            printLine(line)
        }
    }

    private func formatMS(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) ms" : "\(value) ms"
    }
}
