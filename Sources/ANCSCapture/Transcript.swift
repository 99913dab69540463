import ANCS
import ANCSFormat

/// Where the ANCS characteristics are on a GATT server, and how that was learnt.
public struct ANCSHandles: Hashable, Sendable {
    public enum Source: String, Hashable, Sendable {
        /// From the client's discovery in the capture (services, characteristics, descriptors).
        case discovery
        /// From traffic that decodes as ANCS (no discovery in the capture).
        case recognized
    }
    public var notificationSource: Int?
    public var controlPoint: Int?
    public var dataSource: Int?
    public var notificationSourceCCCD: Int?
    public var dataSourceCCCD: Int?
    public var source: Source = .discovery

    public init() {}

    public func characteristic(at handle: Int) -> ANCSCharacteristic? {
        if handle == notificationSource { return .notificationSource }
        if handle == controlPoint { return .controlPoint }
        if handle == dataSource { return .dataSource }
        return nil
    }

    public func cccd(at handle: Int) -> ANCSCharacteristic? {
        if handle == notificationSourceCCCD { return .notificationSource }
        if handle == dataSourceCCCD { return .dataSource }
        return nil
    }

    public var isComplete: Bool { notificationSource != nil && controlPoint != nil && dataSource != nil }
}

/// One line of a transcript: something that happened on a link, ANCS decoded.
public struct TranscriptEntry: Sendable {
    public var record: Int
    /// Microseconds since the capture's first record.
    public var time: UInt64
    public var connection: Int?
    public var direction: BTSnoopRecord.Direction?
    /// What happened: `connected`, `ancsHandles`, `notificationSource`, `controlPoint`, `dataSource`, ...
    public var event: String
    /// The human line (without time and connection).
    public var text: String
    /// The JSON members after the common ones.
    public var details: [(String, JSON)]

    public var json: JSON {
        var members: [(String, JSON)] = [("record", .integer(record)), ("time", .double(Double(time) / 1_000_000))]
        if let connection { members.append(("connection", .integer(connection))) }
        if let direction { members.append(("direction", .string(direction == .sent ? "sent" : "received"))) }
        members.append(("event", .string(event)))
        return .object(members + details)
    }

    public var line: String {
        let seconds = Double(time) / 1_000_000
        let stamp = String(Int(seconds)) + "." + String(Int((seconds - Double(Int(seconds))) * 1000) + 1000).dropFirst()
        let arrow = direction.map { $0 == .sent ? "→ " : "← " } ?? ""
        let link = connection.map { "[\($0)] " } ?? ""
        return "\(stamp) \(link)\(arrow)\(text)"
    }
}

/// Turns a capture into an ANCS transcript: link events, ATT MTU, the ANCS
/// handles, subscriptions, Notification Source events, Control Point
/// commands and their results, and Data Source responses reassembled from
/// their fragments. Arrows are as the capturing host saw them: `→` sent by
/// it, `←` received.
public struct TranscriptBuilder: Sendable {
    public private(set) var entries: [TranscriptEntry] = []
    public private(set) var handles = ANCSHandles()
    /// Where the AMS and CTS characteristics are (from discovery).
    public internal(set) var mediaHandles = MediaHandles()
    private var hci = HCIReassembler()
    private var firstTimestamp: UInt64?

    struct LinkState {
        var reassembler = DataSourceReassembler()
        var nextRequest: UInt32 = 1
        /// The last request (opcode, handle, value) per client direction, for matching responses.
        var pending: [BTSnoopRecord.Direction: (opcode: UInt8, handle: Int, value: [UInt8])] = [:]
        var dataSourceBytes = 0
        var dataSourceFragments = 0
        /// A long write being prepared (Prepare Write Requests), per client direction.
        var prepared: [BTSnoopRecord.Direction: (handle: Int, value: [UInt8])] = [:]
        /// AMS and CTS: reads in progress, the attribute Entity Attribute selected, the MTU.
        var media = MediaLinkState()
    }
    var links: [Int: LinkState] = [:]
    private var reportedHandles = false
    /// Discovery in progress: characteristic value handles by UUID.
    private var serviceRange: ClosedRange<Int>?
    private var characteristics: [(valueHandle: Int, uuid: [UInt8])] = []

    public init() {}

    public static func transcript(of records: [BTSnoopRecord]) -> TranscriptBuilder {
        var builder = TranscriptBuilder()
        for record in records { builder.feed(record) }
        return builder
    }

    public mutating func feed(_ record: BTSnoopRecord) {
        if firstTimestamp == nil { firstTimestamp = record.timestamp }
        for item in hci.feed(record) { handle(item, record) }
    }

    mutating func add(_ record: BTSnoopRecord, _ connection: Int?, _ direction: BTSnoopRecord.Direction?,
                              _ event: String, _ text: String, _ details: [(String, JSON)] = []) {
        let time = record.timestamp &- (firstTimestamp ?? record.timestamp)
        entries.append(TranscriptEntry(record: record.number, time: time, connection: connection, direction: direction,
                                       event: event, text: text, details: details))
    }

    private mutating func handle(_ item: LinkItem, _ record: BTSnoopRecord) {
        switch item {
        case .connected(let handle, let peer, let isCentral):
            links[handle] = LinkState()
            add(record, handle, nil, "connected", "connected to \(peer) as \(isCentral ? "central" : "peripheral")",
                [("peer", .string(peer)), ("role", .string(isCentral ? "central" : "peripheral"))])
        case .disconnected(let handle, let reason):
            links[handle] = nil
            add(record, handle, nil, "disconnected", "disconnected (reason 0x\(Hex.string(reason, uppercase: true)))", [("reason", .integer(Int(reason)))])
        case .encryption(let handle, let enabled):
            add(record, handle, nil, "encryption", enabled ? "encrypted" : "encryption off", [("enabled", .bool(enabled))])
        case .malformed(let handle, let number, let reason):
            add(record, handle < 0 ? nil : handle, nil, "malformed", "record \(number): \(reason)", [("reason", .string(reason))])
        case .frame(let frame):
            if frame.channel == 0x0004, !frame.payload.isEmpty { att(frame, record) }
        }
    }

    // MARK: - ATT

    private mutating func att(_ frame: L2CAPFrame, _ record: BTSnoopRecord) {
        let pdu = frame.payload
        let opcode = pdu[0]
        let connection = frame.handle
        let direction = frame.direction
        if links[connection] == nil { links[connection] = LinkState() }
        switch opcode {
        case 0x02 where pdu.count >= 3, 0x03 where pdu.count >= 3:  // Exchange MTU Request / Response
            let mtu = le16(pdu, 1)
            links[connection]?.media.exchanged(mtu, request: opcode == 0x02)
            add(record, connection, direction, opcode == 0x02 ? "mtuRequest" : "mtuResponse",
                "ATT MTU \(mtu) (\(opcode == 0x02 ? "client" : "server"))", [("mtu", .integer(mtu))])
        case 0x04, 0x06, 0x08, 0x10:  // discovery requests
            remember(connection, direction, opcode, pdu)
        case 0x0A where pdu.count >= 3, 0x0C where pdu.count >= 5:  // Read Request, Read Blob Request
            mediaRead(record, connection, direction, opcode, handle: le16(pdu, 1), offset: opcode == 0x0C ? le16(pdu, 3) : 0)
        case 0x0B, 0x0D:  // Read Response, Read Blob Response
            mediaReadResponse(record, connection, direction, Array(pdu.dropFirst()))
        case 0x05: findInformation(pdu)
        case 0x07: findByTypeValue(connection, direction, pdu)
        case 0x09: readByType(pdu); readMediaCharacteristics(pdu)
        case 0x11: readByGroupType(pdu)
        case 0x12 where pdu.count >= 3, 0x52 where pdu.count >= 3:  // Write Request / Command
            let handle = le16(pdu, 1)
            let value = Array(pdu[3...])
            if opcode == 0x12 { remember(connection, direction, opcode, pdu) }
            write(record, connection, direction, handle, value)
        case 0x16 where pdu.count >= 5:  // Prepare Write Request: a long write, in parts
            let handle = le16(pdu, 1)
            let offset = le16(pdu, 3)
            var prepared = links[connection]?.prepared[direction] ?? (handle, [])
            if prepared.handle != handle || offset != prepared.value.count { prepared = (handle, []) }
            if offset == prepared.value.count { prepared.value += pdu[5...] }
            links[connection]?.prepared[direction] = prepared
        case 0x18 where pdu.count >= 2:  // Execute Write Request
            guard let prepared = links[connection]?.prepared.removeValue(forKey: direction) else { return }
            if pdu[1] == 1 {
                links[connection]?.pending[direction] = (0x12, prepared.handle, [])
                write(record, connection, direction, prepared.handle, prepared.value)
            }
        case 0x13, 0x19:  // Write Response, Execute Write Response
            guard let request = links[connection]?.pending.removeValue(forKey: opposite(direction)), request.opcode == 0x12 else { return }
            if mediaWriteResult(record, connection, direction, request.handle, error: nil) { return }
            if handles.characteristic(at: request.handle) == .controlPoint {
                add(record, connection, direction, "controlPointResult", "Control Point: written", [("result", .string("success"))])
            } else if let characteristic = handles.cccd(at: request.handle) {
                add(record, connection, direction, "subscriptionResult", "\(characteristic) CCCD: written",
                    [("characteristic", .string(characteristic.identifier)), ("result", .string("success"))])
            }
        case 0x01 where pdu.count >= 5:  // Error Response
            let requestOpcode = pdu[1]
            let handle = le16(pdu, 2)
            let code = pdu[4]
            links[connection]?.pending.removeValue(forKey: opposite(direction))
            let name = ATTErrorCode(code).name ?? "attError"
            if [0x0A, 0x0C, 0x12].contains(requestOpcode), mediaWriteResult(record, connection, direction, handle, error: code) { return }
            if handles.characteristic(at: handle) == .controlPoint {
                if var link = links[connection] {
                    _ = link.reassembler.cancel(link.nextRequest - 1, responseMayFollow: false)
                    links[connection] = link
                }
                add(record, connection, direction, "controlPointResult", "Control Point: error \(ATTErrorCode(code))",
                    [("error", .integer(Int(code))), ("errorName", .string(name))])
            } else if [0x0A, 0x12, 0x16, 0x18].contains(requestOpcode),
                      let characteristic = handles.cccd(at: handle) ?? handles.characteristic(at: handle) {
                add(record, connection, direction, "attError", "\(characteristic): error \(ATTErrorCode(code))",
                    [("characteristic", .string(characteristic.identifier)), ("request", .integer(Int(requestOpcode))),
                     ("error", .integer(Int(code))), ("errorName", .string(name))])
            }
        case 0x1B where pdu.count >= 3:  // Handle Value Notification
            notification(record, connection, direction, le16(pdu, 1), Array(pdu[3...]))
        default:
            break
        }
        reportHandles(record, connection)
    }

    /// One entry naming the handles, once they are known (with the CCCDs when discovered).
    private mutating func reportHandles(_ record: BTSnoopRecord, _ connection: Int) {
        guard !reportedHandles, handles.isComplete,
              handles.source == .recognized || (handles.notificationSourceCCCD != nil && handles.dataSourceCCCD != nil) else { return }
        reportedHandles = true
        func member(_ name: String, _ value: Int?) -> (String, JSON) { (name, value.map { .integer($0) } ?? .null) }
        var text = "ANCS handles (\(handles.source.rawValue)): Notification Source \(handles.notificationSource ?? 0), "
            + "Control Point \(handles.controlPoint ?? 0), Data Source \(handles.dataSource ?? 0)"
        if let ns = handles.notificationSourceCCCD, let ds = handles.dataSourceCCCD { text += ", CCCDs \(ns) and \(ds)" }
        add(record, connection, nil, "ancsHandles", text,
            [("source", .string(handles.source.rawValue)), member("notificationSource", handles.notificationSource),
             member("controlPoint", handles.controlPoint), member("dataSource", handles.dataSource),
             member("notificationSourceCCCD", handles.notificationSourceCCCD), member("dataSourceCCCD", handles.dataSourceCCCD)])
    }


    private mutating func remember(_ connection: Int, _ direction: BTSnoopRecord.Direction, _ opcode: UInt8, _ pdu: [UInt8]) {
        let handle = pdu.count >= 3 ? le16(pdu, 1) : 0
        links[connection]?.pending[direction] = (opcode, handle, Array(pdu.dropFirst()))
    }

    private mutating func write(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ handle: Int, _ value: [UInt8]) {
        if mediaWrite(record, connection, direction, handle, value) { return }
        if handles.characteristic(at: handle) == nil && handles.cccd(at: handle) == nil && handles.controlPoint == nil,
           handles.source == .recognized || !handles.isComplete, (try? ControlPointCommand.decode(value)) != nil,
           let first = value.first, first <= 2 {
            handles.controlPoint = handle
            handles.source = .recognized
        }
        if let characteristic = handles.cccd(at: handle) ?? recognizedCCCD(handle, value) {
            let enabled = value.first.map { $0 & 1 != 0 } ?? false
            add(record, connection, direction, "subscribe", "\(characteristic) notifications \(enabled ? "on" : "off")",
                [("characteristic", .string(characteristic.identifier)), ("enabled", .bool(enabled))])
            return
        }
        guard handles.characteristic(at: handle) == .controlPoint else { return }
        do {
            let command = try ControlPointCommand.decode(value)
            if var link = links[connection] {
                if let request = DataSourceRequest(command) {
                    link.reassembler.expect(request, id: link.nextRequest)
                }
                link.nextRequest += 1
                links[connection] = link
            }
            add(record, connection, direction, "controlPoint", "Control Point: \(describe(command))",
                [("command", ANCSJSON.controlPoint(command)), ("hex", .string(Hex.string(value)))])
        } catch {
            add(record, connection, direction, "controlPoint", "Control Point: undecodable \(Hex.string(value)): \(error)",
                [("hex", .string(Hex.string(value))), ("decodingError", .string("\(error)"))])
        }
    }

    /// Without discovery: a 2-byte write to the handle after a known notifying value handle.
    private mutating func recognizedCCCD(_ handle: Int, _ value: [UInt8]) -> ANCSCharacteristic? {
        guard handles.source == .recognized, value.count == 2, value[1] == 0, value[0] <= 3 else { return nil }
        if let ns = handles.notificationSource, handle == ns + 1 { handles.notificationSourceCCCD = handle; return .notificationSource }
        if let ds = handles.dataSource, handle == ds + 1 { handles.dataSourceCCCD = handle; return .dataSource }
        return nil
    }

    private mutating func notification(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ handle: Int, _ value: [UInt8]) {
        if mediaNotification(record, connection, direction, handle, value) { return }
        if handles.characteristic(at: handle) == nil, !handles.isComplete || handles.source == .recognized {
            recognize(handle, value, connection)
        }
        switch handles.characteristic(at: handle) {
        case .notificationSource:
            do {
                let event = try NotificationSourceEvent.decode(value)
                add(record, connection, direction, "notificationSource", "Notification Source: \(describe(event))",
                    [("notificationSource", ANCSJSON.notificationSource(event))])
            } catch {
                add(record, connection, direction, "notificationSource", "Notification Source: undecodable \(Hex.string(value)): \(error)",
                    [("hex", .string(Hex.string(value))), ("decodingError", .string("\(error)"))])
            }
        case .dataSource:
            guard var link = links[connection] else { return }
            link.dataSourceBytes += value.count
            link.dataSourceFragments += 1
            var events: [DataSourceReassembler.Event] = []
            link.reassembler.feed(value) { events.append($0) }
            let fragments = link.dataSourceFragments, bytes = link.dataSourceBytes
            if !events.isEmpty { link.dataSourceFragments = 0; link.dataSourceBytes = 0 }
            links[connection] = link
            for event in events {
                switch event {
                case .response(_, let response):
                    add(record, connection, direction, "dataSource",
                        "Data Source: \(describe(response)) (\(bytes) bytes in \(fragments) notifications)",
                        [("response", ANCSJSON.dataSource(response)), ("fragments", .integer(fragments)), ("bytes", .integer(bytes))])
                case .failed(_, let error):
                    add(record, connection, direction, "dataSourceError", "Data Source: \(error)", [("error", .string("\(error)"))])
                case .unsolicited:
                    add(record, connection, direction, "dataSourceError", "Data Source: bytes with no command outstanding",
                        [("error", .string("unsolicited")), ("hex", .string(Hex.string(value)))])
                }
            }
        default:
            break
        }
    }

    /// Without discovery: an 8-byte notification that decodes as a
    /// Notification Source event, or the first other notification after a
    /// Control Point command, names its characteristic.
    private mutating func recognize(_ handle: Int, _ value: [UInt8], _ connection: Int) {
        if handles.notificationSource == nil, value.count == 8, let event = try? NotificationSourceEvent.decode(value),
           event.eventID.rawValue <= 2, handle != handles.dataSource {
            handles.notificationSource = handle
            handles.source = .recognized
        } else if handles.dataSource == nil, handle != handles.notificationSource,
                  let link = links[connection], link.reassembler.outstandingCount > 0 {
            handles.dataSource = handle
            handles.source = .recognized
        }
    }

    // MARK: - Discovery

    static let ancsService = uuidBytes(ANCSUUID.service)
    static let ancsCharacteristics: [([UInt8], ANCSCharacteristic)] = ANCSCharacteristic.allCases.map { (uuidBytes($0.uuid), $0) }

    /// A 128-bit UUID as ATT carries it (little-endian).
    static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] { uuid.bytes.reversed() }

    private mutating func readByGroupType(_ pdu: [UInt8]) {
        guard pdu.count >= 2 else { return }
        let length = Int(pdu[1])
        guard length == 20 else { return }
        var offset = 2
        while offset + length <= pdu.count {
            if Array(pdu[(offset + 4)..<(offset + 20)]) == Self.ancsService {
                serviceRange = le16(pdu, offset)...le16(pdu, offset + 2)
            }
            offset += length
        }
    }

    private mutating func findByTypeValue(_ connection: Int, _ direction: BTSnoopRecord.Direction, _ pdu: [UInt8]) {
        guard let request = links[connection]?.pending.removeValue(forKey: opposite(direction)), request.opcode == 0x06,
              request.value.count >= 6 + 16, Array(request.value[6..<22]) == Self.ancsService, pdu.count >= 5 else { return }
        serviceRange = le16(pdu, 1)...le16(pdu, 3)
    }

    private mutating func readByType(_ pdu: [UInt8]) {
        guard pdu.count >= 2 else { return }
        let length = Int(pdu[1])
        guard length == 21 else { return }  // handle, properties, value handle, 128-bit UUID
        var offset = 2
        while offset + length <= pdu.count {
            let declaration = le16(pdu, offset)
            let valueHandle = le16(pdu, offset + 3)
            let uuid = Array(pdu[(offset + 5)..<(offset + 21)])
            if serviceRange.map({ $0.contains(declaration) }) ?? true,
               let match = Self.ancsCharacteristics.first(where: { $0.0 == uuid }) {
                characteristics.append((valueHandle, uuid))
                switch match.1 {
                case .notificationSource: handles.notificationSource = valueHandle
                case .controlPoint: handles.controlPoint = valueHandle
                case .dataSource: handles.dataSource = valueHandle
                }
                handles.source = .discovery
            }
            offset += length
        }
    }

    private mutating func findInformation(_ pdu: [UInt8]) {
        guard pdu.count >= 2, pdu[1] == 1 else { return }  // 16-bit UUIDs
        var offset = 2
        while offset + 4 <= pdu.count {
            let handle = le16(pdu, offset)
            if le16(pdu, offset + 2) == 0x2902 {
                // The CCCD belongs to the characteristic whose value handle is the closest below.
                let ancs = [(handles.notificationSource, ANCSCharacteristic.notificationSource), (handles.dataSource, .dataSource),
                            (handles.controlPoint, .controlPoint)]
                    .compactMap { entry in entry.0.map { ($0, entry.1) } }
                    .filter { $0.0 < handle }
                    .max { $0.0 < $1.0 }
                let media = mediaHandles.closest(below: handle)
                if let media, media.handle > (ancs?.0 ?? 0) {
                    mediaHandles.setCCCD(handle, of: media.characteristic)
                    offset += 4
                    continue
                }
                if ancs?.1 == .notificationSource { handles.notificationSourceCCCD = handle }
                if ancs?.1 == .dataSource { handles.dataSourceCCCD = handle }
            }
            offset += 4
        }
    }

    // MARK: - Words

    private func describe(_ event: NotificationSourceEvent) -> String {
        let kind = event.eventID == .added ? "Added" : event.eventID == .modified ? "Modified" : event.eventID == .removed ? "Removed" : "event \(event.eventID.rawValue)"
        return "\(kind) uid \(event.notificationUID.rawValue) \(event.categoryID) (count \(event.categoryCount)) flags \(event.eventFlags)"
    }

    private func describe(_ command: ControlPointCommand) -> String {
        ANCSJSON.controlPoint(command).rendered
    }

    private func describe(_ response: DataSourceResponse) -> String {
        ANCSJSON.dataSource(response).rendered
    }
}

func opposite(_ direction: BTSnoopRecord.Direction) -> BTSnoopRecord.Direction {
    direction == .sent ? .received : .sent
}

