import ANCS
import Synchronization

// The two seams between the runtime and a Bluetooth stack: a GATT client
// (the NC's side of ANCS) and a GATT server (the NP's side). Each is a
// stream of events in arrival order plus a few async operations whose
// results are ATT results, so a stack adapter stays thin: it translates, it
// never decides.

// MARK: - GATT client (Notification Consumer)

/// What a GATT client transport reports, in the order it happened.
public enum GATTClientEvent: Hashable, Sendable {
    /// Connected, encrypted, ANCS discovered; the ATT MTU in force.
    case linkUp(mtu: Int)
    /// The link is gone. Every operation in progress has returned or will
    /// return `.transportFailure`.
    case linkDown
    /// A GATT notification from one of the ANCS characteristics.
    case notification(ANCSCharacteristic, [UInt8])
    /// Service Changed was indicated and discovery ran again: ANCS is there
    /// (true) or gone (false).
    case serviceChanged(published: Bool)
    case mtuChanged(Int)
}

/// The NC's view of a GATT client, one link at a time.
///
/// **BlueZ (D-Bus):** `linkUp` once `org.bluez.Device1` reports `Connected`,
/// `Paired` (or the link is encrypted) and `ServicesResolved` with an
/// `org.bluez.GattService1` whose UUID is `ANCSUUID.service`; the
/// characteristics are the `GattCharacteristic1` objects under it, found by
/// UUID (unknown ones ignored). The MTU is the characteristic's `MTU`
/// property. `notification` comes from `PropertiesChanged` of a
/// characteristic's `Value` (or from the socket of `AcquireNotify`), which
/// D-Bus delivers in order. `subscribe`/`unsubscribe` are `StartNotify` /
/// `StopNotify`; `writeControlPoint` is `WriteValue(value, {"type": "request"})`.
/// A D-Bus error reply maps to a result with `BlueZ.result(errorName:message:)`.
/// BlueZ handles the Service Changed indication and re-discovery itself:
/// `serviceChanged` follows the ANCS `GattService1` object leaving
/// (`InterfacesRemoved`) or coming back (`InterfacesAdded`, once its
/// characteristics are there); `linkDown` follows `Connected` going false.
///
/// **Bumble (a Python host process, line protocol):** the host does the
/// connection, pairing, discovery and CCCD writes with `bumble.gatt_client`
/// and prints one line per event (`link-up 185`, `notify ds <hex>`, ...), in
/// the order its event loop saw them. Each operation is a request line with
/// an id; the reply line carries `ok`, `att 0xNN` (from Bumble's
/// `ProtocolError.error_code`) or `failed` (→ `.transportFailure`).
///
/// Rules for an implementation:
/// - `events` is iterated by one task, once; notifications stay in arrival
///   order relative to each other and to `linkUp`/`linkDown`.
/// - The runtime issues operations one at a time (ATT allows one request in
///   flight). Each returns exactly once; on link loss, and when the calling
///   task is cancelled, with `.transportFailure`.
public protocol GATTClientTransport: Sendable {
    var events: AsyncStream<GATTClientEvent> { get }
    /// Enables notifications (writes the CCCD); BlueZ `StartNotify`.
    func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult
    /// Disables notifications; BlueZ `StopNotify`.
    func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult
    /// Write with response to the Control Point; BlueZ `WriteValue` with `type: request`.
    func writeControlPoint(_ value: [UInt8]) async -> ATTResult
}

// MARK: - D-Bus error mapping

/// How BlueZ reports ATT outcomes as D-Bus errors, both ways.
public enum BlueZ {
    /// The result of a failed `GattCharacteristic1` call (client side).
    ///
    /// BlueZ answers an ATT error response with a D-Bus error: a few codes
    /// get their own names (`NotPermitted` "Not paired" for insufficient
    /// authentication, `NotAuthorized`, `NotSupported`, `InvalidArguments`);
    /// every other code, the ANCS ones included, comes as
    /// `org.bluez.Error.Failed` "Operation failed with ATT error: 0xa2".
    /// Errors without an ATT code (not connected, in progress, a D-Bus
    /// timeout) are transport failures.
    public static func result(errorName: String, message: String) -> ATTResult {
        func att(_ code: UInt8) -> ATTResult { .attError(ANCSErrorCode(rawValue: code)) }
        switch errorName {
        case "org.bluez.Error.Failed":
            if let code = attCode(in: message) { return att(code) }
            return .transportFailure
        case "org.bluez.Error.NotPermitted":
            if message.contains("Read not permitted") { return att(0x02) }
            if message.contains("Write not permitted") { return att(0x03) }
            if message.contains("Not paired") { return att(0x05) }
            return .transportFailure
        case "org.bluez.Error.NotAuthorized": return att(0x08)
        case "org.bluez.Error.NotSupported": return att(0x06)
        case "org.bluez.Error.InvalidArguments", "org.bluez.Error.InvalidArgs":
            if message.contains("Invalid offset") { return att(0x07) }
            if message.contains("Invalid Length") { return att(0x0D) }
            return .transportFailure
        case "org.bluez.Error.InvalidValueLength": return att(0x0D)
        case "org.bluez.Error.InvalidOffset": return att(0x07)
        default: return .transportFailure
        }
    }

    /// The D-Bus error a GATT application (server side) answers `WriteValue`
    /// with, or nil for success.
    ///
    /// BlueZ turns `org.bluez.Error.Failed` with a message that is just a
    /// number into that ATT code, but only for application errors
    /// 0x80–0x9F; it answers the ANCS codes 0xA0–0xA3 as 0x0E (Unlikely
    /// Error). A BlueZ-hosted NP therefore cannot send the exact ANCS code.
    public static func error(for result: ATTResult) -> (name: String, message: String)? {
        switch result {
        case .success:
            return nil
        case .transportFailure:
            return ("org.bluez.Error.Failed", "transport failure")
        case .attError(let code):
            switch code.rawValue {
            case 0x03: return ("org.bluez.Error.NotPermitted", "Write not permitted")
            case 0x06: return ("org.bluez.Error.NotSupported", "Not supported")
            case 0x07: return ("org.bluez.Error.InvalidOffset", "Invalid offset")
            case 0x08: return ("org.bluez.Error.NotAuthorized", "Not authorized")
            case 0x0D: return ("org.bluez.Error.InvalidValueLength", "Invalid length")
            default: return ("org.bluez.Error.Failed", "0x" + hex(code.rawValue))
            }
        }
    }

    /// The code in "... ATT error: 0xNN ..." (hex digits in either case).
    static func attCode(in message: String) -> UInt8? {
        guard let marker = message.firstRange(of: "ATT error: 0x") else { return nil }
        var value: UInt16 = 0
        var digits = 0
        for character in message[marker.upperBound...] {
            guard let digit = character.hexDigitValue else { break }
            value = value * 16 + UInt16(digit)
            digits += 1
            if digits > 2 { return nil }
        }
        return digits == 0 ? nil : UInt8(value)
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}

// MARK: - GATT server (Notification Provider)

/// What a GATT server transport reports, in the order it happened.
public enum GATTServerEvent: Sendable {
    /// A consumer connected (and the link is encrypted) with this ATT MTU.
    case connected(ConnectionID, mtu: Int)
    /// Its link is gone; replies to its pending writes go nowhere.
    case disconnected(ConnectionID)
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
/// **BlueZ (D-Bus):** the service and its three characteristics are
/// objects of a GATT application registered with
/// `GattManager1.RegisterApplication`. `connected`/`disconnected` follow
/// `Device1.Connected`; the `ConnectionID` names the device object. A Control
/// Point write arrives as a `WriteValue(value, options)` method call (the
/// `device` option names the connection, `mtu` its MTU); `reply` sends its
/// method return or the D-Bus error from `BlueZ.error(for:)`. BlueZ calls
/// `StartNotify`/`StopNotify` once for all clients, not per device, and
/// `notify` is a `PropertiesChanged` of `Value` (or a write to the
/// `AcquireNotify` socket) that goes to every subscribed client: exact
/// with one consumer connected, which is how an NP on BlueZ is used.
///
/// **Bumble (a Python host process, line protocol):** the host publishes the
/// service with `bumble.gatt.Service` and prints `connected <handle> <mtu>`,
/// `subscription <handle> ns on`, `write <handle> <id> <hex>`. The Control
/// Point's write handler is a coroutine awaiting the `reply <id> ok` or
/// `reply <id> att 0xA2` line and raising `ATT_Error(0xA2)` for the latter,
/// so the exact ANCS code reaches the consumer. `notify` is a
/// `notify <handle> ds <hex>` line, sent with `Device.notify_subscriber`.
///
/// Rules for an implementation: `events` is iterated by one task, once;
/// `notify` calls are sent in the order they are made, and one for a
/// connection that is gone (or not subscribed) is dropped.
public protocol GATTServerTransport: Sendable {
    var events: AsyncStream<GATTServerEvent> { get }
    /// Sends one GATT notification (a value of at most MTU − 3 bytes).
    func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async
}

/// Answers one ATT write request, once: the first call sends the response,
/// later calls do nothing. Dropping it unanswered leaves the client waiting
/// for its ATT timeout, so answer every write.
public struct ATTResponder: Sendable {
    private final class Once: Sendable {
        let respond: Mutex<(@Sendable (ATTResult) -> Void)?>
        init(_ respond: @escaping @Sendable (ATTResult) -> Void) { self.respond = Mutex(respond) }
    }
    private let once: Once

    /// - Parameter respond: sends the response (the D-Bus method return, the reply line).
    public init(_ respond: @escaping @Sendable (ATTResult) -> Void) {
        once = Once(respond)
    }

    public func callAsFunction(_ result: ATTResult) {
        let respond = once.respond.withLock { respond in
            defer { respond = nil }
            return respond
        }
        respond?(result)
    }

    /// Whether the response has been sent.
    public var hasResponded: Bool { once.respond.withLock { $0 == nil } }
}
