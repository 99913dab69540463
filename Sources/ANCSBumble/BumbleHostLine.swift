import ANCS
import ANCSRuntime

/// A line the Bumble host prints (Host/PROTOCOL.md), parsed once: the
/// transports switch on these cases instead of reading fields by position.
/// nil for a line that is not well formed; the caller reports it.
enum BumbleHostLine: Sendable, Hashable {
    // Both roles
    case notice(BumbleHostNotice)
    /// The host is about to exit; its exit reports the reason.
    case fatal(String)
    /// An error the host reports and goes on after.
    case error(String)
    // serve
    case connected(ConnectionID, LinkInfo)
    case disconnected(ConnectionID)
    case connectionMTU(ConnectionID, Int)
    case subscription(ConnectionID, ANCSCharacteristic, enabled: Bool)
    case write(ConnectionID, id: Int, value: [UInt8])
    /// A CCCD of AMS or CTS written (with `media`).
    case mediaSubscription(ConnectionID, MediaCharacteristic, enabled: Bool)
    /// A write to an AMS characteristic, held until `reply <id>`.
    case mediaWrite(ConnectionID, id: Int, AMSCharacteristic, value: [UInt8])
    /// A read of an AMS or CTS characteristic, held until `reply-read <id>` (or `reply <id>`).
    case mediaRead(ConnectionID, id: Int, MediaCharacteristic)
    /// The outcome of a `notify` line: `ok` or `failed <reason>`.
    case notified(id: Int, outcome: String)
    /// The outcome of an `unpublish` (published false) or `publish` line:
    /// `<start> <end> <clients>` or `failed <reason>`.
    case serviceChange(id: Int, published: Bool, outcome: String)
    /// The outcome of a `forget-bonds` line: how many bonds were forgotten.
    case bondsForgotten(id: Int, outcome: String)
    // consume
    /// `media`: the AMS and CTS discovery found (nil when the host was not asked to look).
    case linkUp(LinkInfo, media: BumbleMediaServices?)
    case linkDown
    case notification(ANCSCharacteristic, [UInt8])
    case mediaNotification(MediaCharacteristic, [UInt8])
    case mtu(Int)
    /// The end of an operation; a read's `ok` carries the value (a write's, none).
    case result(id: Int, ATTReadResult)
    /// Service Changed was indicated and ANCS discovered again: there (true) or gone (false).
    case serviceChanged(published: Bool)
    /// Service Changed touched AMS or CTS: what discovery finds now.
    case mediaChanged(BumbleMediaServices)
    /// The link ended and the host does not reconnect.
    case finished
    /// No link could be made and none will be tried.
    case failed(String)

    init?(_ fields: [Substring], line: String) {
        guard let kind = fields.first else { return nil }
        if let notice = BumbleHostNotice(fields) {
            self = .notice(notice)
            return
        }
        func int(_ index: Int) -> Int? { index < fields.count ? Int(fields[index]) : nil }
        func connection(_ index: Int) -> ConnectionID? { int(index).flatMap { UInt32(exactly: $0) }.map { ConnectionID(rawValue: $0) } }
        func flag(_ index: Int) -> Bool { index < fields.count && fields[index] == "1" }
        func rest(from index: Int) -> String { fields.dropFirst(index).joined(separator: " ") }
        switch kind {
        case "fatal": self = .fatal(rest(from: 1))
        case "error": self = .error(String(line.dropFirst("error ".count)))
        case "connected":
            guard let connection = connection(1), let mtu = int(2) else { return nil }
            let peer = fields.count > 3 ? String(fields[3]) : nil
            self = .connected(connection, LinkInfo(mtu: mtu, peer: peer, isEncrypted: int(4) == 1, isBonded: int(5) == 1))
        case "disconnected":
            guard let connection = connection(1) else { return nil }
            self = .disconnected(connection)
        case "mtu" where fields.count > 2:
            guard let connection = connection(1), let mtu = int(2) else { return nil }
            self = .connectionMTU(connection, mtu)
        case "mtu":
            guard let mtu = int(1) else { return nil }
            self = .mtu(mtu)
        case "subscription":
            guard let connection = connection(1), fields.count > 3 else { return nil }
            if let characteristic = ANCSCharacteristic(shortName: fields[2]) {
                self = .subscription(connection, characteristic, enabled: fields[3] == "on")
            } else if let characteristic = MediaCharacteristic(bumbleName: fields[2]) {
                self = .mediaSubscription(connection, characteristic, enabled: fields[3] == "on")
            } else {
                return nil
            }
        case "media-write":
            guard let connection = connection(1), let id = int(2), fields.count > 4,
                  case .ams(let characteristic)? = MediaCharacteristic(bumbleName: fields[3]), let value = hexBytes(fields[4]) else { return nil }
            self = .mediaWrite(connection, id: id, characteristic, value: value)
        case "media-read":
            guard let connection = connection(1), let id = int(2), fields.count > 3,
                  let characteristic = MediaCharacteristic(bumbleName: fields[3]) else { return nil }
            self = .mediaRead(connection, id: id, characteristic)
        case "write":
            guard let connection = connection(1), let id = int(2), fields.count > 3, let value = hexBytes(fields[3]) else { return nil }
            self = .write(connection, id: id, value: value)
        case "notified":
            guard let id = int(1) else { return nil }
            self = .notified(id: id, outcome: rest(from: 2))
        case "published", "unpublished":
            guard let id = int(1), fields.count > 2 else { return nil }
            self = .serviceChange(id: id, published: kind == "published", outcome: rest(from: 2))
        case "bonds-forgotten":
            guard let id = int(1), fields.count > 2 else { return nil }
            self = .bondsForgotten(id: id, outcome: rest(from: 2))
        case "service-changed":
            guard fields.count > 1, fields[1] == "published" || fields[1] == "unpublished" else { return nil }
            self = .serviceChanged(published: fields[1] == "published")
        case "link-up":
            guard let mtu = int(1) else { return nil }
            var media: BumbleMediaServices?
            if fields.count > 5 {
                guard let found = BumbleMediaServices(fields[5]) else { return nil }
                media = found
            }
            self = .linkUp(LinkInfo(mtu: mtu, peer: fields.count > 2 ? String(fields[2]) : nil, isEncrypted: flag(3), isBonded: flag(4)),
                           media: media)
        case "link-down": self = .linkDown
        case "notify":
            guard fields.count > 2, let value = hexBytes(fields[2]) else { return nil }
            if let characteristic = ANCSCharacteristic(shortName: fields[1]) {
                self = .notification(characteristic, value)
            } else if let characteristic = MediaCharacteristic(bumbleName: fields[1]) {
                self = .mediaNotification(characteristic, value)
            } else {
                return nil
            }
        case "media-changed":
            guard fields.count > 1, let media = BumbleMediaServices(fields[1]) else { return nil }
            self = .mediaChanged(media)
        case "result":
            guard fields.count > 2, let id = int(1) else { return nil }
            self = .result(id: id, parseReadResult(fields.dropFirst(2)))
        case "finished": self = .finished
        case "failed": self = .failed(rest(from: 1))
        default: return nil
        }
    }
}
