import ANCS

/// What the HCI traffic of a capture says about LE links: connections,
/// encryption, and whole L2CAP frames (ACL fragments reassembled per
/// connection and direction).
public enum LinkItem: Hashable, Sendable {
    case connected(handle: Int, peer: String, isCentral: Bool)
    case disconnected(handle: Int, reason: UInt8)
    case encryption(handle: Int, enabled: Bool)
    case frame(L2CAPFrame)
    /// An ACL fragment that cannot be placed (a continuation with no start,
    /// a start while a frame was incomplete); the partial frame is dropped.
    case malformed(handle: Int, record: Int, reason: String)
}

public struct L2CAPFrame: Hashable, Sendable {
    public var handle: Int
    public var direction: BTSnoopRecord.Direction
    public var channel: Int
    public var payload: [UInt8]
    /// The record holding its last fragment.
    public var record: Int
    public var timestamp: UInt64
}

/// Reassembles ACL fragments into L2CAP frames and decodes the link events.
///
/// Connections are named by their HCI handle; in a capture of several
/// controllers (btmon's monitor format), a connection of controller N is
/// N × 4096 + its handle (handles are 12 bits), so links of different
/// controllers never mix.
public struct HCIReassembler: Sendable {
    private struct Key: Hashable { var handle: Int; var direction: BTSnoopRecord.Direction }
    /// The frame so far, its 4-byte L2CAP header included.
    private struct Partial { var bytes: [UInt8] }
    private var partial: [Key: Partial] = [:]

    public init() {}

    public mutating func feed(_ record: BTSnoopRecord) -> [LinkItem] {
        switch record.type {
        case .acl: return acl(record)
        case .event: return event(record)
        default: return []
        }
    }

    private mutating func acl(_ record: BTSnoopRecord) -> [LinkItem] {
        let data = record.payload
        guard data.count >= 4 else { return [.malformed(handle: -1, record: record.number, reason: "ACL header cut")] }
        let header = le16(data, 0)
        let handle = record.controller << 12 | header & 0x0FFF
        let boundary = (header >> 12) & 0b11
        let length = le16(data, 2)
        guard data.count >= 4 + length else { return [.malformed(handle: handle, record: record.number, reason: "ACL data cut")] }
        let body = Array(data[4..<(4 + length)])
        let key = Key(handle: handle, direction: record.direction)
        var items: [LinkItem] = []
        if boundary == 0b01 {
            guard var current = partial[key] else {
                return [.malformed(handle: handle, record: record.number, reason: "continuation without a start")]
            }
            current.bytes += body
            partial[key] = current
        } else {
            if partial[key] != nil {
                items.append(.malformed(handle: handle, record: record.number, reason: "new frame while one was incomplete"))
            }
            partial[key] = Partial(bytes: body)
        }
        if let current = partial[key], current.bytes.count >= 4, current.bytes.count >= 4 + le16(current.bytes, 0) {
            partial[key] = nil
            let length = le16(current.bytes, 0)
            items.append(.frame(L2CAPFrame(handle: handle, direction: record.direction, channel: le16(current.bytes, 2),
                                           payload: Array(current.bytes[4..<(4 + length)]), record: record.number,
                                           timestamp: record.timestamp)))
        }
        return items
    }

    private mutating func event(_ record: BTSnoopRecord) -> [LinkItem] {
        let data = record.payload
        guard data.count >= 2 else { return [] }
        let code = data[0]
        let body = Array(data.dropFirst(2))
        switch code {
        case 0x05 where body.count >= 4 && body[0] == 0:  // Disconnection Complete
            let handle = record.controller << 12 | le16(body, 1) & 0x0FFF
            partial = partial.filter { $0.key.handle != handle }
            return [.disconnected(handle: handle, reason: body[3])]
        case 0x08 where body.count >= 4 && body[0] == 0:  // Encryption Change
            return [.encryption(handle: record.controller << 12 | le16(body, 1) & 0x0FFF, enabled: body[3] != 0)]
        case 0x3E where !body.isEmpty:  // LE Meta
            let subevent = body[0]
            // LE Connection Complete (0x01), Enhanced (0x0A, v2 0x29): status, handle, role, peer type, peer address.
            guard [0x01, 0x0A, 0x29].contains(subevent), body.count >= 12, body[1] == 0 else { return [] }
            let handle = record.controller << 12 | le16(body, 2) & 0x0FFF
            let address = Hex.string(body[6..<12].reversed(), uppercase: true, separator: ":")
            return [.connected(handle: handle, peer: address, isCentral: body[4] == 0)]
        default:
            return []
        }
    }
}
