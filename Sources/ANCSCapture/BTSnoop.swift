/// A btsnoop capture (the format of Android's HCI log, Bumble's snooper,
/// `btmon -w` and Ellisys exports): a 16-byte header, then records of one HCI
/// packet each.
public struct BTSnoopRecord: Hashable, Sendable {
    public enum PacketType: UInt8, Hashable, Sendable {
        case command = 1
        case acl = 2
        case sco = 3
        case event = 4
        case iso = 5
    }

    /// Host → controller (`sent`) or controller → host (`received`), as the
    /// capturing host saw it.
    public enum Direction: Hashable, Sendable {
        case sent
        case received
    }

    /// 1-based record number in the file.
    public var number: Int
    public var type: PacketType
    public var direction: Direction
    /// Microseconds since midnight, January 1st 0 AD (the btsnoop epoch).
    public var timestamp: UInt64
    /// The packet without its H4 type byte.
    public var payload: [UInt8]
}

public struct CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum BTSnoop {
    /// Datalink 1001: un-encapsulated HCI (type from the flags); 1002: HCI UART (H4, a type byte first).
    public static let datalinkHCI: UInt32 = 1001
    public static let datalinkH4: UInt32 = 1002

    /// Parses a whole file. Records of a type other than command, ACL, SCO,
    /// event or ISO are an error naming the record; a file cut in the middle
    /// of a record ends with the last whole record.
    public static func parse(_ bytes: [UInt8]) throws(CaptureError) -> [BTSnoopRecord] {
        guard bytes.count >= 16, Array(bytes[0..<8]) == Array("btsnoop\0".utf8) else {
            throw CaptureError("not a btsnoop file (no `btsnoop` signature)")
        }
        let version = be32(bytes, 8)
        guard version == 1 else { throw CaptureError("btsnoop version \(version), only version 1 is known") }
        let datalink = be32(bytes, 12)
        guard datalink == datalinkHCI || datalink == datalinkH4 else {
            throw CaptureError("btsnoop datalink \(datalink), only 1001 (HCI) and 1002 (H4) are known")
        }
        var records: [BTSnoopRecord] = []
        var offset = 16
        while offset + 24 <= bytes.count {
            let included = Int(be32(bytes, offset + 4))
            let flags = be32(bytes, offset + 8)
            let timestamp = UInt64(be32(bytes, offset + 16)) << 32 | UInt64(be32(bytes, offset + 20))
            let start = offset + 24
            guard start + included <= bytes.count else { break }
            let number = records.count + 1
            var data = Array(bytes[start..<(start + included)])
            let type: BTSnoopRecord.PacketType
            if datalink == datalinkH4 {
                guard let first = data.first, let parsed = BTSnoopRecord.PacketType(rawValue: first) else {
                    throw CaptureError("record \(number) (offset \(offset)): unknown H4 packet type \(data.first.map { "0x" + String($0, radix: 16) } ?? "none")")
                }
                type = parsed
                data.removeFirst()
            } else {
                let control = flags & 0b10 != 0
                let received = flags & 0b01 != 0
                type = control ? (received ? .event : .command) : .acl
            }
            records.append(BTSnoopRecord(number: number, type: type, direction: flags & 1 == 0 ? .sent : .received,
                                         timestamp: timestamp, payload: data))
            offset = start + included
        }
        return records
    }

    static func be32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}

func le16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
