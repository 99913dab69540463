import ANCSRuntime
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Python host program, running: its stdin takes command lines, each
/// line on its stdout is handed to `onLine` in order on one reader thread,
/// its stderr is the caller's. When stdout ends `onExit` is called once:
/// with nil when the host was closed on purpose, else with the reason.
final class HostProcess: Sendable {
    private struct Handles: @unchecked Sendable {
        let process: Process
        let input: FileHandle
    }
    private let handles: Handles
    private let writer = Mutex(())
    private let closing = Flag()
    let description: String

    /// Starts `python script role arguments…`.
    init(python: String, script: String, role: String, arguments: [String],
         onLine: @escaping @Sendable (String) -> Void,
         onExit: @escaping @Sendable (TransportError?) -> Void) throws(TransportError) {
        // A write to a pipe whose reader has died must fail, not kill us.
        signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        // -B: no bytecode cache beside the script (it is a resource of the package).
        process.arguments = ["-u", "-B", script, role] + arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        do {
            try process.run()
        } catch {
            throw TransportError(.unavailable, "cannot start the Bumble host \(python) \(script): \(error.localizedDescription)")
        }
        handles = Handles(process: process, input: stdin.fileHandleForWriting)
        description = "Bumble host (pid \(process.processIdentifier))"
        let output = stdout.fileHandleForReading
        let name = description
        let closing = self.closing
        let reader = Thread {
            var buffer: [UInt8] = []
            var lastLine = ""
            while true {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                buffer.append(contentsOf: chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    if line.hasPrefix("fatal ") { lastLine = String(line.dropFirst(6)) }
                    onLine(line)
                }
            }
            process.waitUntilExit()
            let status = process.terminationStatus
            let reason = process.terminationReason == .uncaughtSignal ? "was killed by signal \(status)" : "exited with status \(status)"
            if closing.isSet {
                onExit(nil)
                return
            }
            onExit(TransportError(.stackEnded, lastLine.isEmpty ? "\(name) \(reason)" : "\(name) \(reason): \(lastLine)"))
        }
        reader.start()
    }

    /// Sends one command line; false when the host is gone.
    @discardableResult
    func send(_ line: String) -> Bool {
        writer.withLock { _ in
            do {
                try handles.input.write(contentsOf: Data((line + "\n").utf8))
                return true
            } catch {
                return false
            }
        }
    }

    /// Closes the host's stdin: it disconnects and exits. After `grace`, it
    /// is terminated if it has not.
    func close(grace: Duration = .seconds(3)) {
        closing.set()
        writer.withLock { _ in try? handles.input.close() }
        let process = handles.process
        Task.detached {
            try? await Task.sleep(for: grace)
            if process.isRunning { process.terminate() }
        }
    }

    /// Terminates the host at once (SIGTERM).
    func terminate() {
        if handles.process.isRunning { handles.process.terminate() }
    }

    var isRunning: Bool { handles.process.isRunning }
    var processIdentifier: Int32 { handles.process.processIdentifier }
}

/// Requests waiting for their answer line, each ended exactly once: by the
/// answer, by a timeout, or by the host's exit.
final class PendingTable<Result: Sendable>: Sendable {
    private struct Entry {
        var continuation: CheckedContinuation<Result, Never>
        var timer: Task<Void, Never>?
    }
    private struct State {
        var next = 1
        var entries: [Int: Entry] = [:]
        var closed: Result?
    }
    private let state = Mutex(State())

    /// Runs `send` with a fresh id and waits for `resolve(id, …)`, at most
    /// `timeout`, then `expired`. When the table is closed, returns what it
    /// was closed with.
    func perform(timeout: Duration, expired: Result, _ send: @Sendable (Int) -> Bool, failed: Result) async -> Result {
        await perform(id: makeID(), timeout: timeout, expired: expired, send, failed: failed)
    }

    func makeID() -> Int {
        state.withLock { state -> Int in
            defer { state.next += 1 }
            return state.next
        }
    }

    func perform(id: Int, timeout: Duration, expired: Result, _ send: @Sendable (Int) -> Bool, failed: Result) async -> Result {
        return await withCheckedContinuation { continuation in
            let closed = state.withLock { state -> Result? in
                if let closed = state.closed { return closed }
                state.entries[id] = Entry(continuation: continuation, timer: nil)
                return nil
            }
            if let closed { continuation.resume(returning: closed); return }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { self?.resolve(id, expired) }
            }
            state.withLock { state in state.entries[id]?.timer = timer }
            if Task.isCancelled || !send(id) { resolve(id, failed) }
        }
    }

    /// Ends request `id`; false when it already ended (or never existed).
    @discardableResult
    func resolve(_ id: Int, _ result: Result) -> Bool {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: id) }) else { return false }
        entry.timer?.cancel()
        entry.continuation.resume(returning: result)
        return true
    }

    /// Ends every request with `result`, and every later one at once.
    func close(with result: Result) {
        let entries = state.withLock { state -> [Entry] in
            state.closed = result
            defer { state.entries.removeAll() }
            return Array(state.entries.values)
        }
        for entry in entries {
            entry.timer?.cancel()
            entry.continuation.resume(returning: result)
        }
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

extension HostProcess {
    /// Starts a host in `role` and waits for its handshake (the protocol
    /// line, then `ready`). After the handshake every line goes to `handle`,
    /// in order; when the host exits, `onExit` (given the exit's error if it
    /// died) fails what still waits on it and `sink` finishes, throwing that error. Finishing
    /// `sink` from the other side closes the host.
    static func launch<Event: Sendable>(
        role: String, options: BumbleHostOptions, environment: BumbleEnvironment?,
        progress: @Sendable (String) -> Void, sink: AsyncThrowingStream<Event, any Error>.Continuation,
        onExit: @escaping @Sendable (TransportError?) -> Void,
        handle: @escaping @Sendable (_ line: String, _ fields: [Substring], _ host: HostProcess) -> Void
    ) async throws(TransportError) -> (HostProcess, BumbleHostReady) {
        let resolved: BumbleEnvironment
        if let environment { resolved = environment } else { resolved = try await BumbleEnvironment.resolve(progress: progress) }
        let handshake = Handshake(role: role)
        let router = LineRouter()
        let host = try HostProcess(
            python: resolved.python, script: resolved.script, role: role, arguments: options.arguments(role: role),
            onLine: { line in router.route(line) },
            onExit: { error in
                handshake.failed(error ?? TransportError(.stackEnded, "the Bumble host was closed"))
                onExit(error)
                if let error { sink.finish(throwing: error) } else { sink.finish() }
            })
        router.handler = { line in
            let fields = line.split(separator: " ")
            if handshake.consume(line, fields: fields) { return }
            handle(line, fields, host)
        }
        router.start()
        let ready: BumbleHostReady
        do {
            ready = try await handshake.wait(timeout: options.startTimeout)
        } catch {
            host.terminate()
            throw error
        }
        sink.onTermination = { _ in host.close() }
        return (host, ready)
    }
}
