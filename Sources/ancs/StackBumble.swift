import ANCS
import ANCSBumble
import ANCSRuntime
import ArgumentParser
import Foundation


/// The options every command on the Bumble stack shares.
struct BumbleStackOptions: ParsableArguments {
    @Option(help: "Bumble: this device's random static address (e.g. F0:F0:F0:F0:F0:F0).") var address: String?
    @Option(help: "The device name this side advertises (BlueZ and Bumble).") var name: String?
    @Option(help: "Bumble: bonding keys file (JSON; created when missing). Without it, bonds last one run.") var keys: String?
    @Option(help: "Bumble: write a btsnoop capture of the HCI traffic to this file (read it with `ancs decode --btsnoop`).") var snoop: String?
    @Option(name: .customLong("bumble-log-level"), help: "Bumble host log level on stderr: warning, info, debug.") var bumbleLogLevel: String?
    @Option(help: "Bumble: how to pair: numeric (DisplayYesNo with MITM protection, as an iPhone; the code is printed and confirmed) or just-works (NoInputNoOutput).")
    var pairing: String = BumblePairing.numericComparison.rawValue
    @Option(help: "Bumble: seconds to scan for the peer (and to connect) before giving up (default 20).") var scanTimeout: Double?

    func validate() throws {
        guard BumblePairing(rawValue: pairing) != nil else {
            throw ValidationError("--pairing must be numeric or just-works, got '\(pairing)'")
        }
        if let scanTimeout, !(scanTimeout > 0 && scanTimeout <= 3600) {
            throw ValidationError("--scan-timeout must be between 0 and 3600 seconds, got \(scanTimeout)")
        }
        if let address {
            let parts = address.split(separator: ":")
            guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else {
                throw ValidationError("--address must look like F0:F0:F0:F0:F0:F0, got '\(address)'")
            }
            guard let first = UInt8(parts[0], radix: 16), first & 0xC0 == 0xC0 else {
                throw ValidationError("--address '\(address)' is not a random static address (its first byte must be C0…FF)")
            }
        }
    }

    func hostOptions(transport: String, mtu: Int?) -> BumbleHostOptions {
        BumbleHostOptions(transport: transport, address: address, name: name, keys: keys, snoop: snoop, mtu: mtu,
                          pairing: BumblePairing(rawValue: pairing) ?? .numericComparison, scanTimeout: scanTimeout,
                          logLevel: bumbleLogLevel)
    }
}

/// Writes setup progress to stderr.
@Sendable func bumbleProgress(_ text: String) {
    FileHandle.standardError.write(Data("bumble: \(text)\n".utf8))
}

/// What the accessory's Bumble host is doing, on stderr (so `--json` output stays events only).
@Sendable func bumbleNotice(_ notice: BumbleHostNotice) {
    switch notice {
    case .status(let text): bumbleProgress(text)
    case .pairingCode(_, let code): bumbleProgress("numeric comparison, code \(code) (confirmed)")
    case .pairingConfirmation(_, let code): bumbleProgress("numeric comparison, code \(code)")
    case .paired(_, let authenticated):
        bumbleProgress("paired (\(authenticated ? "numeric comparison, MITM protection" : "Just Works, no MITM protection"))")
    case .pairingFailed(_, let reason): bumbleProgress("pairing failed: \(reason)")
    case .subscriptionRefused(_, let characteristic, let code):
        bumbleProgress("subscription to \(characteristic) refused with \(code)")
    case .notificationsAllowed(let peer): bumbleProgress("notifications allowed for \(peer)")
    }
}

/// Starts the Bumble host as an NP (GATT server) and returns its transport.
/// `central`: connect to the accessory, as an iPhone does, instead of advertising.
func startBumbleServer(transport: String, options: BumbleStackOptions, mtu: Int?, central: Bool = false, peer: String? = nil,
                       askPairing: Bool = false, allowNotificationsAfter: Double = 0, media: Bool = false,
                       notices: @escaping @Sendable (BumbleHostNotice) -> Void) async throws -> BumbleServerTransport {
    var host = options.hostOptions(transport: transport, mtu: mtu)
    host.media = media
    host.askPairing = askPairing
    host.allowNotificationsAfter = allowNotificationsAfter
    host.central = central
    host.peer = peer
    do {
        return try await BumbleServerTransport.start(host, progress: bumbleProgress, notices: notices)
    } catch {
        throw CommandFailure("bumble:\(transport): \(error)")
    }
}

/// Starts the Bumble host as an NC (GATT client) and returns its transport:
/// the host finds the NP (the first advertiser soliciting ANCS, or `peer`),
/// pairs or re-encrypts, and reports the link.
/// `peripheral`: advertise and wait for the phone, as an accessory does, instead of scanning.
/// `media`: also discover AMS and CTS (the transport is then a `MediaClientTransport` too).
func startBumbleClient(transport: String, options: BumbleStackOptions, mtu: Int?, peer: String?, reconnect: Bool,
                       peripheral: Bool = false, media: Bool = false) async throws -> BumbleClientTransport {
    var host = options.hostOptions(transport: transport, mtu: mtu)
    host.media = media
    host.peer = peer
    host.reconnect = reconnect
    host.peripheral = peripheral
    do {
        return try await BumbleClientTransport.start(host, progress: bumbleProgress, notices: bumbleNotice)
    } catch {
        throw CommandFailure("bumble:\(transport): \(error)")
    }
}

/// `ancs setup bumble`: creates the Python environment the Bumble host runs in.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Prepare a stack: `ancs setup bumble` creates the Python environment with Bumble \(BumbleEnvironment.bumbleVersion).",
        discussion: """
        The environment goes to ANCS_BUMBLE_VENV, or the user cache (~/.cache/swift-ancs/bumble-\(BumbleEnvironment.bumbleVersion); \
        ~/Library/Caches/... on macOS). Needs python3 with venv (Debian: apt-get install python3-venv) and PyPI. \
        ANCS_BUMBLE_PYTHON names a Python that already has bumble, and skips all this.
        """
    )

    @Argument(help: "The stack to prepare: bumble.") var stack: String
    @Option(help: "The Python used to create the environment.") var python = "python3"

    func run() async throws {
        guard stack == "bumble" else { throw CommandFailure("setup: unknown stack '\(stack)'; known: bumble") }
        let directory = BumbleEnvironment.defaultVirtualEnvironment()
        if BumbleEnvironment.isInstalled(directory) {
            printLine("bumble \(BumbleEnvironment.bumbleVersion) is ready at \(directory)")
            return
        }
        do {
            try await BumbleEnvironment.setUp(directory, python3: python, progress: bumbleProgress)
        } catch {
            throw CommandFailure("setup bumble: \(error)")
        }
        printLine("bumble \(BumbleEnvironment.bumbleVersion) is ready at \(directory)")
    }
}
