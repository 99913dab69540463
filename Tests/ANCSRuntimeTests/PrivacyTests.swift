import ANCS
import Logging
import Synchronization
import Testing
import ANCSDemo
@testable import ANCSRuntime
@testable import ANCSSimulation

/// Notification text is private: logs show lengths unless contents are asked for.
@Suite struct PrivacyTests {
    final class Capture: Sendable {
        let lines = Mutex<[String]>([])
    }

    struct CaptureHandler: LogHandler {
        let capture: Capture
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.lines.withLock { $0.append("\(event.message)") }
        }
    }

    func runDemo(level: Logger.Level, contents: Bool) -> [String] {
        let capture = Capture()
        var logger = Logger(label: "test") { _ in CaptureHandler(capture: capture) }
        logger.logLevel = level
        let log = ANCSTrafficLog(logger: logger, logsContents: contents)
        let run = DemoRun()
        run.onLine = { _, line in if case .consumer(let event) = line { log.log(event) } }
        run.runToEnd()
        return capture.lines.withLock { $0 }
    }

    /// Every title and message of the scenario, and the app names.
    var secrets: [String] {
        var texts: [String] = []
        for (_, n) in DemoScenario.standard.preExisting { texts += [n.title, n.message] }
        for (_, step) in DemoScenario.standard.timeline {
            if case .add(_, let n) = step { texts += [n.title, n.message] }
            if case .modify(_, let message) = step { texts.append(message) }
        }
        return texts
    }

    @Test("notification text never appears in logs, even at trace level, without --log-contents", arguments: [Logger.Level.warning, .info, .debug, .trace])
    func noContents(level: Logger.Level) {
        let lines = runDemo(level: level, contents: false)
        if level <= .debug { #expect(lines.contains { $0.contains("bytes>") }, "debug logging shows lengths") }
        for secret in secrets {
            #expect(!lines.contains { $0.contains(secret) }, "\(secret) leaked into the log at \(level)")
        }
    }

    @Test("--log-contents shows the text at debug level")
    func withContents() {
        let lines = runDemo(level: .debug, contents: true)
        #expect(lines.contains { $0.contains("On my way — 5 min 🚲") })
    }
}
