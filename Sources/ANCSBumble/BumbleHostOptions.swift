import ANCS
import ANCSFormat
import ANCSRuntime

/// How to start the Bumble host: which controller, as whom, with what.
public struct BumbleHostOptions: Sendable {
    /// A Bumble transport: `usb:0`, `usb:2fe3:000b`, `serial:/dev/ttyACM0,1000000`,
    /// `hci-socket:0`, `tcp-client:127.0.0.1:9001`, `vhci`, ...
    public var transport: String
    /// This device's random static address (two top bits set). Nil: the host's default.
    public var address: String?
    /// The advertised (serve) or own (consume) device name.
    public var name: String?
    /// Bonding keys file (JSON, created when missing). Nil: keys live in memory only.
    public var keys: String?
    /// Write a btsnoop capture of the HCI traffic to this file.
    public var snoop: String?
    /// The largest ATT MTU accepted (serve) or asked for (consume). Nil: 517.
    public var mtu: Int?
    /// Connect to this address rather than the first advertiser soliciting ANCS
    /// (consume, or serve with `central`).
    public var peer: String?
    /// consume: connect again after a disconnection.
    public var reconnect: Bool
    /// consume: also discover AMS and CTS on each link, for a `MediaClient`
    /// (`BumbleClientTransport` is then its `MediaClientTransport` too).
    /// serve: also publish AMS and CTS, for a `MediaServer`
    /// (`BumbleServerTransport` is then its `MediaServerTransport` too).
    public var media: Bool = false
    /// serve: be the central, as an iPhone is: connect to the accessory
    /// advertising the ANCS solicitation (and again after a disconnection)
    /// instead of advertising.
    public var central: Bool
    /// consume: be the peripheral, as an accessory is: advertise the ANCS
    /// solicitation and wait for the phone instead of scanning.
    public var peripheral: Bool
    /// How this device pairs.
    public var pairing: BumblePairing
    /// Numeric comparison: ask (`BumbleHostNotice.pairingConfirmation`, answered
    /// with `confirmPairing`) instead of confirming.
    public var askPairing: Bool = false
    /// Seconds to scan for the peer (and to connect) before giving up. Nil: 20.
    public var scanTimeout: Double?
    /// serve: refuse writes enabling the Notification Source or Data Source
    /// CCCD with ATT 0x08 Insufficient Authorization until this many seconds
    /// after the first encrypted link with a peer, as an iPhone does until
    /// its user allows notifications for the accessory (it asks once: later
    /// links of that peer follow the same answer). Nil or 0: allowed at once.
    public var allowNotificationsAfter: Double?
    /// Host log level on stderr (Python logging: WARNING, INFO, DEBUG).
    public var logLevel: String?
    /// How long to wait for the host to report `ready` (90 s by default: importing
    /// Bumble on a slow machine or an emulated one takes tens of seconds). A host
    /// that cannot start reports it at once.
    public var startTimeout: Duration

    public init(transport: String, address: String? = nil, name: String? = nil, keys: String? = nil,
                snoop: String? = nil, mtu: Int? = nil, peer: String? = nil, reconnect: Bool = false,
                central: Bool = false, peripheral: Bool = false, pairing: BumblePairing = .numericComparison,
                scanTimeout: Double? = nil, logLevel: String? = nil, startTimeout: Duration = .seconds(90)) {
        self.transport = transport
        self.address = address
        self.name = name
        self.keys = keys
        self.snoop = snoop
        self.mtu = mtu
        self.peer = peer
        self.reconnect = reconnect
        self.central = central
        self.peripheral = peripheral
        self.pairing = pairing
        self.scanTimeout = scanTimeout
        self.logLevel = logLevel
        self.startTimeout = startTimeout
    }

    func arguments(role: String) -> [String] {
        // The UUIDs come from the core (ANCSUUID), not from a copy in the script.
        var arguments = ["--transport", transport, "--ancs-uuids",
                         ([ANCSUUID.service] + ANCSCharacteristic.allCases.map(\.uuid)).map(\.description).joined(separator: ",")]
        if let address { arguments += ["--address", address] }
        if let name { arguments += ["--name", name] }
        if let keys { arguments += ["--keys", keys] }
        if let snoop { arguments += ["--snoop", snoop] }
        if let mtu { arguments += ["--mtu", "\(mtu)"] }
        if let logLevel { arguments += ["--log-level", logLevel] }
        if let peer { arguments += ["--peer", peer] }
        arguments += ["--pairing", pairing.rawValue]
        if askPairing { arguments.append("--ask-pairing") }
        if let scanTimeout { arguments += ["--scan-timeout", "\(scanTimeout)"] }
        if media { arguments += ["--media-uuids", MediaCharacteristic.bumbleUUIDArgument] }
        if role == "consume" {
            if reconnect { arguments.append("--reconnect") }
            if peripheral { arguments.append("--peripheral") }
        } else {
            if central { arguments.append("--central") }
            if let allowNotificationsAfter, allowNotificationsAfter > 0 {
                arguments += ["--allow-notifications-after", "\(allowNotificationsAfter)"]
            }
        }
        return arguments
    }
}

/// How a Bumble host pairs (LE Secure Connections and bonding either way).
public enum BumblePairing: String, Sendable, CaseIterable {
    /// As an iPhone: IO capability DisplayYesNo with MITM protection, so a
    /// DisplayYesNo or KeyboardDisplay peer pairs by numeric comparison. The
    /// 6-digit code is reported (`BumbleHostNotice.pairingCode`) and confirmed.
    case numericComparison = "numeric"
    /// NoInputNoOutput, no MITM: Just Works.
    case justWorks = "just-works"
}

/// What the host reports besides the transport's events: what it is doing
/// and how pairings go.
public enum BumbleHostNotice: Sendable, Hashable {
    /// What the host is doing: scanning, connecting, pairing, discovering.
    case status(String)
    /// Numeric comparison on `connection`: the code this device shows (and confirmed).
    case pairingCode(connection: Int, code: String)
    /// Numeric comparison on `connection` with `askPairing`: the code, waiting for
    /// `confirmPairing` (no answer within 30 s is no).
    case pairingConfirmation(connection: Int, code: String)
    /// Pairing on `connection` succeeded; `authenticated`: with MITM protection (numeric comparison).
    case paired(connection: Int, authenticated: Bool)
    /// Pairing on `connection` failed with the SMP reason; the host ends the link.
    case pairingFailed(connection: Int, reason: String)
    /// serve, with `allowNotificationsAfter`: the consumer on `connection`
    /// wrote a CCCD to subscribe and was answered with this ATT error (0x08
    /// Insufficient Authorization: notifications are not allowed yet).
    case subscriptionRefused(connection: Int, characteristic: ANCSCharacteristic, code: ATTErrorCode)
    /// serve, with `allowNotificationsAfter`: from now on the subscriptions of
    /// this peer (an address) are accepted.
    case notificationsAllowed(peer: String)

    /// The notice a host line carries, or nil when it is no notice.
    init?(_ fields: [Substring]) {
        guard let kind = fields.first else { return nil }
        let rest = fields.dropFirst()
        func connection() -> Int? { rest.first.flatMap { Int($0) } }
        switch kind {
        case "status":
            self = .status(rest.joined(separator: " "))
        case "pairing-code":
            guard let connection = connection(), rest.count > 1 else { return nil }
            let code = String(rest[rest.startIndex + 1])
            self = rest.count > 2 && rest[rest.startIndex + 2] == "ask"
                ? .pairingConfirmation(connection: connection, code: code) : .pairingCode(connection: connection, code: code)
        case "paired":
            guard let connection = connection(), rest.count > 1 else { return nil }
            self = .paired(connection: connection, authenticated: rest[rest.startIndex + 1] == "numeric")
        case "pairing-failed":
            guard let connection = connection() else { return nil }
            self = .pairingFailed(connection: connection, reason: rest.dropFirst().joined(separator: " "))
        case "subscription-refused":
            guard let connection = connection(), rest.count > 2,
                  let characteristic = ANCSCharacteristic(shortName: rest[rest.startIndex + 1]),
                  case .attError(let code) = parseResult(["att", rest[rest.startIndex + 2]]) else { return nil }
            self = .subscriptionRefused(connection: connection, characteristic: characteristic, code: code)
        case "notifications-allowed":
            guard let peer = rest.first else { return nil }
            self = .notificationsAllowed(peer: String(peer))
        default:
            return nil
        }
    }
}

/// What the host says when it is ready.
public struct BumbleHostReady: Sendable, Hashable {
    /// This device's address.
    public var address: String
    /// serve: the value handles of Notification Source, Control Point and Data Source.
    public var handles: [Int]
}

/// The handshake every host transport goes through: the protocol line, then
/// `ready`, within a timeout, or the reason it failed.
final class Handshake: Sendable {
    private let pending = PendingTable<Result<BumbleHostReady, TransportError>>()
    private let role: String

    init(role: String) { self.role = role }

    /// Feeds a line seen before `ready`; returns true when it was a handshake line.
    func consume(_ line: String, fields: [Substring]) -> Bool {
        if fields.first == "ancs-bumble" {
            let version = fields.count > 1 ? String(fields[1]) : "?"
            if version != "\(BumbleEnvironment.protocolVersion)" || fields.count < 3 || fields[2] != role {
                pending.close(with: .failure(TransportError(.unavailable, 
                    "the Bumble host speaks `\(line)`, expected `ancs-bumble \(BumbleEnvironment.protocolVersion) \(role)`")))
            }
            return true
        }
        if fields.first == "ready" {
            let address = fields.count > 1 ? String(fields[1]) : "?"
            let handles = fields.dropFirst(2).compactMap { Int($0) }
            pending.close(with: .success(BumbleHostReady(address: address, handles: handles)))
            return true
        }
        return false
    }

    func failed(_ error: TransportError) {
        pending.close(with: .failure(error))
    }

    func wait(timeout: Duration) async throws(TransportError) -> BumbleHostReady {
        let result = await pending.perform(
            timeout: timeout, expired: .failure(TransportError(.timedOut, "the Bumble host did not report ready within \(timeout)")),
            { _ in true }, failed: .failure(TransportError(.stackEnded, "the Bumble host is gone")))
        return try result.get()
    }
}

/// A result line's fields: `ok`, `att 0xNN`, or anything else (failed).
func parseResult(_ fields: ArraySlice<Substring>) -> ATTResult {
    guard let first = fields.first else { return .transportFailure }
    if first == "ok" { return .success }
    if first == "att", let text = fields.dropFirst().first, let code = Hex.byte(text) {
        return .attError(ATTErrorCode(code))
    }
    return .transportFailure
}

/// A result line's fields with a read's value: `ok <hex>` (`ok` alone: no
/// value, a write's), `att 0xNN`, or anything else (failed, as is a value
/// that is not hex).
func parseReadResult(_ fields: ArraySlice<Substring>) -> ATTReadResult {
    switch parseResult(fields) {
    case .success:
        guard let text = fields.dropFirst().first else { return .value([]) }
        return hexBytes(text).map { .value($0) } ?? .transportFailure
    case .attError(let code): return .attError(code)
    case .transportFailure: return .transportFailure
    }
}

/// Bytes as the line protocol writes them: hex digit pairs, `-` for none.
func hexBytes(_ text: Substring) -> [UInt8]? {
    if text == "-" { return [] }
    guard !text.isEmpty, let bytes = try? Hex.bytes(text), bytes.count * 2 == text.utf8.count else { return nil }
    return bytes
}

/// Bytes as the line protocol writes them: lowercase hex, `-` for none.
func hexString(_ bytes: [UInt8]) -> String {
    bytes.isEmpty ? "-" : Hex.string(bytes)
}

