import ANCS
import ANCSBumble
import ANCSRuntime
import ANCSTestSupport
import Foundation
import Synchronization
import Testing

/// Where the tests find Python with Bumble: `ANCS_BUMBLE_PYTHON`, else the
/// environment `ancs setup bumble` makes (`ANCS_BUMBLE_VENV`, or the user
/// cache), else the CI's `.build/venv-bumble` (scripts/ci-bumble.sh).
enum BumbleTestEnvironment {
    /// Why Bumble tests are skipped when no Python with Bumble is found.
    static let missing: Comment = "needs Python with bumble: run `ancs setup bumble` (or scripts/ci-bumble.sh, or set ANCS_BUMBLE_PYTHON)"

    static let python: String? = locate(environment: ProcessInfo.processInfo.environment)

    static func locate(environment: [String: String]) -> String? {
        if let python = environment["ANCS_BUMBLE_PYTHON"], !python.isEmpty { return python }
        let setUp = BumbleEnvironment.defaultVirtualEnvironment(environment: environment)
        if BumbleEnvironment.isInstalled(setUp) { return setUp + "/bin/python" }
        let venv = PackagePaths.path(".build/venv-bumble/bin/python")
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
    }

    static var isAvailable: Bool { python != nil }

    /// Any Python 3 (for tests that only need an interpreter).
    static let anyPython: String? = python ?? ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static func environment() throws -> BumbleEnvironment {
        guard let python else { throw TransportError(.unavailable, "no Python with Bumble") }
        return BumbleEnvironment(python: python, script: try BumbleEnvironment.hostScript())
    }

    static let interopClient = PackagePaths.path("Tests/ANCSBumbleTests/Interop/bumble_ancs_client.py")

    /// Two loopback TCP ports, different per call, below the ephemeral
    /// range (32768 and up) where outgoing connections take theirs.
    static func ports() -> (Int, Int) {
        let base = 12_000 + Int.random(in: 0..<10_000) * 2
        return (base, base + 1)
    }
}

/// A child process whose stdout is collected; stops when dropped.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    private let output = Buffer()
    private let errors = Buffer()
    private let input = Pipe()

    /// `captureErrors`: collect stderr too (`errorText`) instead of passing it through.
    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, captureErrors: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = input
        let stderr = captureErrors ? Pipe() : nil
        process.standardError = stderr ?? FileHandle.standardError
        let handle = stdout.fileHandleForReading
        try process.run()
        for (pipe, buffer) in [(Optional(stdout), output), (stderr, errors)] {
            guard let reading = pipe?.fileHandleForReading else { continue }
            Thread {
                while true {
                    let chunk = reading.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                }
            }.start()
        }
        _ = handle
    }

    var text: String { output.text }
    /// stderr, when captured.
    var errorText: String { errors.text }

    /// Waits until stdout contains `needle`, at most `timeout` (or until
    /// the process has exited and its output is read).
    func waitFor(_ needle: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if text.contains(needle) { return true }
            if !process.isRunning {
                try? await Task.sleep(for: .milliseconds(200))
                break
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return text.contains(needle)
    }

    /// Waits for the exit, at most `timeout` (then terminates it); the status, nil on timeout.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            process.terminate()
            return nil
        }
        try? await Task.sleep(for: .milliseconds(100))  // the reader drains the pipe
        return process.terminationStatus
    }

    /// Writes one line to its stdin.
    func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
    }

    deinit { stop() }
}

/// Two virtual controllers on one virtual link, reachable as
/// `tcp-client:127.0.0.1:<port>` by two hosts.
final class VirtualLink: Sendable {
    let child: ChildProcess
    let transports: (String, String)

    /// `first`: the ports tried first (a test of the retry), then pairs at random.
    init(first: (Int, Int)? = nil) async throws {
        let environment = try BumbleTestEnvironment.environment()
        // Ports taken at random may be in use: another pair then.
        var attempt = 1
        while true {
            let (a, b) = attempt == 1 ? first ?? BumbleTestEnvironment.ports() : BumbleTestEnvironment.ports()
            let child = try ChildProcess(environment.python, ["-u", "-B", environment.script, "link",
                                                              "--hci", "tcp-server:127.0.0.1:\(a)", "--hci", "tcp-server:127.0.0.1:\(b)"],
                                         captureErrors: true)
            if await child.waitFor("ready 2", timeout: .seconds(20)) {
                self.child = child
                transports = ("tcp-client:127.0.0.1:\(a)", "tcp-client:127.0.0.1:\(b)")
                return
            }
            child.stop()
            // The host says why on stdout (`fatal cannot open transport …: address already in use`).
            guard attempt < 5, (child.text + child.errorText).contains("address already in use") else {
                throw TransportError(.unavailable, "the virtual link did not start: \(child.text)\(child.errorText)")
            }
            attempt += 1
        }
    }

    func stop() { child.stop() }
}

/// Runs `body` and fails with a clear error after `timeout`.
func withTimeout<T: Sendable>(_ timeout: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw TransportError(.timedOut, "\(what): no result within \(timeout)")
        }
        group.cancelAll()
        return value
    }
}

final class Buffer: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func append(_ data: Data) { bytes.withLock { $0.append(contentsOf: data) } }
    var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// Events collected by one reader, waited on by predicate.
final class EventLog<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])
    func append(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }

    /// Polls until `found` returns a value, at most `timeout`.
    func wait<T>(timeout: Duration, _ what: String, _ found: ([Event]) -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let value = found(all) { return value }
            try await Task.sleep(for: .milliseconds(50))
        }
        if let value = found(all) { return value }
        throw TransportError(.timedOut, "\(what): not seen within \(timeout)")
    }
}
