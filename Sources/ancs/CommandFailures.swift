// What every `ancs` subcommand shares about ending: the version, the exit
// statuses, and the one-line `error:` report of a failure.

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

// MARK: - Version

/// The version of `ancs` (and of the package); `ancs --version` prints it.
enum ANCSVersion {
    static let current = "0.1.0"
}

// MARK: - Exit statuses

/// The exit statuses of `ancs`, as its `--help` lists them.
enum ExitStatus {
    /// Bad input, or a run that failed.
    static let failure: Int32 = 1
    /// A command line that does not parse (ArgumentParser's `EX_USAGE`).
    static let usage: Int32 = 64
    /// Standard output cannot be written (`EX_IOERR`).
    static let outputFailure: Int32 = 74
}

// MARK: - Failures

/// A failure the user caused or must act on, with its one-line message.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var status: Int32 = ExitStatus.failure
    init(_ message: String, status: Int32 = ExitStatus.failure) {
        self.message = message
        self.status = status
    }

    var description: String { message }
}

/// Prints `error: <message>` as one line on stderr and exits with `status`.
/// Control characters in the message (user input quoted in it) are escaped,
/// so the line is always one line. If stderr cannot be written, the status
/// still tells.
func exitWithError(_ message: String, status: Int32) -> Never {
    _ = StandardStream.error.write("error: \(oneLine(message))\n")
    exit(status == 0 ? ExitStatus.failure : status)
}

/// Ends the process with `status` (the C library's `exit`, which a command's
/// own `exit(withError:)` hides inside command types).
func terminate(_ status: Int32) -> Never {
    exit(status)
}

/// `text` as one line: ArgumentParser's bulleted list of valid values
/// ("…one of the following:\n  - a\n  - b") becomes "…one of: a, b.", and
/// every other control character is escaped.
func oneLine(_ text: String) -> String {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    if let start = lines.lastIndex(where: { $0.hasSuffix(" one of the following:") }),
        start + 1 < lines.endIndex, lines[(start + 1)...].allSatisfy({ $0.hasPrefix("  - ") })
    {
        let list = lines[(start + 1)...].map { $0.dropFirst(4) }.joined(separator: ", ")
        lines[start] = Substring(lines[start].dropLast(" the following:".count) + ": " + list + ".")
        lines.removeSubrange((start + 1)...)
    }
    return escapingControlCharacters(lines.joined(separator: "\n"))
}

/// `text` with every control character written out as Swift writes it in a
/// string literal (`\n`, `\r`, `\t`, `\0`, `\u{1B}`): C0 and C1 controls,
/// DEL, the Unicode line and paragraph separators, and the bidirectional
/// controls that reorder what a terminal shows.
func escapingControlCharacters<S: StringProtocol>(_ text: S) -> String {
    var escaped = ""
    escaped.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x00: escaped += "\\0"
        case 0x09: escaped += "\\t"
        case 0x0A: escaped += "\\n"
        case 0x0D: escaped += "\\r"
        case 0x01...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
            escaped += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped
}
