/// A btsnoop capture (the format of Android's HCI log, Bumble's snooper,
/// `btmon -w` and Ellisys exports): a 16-byte header, then records of one HCI
/// packet each (or, in BlueZ's monitor format, of one monitor event).
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
    /// The controller (`hciN`) in a monitor capture of several; 0 otherwise.
    public var controller: Int = 0
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
    /// Datalink 2001: BlueZ's monitor format (`btmon -w`): the flags carry the
    /// controller index (high 16 bits) and an opcode (low 16 bits) saying
    /// what the record is. HCI packets of every controller are kept; the
    /// rest (controllers added and removed, system notes, logs, management
    /// traffic) is skipped.
    public static let datalinkMonitor: UInt32 = 2001

    /// A monitor record's opcode as an HCI packet: its type and direction, nil when it is not HCI.
    static func monitorPacket(_ opcode: UInt32) -> (BTSnoopRecord.PacketType, BTSnoopRecord.Direction)? {
        switch opcode {
        case 2: (.command, .sent)
        case 3: (.event, .received)
        case 4: (.acl, .sent)
        case 5: (.acl, .received)
        case 6: (.sco, .sent)
        case 7: (.sco, .received)
        case 18: (.iso, .sent)
        case 19: (.iso, .received)
        // 0 New Index, 1 Delete Index, 8 Open Index, 9 Close Index, 10 Index Info,
        // 11 Vendor Diagnostic, 12 System Note, 13 User Logging, 14–17 management
        // (control) traffic, and anything newer: not HCI.
        default: nil
        }
    }

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
        guard datalink == datalinkHCI || datalink == datalinkH4 || datalink == datalinkMonitor else {
            throw CaptureError("btsnoop datalink \(datalink), only 1001 (HCI), 1002 (H4) and 2001 (Linux monitor, btmon) are known")
        }
        var records: [BTSnoopRecord] = []
        var offset = 16
        var number = 0
        while offset + 24 <= bytes.count {
            let included = Int(be32(bytes, offset + 4))
            let flags = be32(bytes, offset + 8)
            let timestamp = UInt64(be32(bytes, offset + 16)) << 32 | UInt64(be32(bytes, offset + 20))
            let start = offset + 24
            guard start + included <= bytes.count else { break }
            // The record's place in the file, counting the records skipped.
            number += 1
            var data = Array(bytes[start..<(start + included)])
            let type: BTSnoopRecord.PacketType
            if datalink == datalinkMonitor {
                offset = start + included
                guard let (packetType, direction) = monitorPacket(flags & 0xFFFF) else { continue }
                records.append(BTSnoopRecord(number: number, type: packetType, direction: direction, timestamp: timestamp,
                                             payload: data, controller: Int(flags >> 16)))
                continue
            }
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
