// What every `ancs` subcommand shares: the version, output that never traps,
// the one-line `error:` report, hex input from arguments, files and standard
// input, and the `--log-level` option.

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

// MARK: - Hex input

/// Parses hex as `ancs decode` takes it: pairs of digits in either case, with
/// spaces, colons, tabs, newlines or carriage returns anywhere between bytes.
/// `what` names the input in the error ("event", "fragment 2, frags.txt line 3").
func parseHex(_ text: some StringProtocol, what: String) throws(CommandFailure) -> [UInt8] {
    var normalized = ""
    normalized.reserveCapacity(text.utf8.count)
    for (position, scalar) in text.unicodeScalars.enumerated() {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F", " ", ":", "\t":
            normalized.unicodeScalars.append(scalar)
        case "\n", "\r":
            normalized.unicodeScalars.append(" ")
        default:
            throw CommandFailure("\(what): hex character \(position + 1): '\(escapingControlCharacters(String(scalar)))' is not a hex digit")
        }
    }
    do {
        return try Hex.bytes(normalized)
    } catch {
        throw CommandFailure("\(what): \(error)")
    }
}

/// Hex arguments that may stand for more text: `-` is standard input and
/// `@PATH` a file, whose lines are read; anything else is hex itself.
///
/// In a file or on stdin, text after `#` on a line is a comment, and lines
/// with no hex are skipped. Standard input can be read once per command.
struct HexArguments {
    /// Where a piece came from, for its label.
    enum Origin {
        case argument
        case line(source: String, number: Int)

        func label(_ what: String) -> String {
            switch self {
            case .argument: what
            case .line(let source, let number): "\(what), \(source) line \(number)"
            }
        }
    }

    /// The most a file or standard input may hold: far beyond any hex a
    /// person writes, short of exhausting memory on `- < /dev/zero`.
    static let sizeLimit = 16 << 20

    private var readStandardInput = false

    /// The pieces `argument` stands for: itself, or the hex lines of stdin or a file.
    mutating func pieces(of argument: String) throws(CommandFailure) -> [(text: Substring, origin: Origin)] {
        if argument == "-" {
            guard !readStandardInput else {
                throw CommandFailure("standard input ('-') can be read only once")
            }
            readStandardInput = true
            let bytes = try Self.readAll(descriptor: STDIN_FILENO, name: "stdin")
            return try Self.hexLines(bytes, source: "stdin")
        }
        if argument.hasPrefix("@") {
            let path = String(argument.dropFirst())
            guard !path.isEmpty else { throw CommandFailure("'@' must be followed by a file name") }
            let bytes = try Self.readFile(path)
            return try Self.hexLines(bytes, source: path)
        }
        return [(argument[...], .argument)]
    }

    /// The lines of `bytes` that hold hex, comments removed, numbered from 1.
    static func hexLines(_ bytes: [UInt8], source: String) throws(CommandFailure) -> [(text: Substring, origin: Origin)] {
        var lines: [(text: Substring, origin: Origin)] = []
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let origin = Origin.line(source: source, number: index + 1)
            let content = line.firstIndex(of: UInt8(ascii: "#")).map { line[..<$0] } ?? line
            guard let text = String(validating: content, as: UTF8.self) else {
                throw CommandFailure("\(source) line \(index + 1): not UTF-8 text")
            }
            if text.unicodeScalars.allSatisfy({ [" ", "\t", "\r", ":"].contains($0) }) { continue }
            lines.append((text[...], origin))
        }
        return lines
    }

    /// The bytes of the file at `path`, at most `limit`; a failure names the
    /// file and says why (the system's reason).
    static func readFile(_ path: String, limit: Int = sizeLimit) throws(CommandFailure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot open \(path): \(errorText(errno))")
        }
        defer { close(descriptor) }
        return try readAll(descriptor: descriptor, name: path, limit: limit)
    }

    /// Everything `descriptor` holds up to end of file, at most `limit` bytes.
    static func readAll(descriptor: Int32, name: String, limit: Int = sizeLimit) throws(CommandFailure) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw CommandFailure("cannot read \(name): \(errorText(code))")
            }
            bytes += chunk[..<count]
            if bytes.count > limit {
                throw CommandFailure("\(name): more than \(limit >> 20) MiB of input")
            }
        }
    }
}

// MARK: - Log level

/// The `--log-level` option of any subcommand: the swift-log levels, in any
/// case (`debug`, `DEBUG`, `Debug`). An unknown level's error lists them.
///
///     @Option(help: "Log level on stderr.") var logLevel: LogLevel = .warning
enum LogLevel: String, CaseIterable, ExpressibleByArgument, Sendable {
    case trace, debug, info, notice, warning, error, critical

    init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }

    var level: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }
}

// MARK: - Usage checks

/// A command whose options ArgumentParser takes as plain text but that must
/// name one of a few things (a stack): checked once the command line is
/// parsed and before anything runs, so a mistake there is a usage error
/// (status 64) like any other command line that does not parse.
/// `SendableMetatype`: a cast to it never makes a main-actor conformance, so
/// the command it finds can still run off the main actor.
protocol UsageChecked: SendableMetatype {
    func checkUsage() throws(CommandFailure)
}

/// A usage error: one `error:` line and status 64.
func usageError(_ message: String) -> CommandFailure {
    CommandFailure(message, status: ExitStatus.usage)
}

/// A Bluetooth stack as `--stack` names it: `bluez`, or `bumble:<transport>`
/// (a Bumble transport spec: `usb:0`, `tcp-client:127.0.0.1:9001`, ...).
/// Parsed by ArgumentParser, so a value that names no stack is a usage
/// error (status 64) before anything runs.
enum Stack: Hashable, Sendable, CustomStringConvertible {
    case bluez
    case bumble(transport: String)

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ value: String) throws -> Stack {
        if value == "bluez" { return .bluez }
        if value == "bumble" || value.hasPrefix("bumble:") {
            let transport = value.dropFirst("bumble".count).drop { $0 == ":" }
            guard !transport.isEmpty else {
                throw ParseError(description: "name a Bumble transport: bumble:usb:0, bumble:serial:/dev/ttyACM0,1000000, bumble:tcp-client:127.0.0.1:9001, ...")
            }
            return .bumble(transport: String(transport))
        }
        throw ParseError(description: "unknown stack (available: bluez, bumble:<transport>)")
    }

    var description: String {
        switch self {
        case .bluez: "bluez"
        case .bumble(let transport): "bumble:\(transport)"
        }
    }
}

extension ProvideCommand: UsageChecked {
    func checkUsage() throws(CommandFailure) {
        if stack == .bluez {
            throw usageError("provide: --stack bluez: unknown stack (available: bumble:<transport>); BlueZ turns the ANCS errors 0xA0–0xA3 into 0x0E")
        }
    }
}

extension SetupCommand: UsageChecked {
    func checkUsage() throws(CommandFailure) {
        guard stack == "bumble" else { throw usageError("setup: unknown stack '\(stack)'; known: bumble") }
    }
}

/// `--log-level` and `--log-contents`, as `demo` and `listen` take them.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level on stderr, in any case.") var logLevel: LogLevel = .warning
    @Flag(help: "Let logs show notification text; by default they show only lengths.") var logContents = false

    /// The traffic log on stderr at the level asked for.
    func trafficLog(label: String) -> ANCSTrafficLog {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = logLevel.level
        return ANCSTrafficLog(logger: logger, logsContents: logContents)
    }
}

extension ANCSTrafficLog {
    /// Logs what the client says of the session; `.ready` and the rest are the view's.
    func log(_ event: ConsumerClientEvent) {
        if case .consumer(let event) = event { log(event) }
    }
}

/// What the display leaves unfetched, as `demo` and `listen` take it
/// (`ConsumerConfiguration.hiddenApps`, `hiddenCategories`, `fetchesSilent`,
/// `maximumPreExisting`): such notifications are never shown, and cost no
/// fetch beyond, for a hidden app, their AppIdentifier.
struct DisplayFilterOptions: ParsableArguments {
    @Option(name: .customLong("hide-app"), help: ArgumentHelp(
        "Do not fetch or show this app's notifications (its AppIdentifier, e.g. com.facebook.Facebook); may be repeated.",
        valueName: "app-identifier"))
    var hiddenApps: [String] = []
    @Option(name: .customLong("hide-category"), help: ArgumentHelp(
        "Do not fetch or show notifications of this category (other, incomingCall, missedCall, voicemail, social, schedule, email, news, healthAndFitness, businessAndFinance, location, entertainment, or a number 0–31); may be repeated.",
        valueName: "category"), transform: DisplayFilterOptions.category)
    var hiddenCategories: [CategoryID] = []
    @Flag(help: "Do not fetch or show Silent notifications.") var skipSilent = false
    @Option(help: "Fetch and show at most this many of the notifications the phone held at connection, the newest first.")
    var maxBacklog: Int?

    func validate() throws {
        if let maxBacklog, maxBacklog < 0 { throw ValidationError("--max-backlog must be 0 or more, got \(maxBacklog)") }
        if let empty = hiddenApps.firstIndex(where: \.isEmpty) {
            throw ValidationError("--hide-app needs an AppIdentifier (occurrence \(empty + 1) is empty)")
        }
    }

    /// A category by its name (as `ancs decode` prints it, in any case) or number.
    static func category(_ text: String) throws -> CategoryID {
        if let number = UInt8(text), number < 32 { return CategoryID(rawValue: number) }
        for raw in UInt8(0)..<32 where CategoryID(rawValue: raw).name?.lowercased() == text.lowercased() {
            return CategoryID(rawValue: raw)
        }
        throw ValidationError("unknown category '\(text)': a name (social, email, news, ...) or a number 0–31")
    }

    func apply(to configuration: inout ConsumerConfiguration) {
        for app in hiddenApps { configuration.hide(app: app) }
        configuration.hiddenCategories = CategorySet(hiddenCategories)
        configuration.fetchesSilent = !skipSilent
        if let maxBacklog { configuration.maximumPreExisting = maxBacklog }
    }
}
