import ANCS
import Synchronization

// The two seams between the runtime and a Bluetooth stack: a GATT client
// (the NC's side of ANCS) and a GATT server (the NP's side). Each is a
// stream of events in arrival order plus a few async operations whose
// results are ATT results, so a stack adapter stays thin: it translates, it
// never decides.

// MARK: - GATT client (Notification Consumer)

/// What a transport knows of a link when it comes up.
public struct LinkInfo: Hashable, Sendable, CustomStringConvertible {
    /// The ATT MTU in force (23…517).
    public var mtu: Int
    /// The peer as the stack names it (a Bluetooth address, a D-Bus device
    /// path), if it names it.
    public var peer: String?
    /// The link is encrypted (ANCS requires it).
    public var isEncrypted: Bool
    /// The peer is bonded: keys are stored and a reconnection re-encrypts
    /// without pairing.
    public var isBonded: Bool

    public init(mtu: Int, peer: String? = nil, isEncrypted: Bool = true, isBonded: Bool = false) {
        self.mtu = mtu
        self.peer = peer
        self.isEncrypted = isEncrypted
        self.isBonded = isBonded
    }

    public var description: String {
        var parts = ["MTU \(mtu)"]
        if let peer { parts.insert(peer, at: 0) }
        parts.append(isEncrypted ? "encrypted" : "not encrypted")
        if isBonded { parts.append("bonded") }
        return parts.joined(separator: ", ")
    }
}

/// Why a transport stopped working: the stack, the host process or the
/// link's owner is gone. A transport ends its event stream by throwing one
/// (or its own error type), and `run()` of the actor on it rethrows it.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, for a program to act on; `message` says it to a person.
    public enum Kind: String, Hashable, Sendable {
        /// The stack cannot be reached or started: no D-Bus or bluetoothd,
        /// no adapter, no Bumble environment or host program.
        case unavailable
        /// An option or setting names something that is not there.
        case configuration
        /// The system refused access (D-Bus policy, permissions).
        case permission
        /// The stack or host process ended (bluetoothd left the bus, the
        /// host exited or was closed).
        case stackEnded
        /// The link could not be made (connection, pairing, discovery).
        case connectionFailed
        /// A notification or operation was not sent (the connection is
        /// gone, the consumer did not subscribe, the stack refused).
        case notSent
        /// Nothing answered in time.
        case timedOut
    }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// What a GATT client transport reports, in the order it happened.
public enum GATTClientEvent: Hashable, Sendable {
    /// Connected, encrypted, ANCS discovered.
    case linkUp(LinkInfo)
    /// The link is gone. Every operation in progress has returned or will
    /// return `.transportFailure`.
    case linkDown
    /// A GATT notification from one of the ANCS characteristics.
    case notification(ANCSCharacteristic, [UInt8])
    /// Service Changed was indicated and discovery ran again: ANCS is there
    /// (true) or gone (false).
    case serviceChanged(published: Bool)
    case mtuChanged(Int)
    /// The phone no longer has this accessory's bond: reconnecting, the link
    /// could not be encrypted (key missing). The transport drops its stale
    /// bond and lets the phone pair again; the consumer tells
    /// `.health(.bondLost)` until the phone answers again.
    case bondLost
}

/// The NC's view of a GATT client, one link at a time.
///
/// **BlueZ (D-Bus):** `linkUp` once `org.bluez.Device1` reports `Connected`,
/// `Paired` (or the link is encrypted) and `ServicesResolved` with an
/// `org.bluez.GattService1` whose UUID is `ANCSUUID.service`; the
/// characteristics are the `GattCharacteristic1` objects under it, found by
/// UUID (unknown ones ignored). The MTU is the characteristic's `MTU`
/// property. `notification` comes from `PropertiesChanged` of a
/// characteristic's `Value`, which
/// D-Bus delivers in order. `subscribe`/`unsubscribe` are `StartNotify` /
/// `StopNotify`; `writeControlPoint` is `WriteValue(value, {"type": "request"})`.
/// A D-Bus error reply maps to a result with `BlueZ.result(errorName:message:)`.
/// BlueZ handles the Service Changed indication and re-discovery itself:
/// `serviceChanged` follows the ANCS `GattService1` object leaving
/// (`InterfacesRemoved`) or coming back (`InterfacesAdded`, once its
/// characteristics are there); `linkDown` follows `Connected` going false.
///
/// **Bumble (`ANCSBumble`, a Python host process):** the host does the
/// connection, pairing, discovery and CCCD writes and prints one line per
/// event (`link-up <mtu> <peer> <enc> <bonded>`, `notify ds <hex>`, ...), in
/// the order its event loop saw them. Each operation is a request line with
/// an id; its `result <id>` line carries `ok`, `att 0xNN` or `failed`
/// (→ `.transportFailure`). The host subscribes to Service Changed and, when
/// an indication touches ANCS, discovers it again: `service-changed
/// unpublished|published` lines become `serviceChanged`. The protocol:
/// `Sources/ANCSBumble/Host/PROTOCOL.md`.
///
/// Rules for an implementation:
/// - `events` is iterated by one task, once; notifications stay in arrival
///   order relative to each other and to `linkUp`/`linkDown`. It finishes
///   normally when the transport is closed on purpose, and throws the cause
///   when the stack or host process dies.
/// - The runtime issues operations one at a time within a session (ATT
///   allows one request in flight); an operation of an ended session may
///   still be pending when the next session's first one comes, so an
///   adapter serializes its ATT requests itself. Each returns exactly once;
///   on link loss, and when the calling task is cancelled, with
///   `.transportFailure`.
public protocol GATTClientTransport: Sendable {
    var events: AsyncThrowingStream<GATTClientEvent, any Error> { get }
    /// Enables notifications (writes the CCCD); BlueZ `StartNotify`.
    func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult
    /// Disables notifications; BlueZ `StopNotify`.
    func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult
    /// Write with response to the Control Point; BlueZ `WriteValue` with `type: request`.
    func writeControlPoint(_ value: [UInt8]) async -> ATTResult
}

// MARK: - GATT server (Notification Provider)

/// What a GATT server transport reports, in the order it happened.
public enum GATTServerEvent: Sendable {
    /// A consumer connected (and the link is encrypted).
    case linkUp(ConnectionID, LinkInfo)
    /// Its link is gone; replies to its pending writes go nowhere.
    case linkDown(ConnectionID)
    case mtuChanged(ConnectionID, Int)
    /// The consumer wrote a CCCD of an ANCS characteristic; the stack has
    /// already answered that write.
    case subscriptionChanged(ConnectionID, ANCSCharacteristic, enabled: Bool)
    /// A write with response to the Control Point, answered through `reply`
    /// (exactly once; later calls are ignored).
    case controlPointWrite(ConnectionID, [UInt8], reply: ATTResponder)
}

/// The NP's view of a GATT server publishing the ANCS service.
///
/// There is no BlueZ implementation: a GATT application on bluetoothd
/// cannot answer a write with the ANCS codes 0xA0–0xA3 (bluetoothd turns
/// an application's error into an ATT code only for 0x80–0x9F and answers
/// the others 0x0E Unlikely Error), so a phone built on it could not say
/// what ANCS asks it to. The NP side runs on Bumble.
///
/// **Bumble (`ANCSBumble`, a Python host process):** the host publishes the
/// service and prints `connected <conn> <mtu> <peer> <enc> <bonded>`,
/// subscription and `write <conn> <id> <hex>` lines. The Control Point's
/// write handler waits for the `reply <id> ok` or `reply <id> att 0xA2` line
/// and answers with that ATT error, so the exact ANCS code reaches the
/// consumer. `notify` is a `notify <id> <conn> ds <hex>` line answered by
/// `notified <id> ok|failed`. The protocol: `Sources/ANCSBumble/Host/PROTOCOL.md`.
///
/// Rules for an implementation: `events` is iterated by one task, once, and
/// finishes normally when the transport is closed on purpose, throwing the
/// cause when the stack or host process dies. `notify` calls are sent in
/// the order they are made; one that cannot be sent (the connection is
/// gone, the consumer did not subscribe, the stack refused) throws and is
/// not sent.
public protocol GATTServerTransport: Sendable {
    var events: AsyncThrowingStream<GATTServerEvent, any Error> { get }
    /// Sends one GATT notification (a value of at most MTU − 3 bytes).
    func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError)
}

/// Answers one ATT write request, once: the first call sends the response,
/// later calls do nothing. Dropping it unanswered leaves the client waiting
/// for its ATT timeout, so answer every write.
public struct ATTResponder: Sendable {
    private let once: ATTOnce<ATTResult>

    /// - Parameter respond: sends the response (the D-Bus method return, the reply line).
    public init(_ respond: @escaping @Sendable (ATTResult) -> Void) {
        once = ATTOnce(respond)
    }

    public func callAsFunction(_ result: ATTResult) { once(result) }

    /// Whether the response has been sent.
    public var hasResponded: Bool { once.hasResponded }
}

/// A response sent at most once, whoever calls first (`ATTResponder`, `ATTReadResponder`).
final class ATTOnce<Result: Sendable>: Sendable {
    private let respond: Mutex<(@Sendable (Result) -> Void)?>

    init(_ respond: @escaping @Sendable (Result) -> Void) { self.respond = Mutex(respond) }

    func callAsFunction(_ result: Result) {
        let respond = respond.withLock { respond in
            defer { respond = nil }
            return respond
        }
        respond?(result)
    }

    var hasResponded: Bool { respond.withLock { $0 == nil } }
}
