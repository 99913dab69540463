// The options several subcommands share: `--log-level`, `--stack` and the
// usage checks made before anything runs, logging, and the display's filters.

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
        switch event {
        case .ready, .updated, .displayFailed: break
        default: log(event.consumerEvent)
        }
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
