// Output that never traps: standard output and error written whole with
// write(2), every error checked; standard output that cannot be written ends
// the run (status `ExitStatus.outputFailure`; a reader gone away, status 0).

import ANCS
import ANCSFormat
import ANCSRuntime
import ArgumentParser
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Output

/// Standard output or standard error, written with `write(2)`, every error
/// checked. (Foundation's `FileHandle.write(_:)` traps when a write fails.)
///
/// `ancs` ignores SIGPIPE (`ANCSCommand.main`), so a reader that goes away
/// shows up here as `EPIPE` instead of killing the process.
enum StandardStream: Sendable {
    case output, error

    var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes all of `text`; returns the `errno` of a failed write, nil on success.
    func write(_ text: String) -> Int32? {
        var text = text
        return text.withUTF8 { buffer -> Int32? in
            guard let base = buffer.baseAddress else { return nil }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, base + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                let code = written == 0 ? EIO : errno
                switch code {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    // A non-blocking descriptor (some terminals and pipes set
                    // O_NONBLOCK): wait until it takes bytes again, as a
                    // blocking write would.
                    var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&request, 1, 1000)
                default:
                    return code
                }
            }
            return nil
        }
    }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
    #if canImport(Darwin)
    Darwin.write(descriptor, bytes, count)
    #elseif canImport(Musl)
    Musl.write(descriptor, bytes, count)
    #else
    Glibc.write(descriptor, bytes, count)
    #endif
}

/// The system's text for an `errno` value.
func errorText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "error \(code)" }
    return String(cString: text)
}

/// Writes text to stdout. If the reader has gone away (`EPIPE`: `ancs … | head`
/// read what it wanted and closed the pipe) the run stops at once with status
/// 0 and no message: the reader has all it asked for. Any other failure
/// (a full disk, a closed descriptor) is one `error:` line and status 74.
func writeOutput(_ text: String) {
    guard let code = StandardStream.output.write(text) else { return }
    if code == EPIPE { exit(0) }
    exitWithError("cannot write to standard output: \(errorText(code))", status: ExitStatus.outputFailure)
}

/// Writes one line to stdout at once (nothing is buffered), so piped output
/// arrives as it happens. See `writeOutput` for what happens when it fails.
func printLine(_ text: String) {
    writeOutput(text + "\n")
}

/// Writes one line to stderr at once. A failure is ignored: there is nowhere
/// left to report it.
func printErrorLine(_ text: String) {
    _ = StandardStream.error.write(text + "\n")
}

/// Writes a result the user asked for to stderr (the demo's summary next to
/// JSON on stdout). A reader that went away stops the run quietly; any other
/// failure ends it with status 74 (there is nowhere to say why).
func printResultToStandardError(_ text: String) {
    guard let code = StandardStream.error.write(text + "\n") else { return }
    exit(code == EPIPE ? 0 : ExitStatus.outputFailure)
}
