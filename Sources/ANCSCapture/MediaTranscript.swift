import ANCS
import ANCSFormat

/// Where the AMS and CTS characteristics are on a GATT server, from the
/// client's discovery in the capture (their UUIDs are their own: no service
/// range is needed to tell them).
public struct MediaHandles: Hashable, Sendable {
    public var valueHandles: [Int: MediaCharacteristic] = [:]
    public var cccds: [Int: MediaCharacteristic] = [:]

    public init() {}

    public func characteristic(at handle: Int) -> MediaCharacteristic? { valueHandles[handle] }
    public func cccd(at handle: Int) -> MediaCharacteristic? { cccds[handle] }

    func closest(below handle: Int) -> (handle: Int, characteristic: MediaCharacteristic)? {
        valueHandles.filter { $0.key < handle }.max { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    mutating func setCCCD(_ handle: Int, of characteristic: MediaCharacteristic) { cccds[handle] = characteristic }
}

/// Per link: the reads in progress (a long read is a Read Request, then
/// Read Blob Requests), the attribute Entity Attribute selected, the MTU.
struct MediaLinkState {
    var clientMTU: Int?
    var serverMTU: Int?
    var selected: MediaAttribute?
    /// The read in progress per client direction: its handle and the bytes so far.
    var reading: [BTSnoopRecord.Direction: (handle: Int, value: [UInt8])] = [:]

    var mtu: Int { min(clientMTU ?? 23, serverMTU ?? 23) }

    mutating func exchanged(_ mtu: Int, request: Bool) {
        if request { clientMTU = mtu } else { serverMTU = mtu }
    }
}

extension TranscriptBuilder {
    static let amsCharacteristics: [([UInt8], AMSCharacteristic)] = AMSCharacteristic.allCases.map { (uuidBytes($0.uuid), $0) }

    /// Read By Type responses of characteristic declarations: AMS's 128-bit
    /// UUIDs (21-byte entries), CTS's 16-bit ones (7-byte entries).
    mutating func readMediaCharacteristics(_ pdu: [UInt8]) {
        guard pdu.count >= 2 else { return }
        let length = Int(pdu[1])
        guard length == 21 || length == 7 else { return }
        var offset = 2
        while offset + length <= pdu.count {
            let valueHandle = le16(pdu, offset + 3)
            if length == 21 {
                let uuid = Array(pdu[(offset + 5)..<(offset + 21)])
                if let match = Self.amsCharacteristics.first(where: { $0.0 == uuid }) {
                    mediaHandles.valueHandles[valueHandle] = .ams(match.1)
                }
            } else if let characteristic = CTSCharacteristic(uuid: BluetoothUUID(uuid16: UInt16(le16(pdu, offset + 5)))) {
                mediaHandles.valueHandles[valueHandle] = .cts(characteristic)
            }
            offset += length
        }
    }

    /// A write to an AMS characteristic or a media CCCD: told, true; else false.
    mutating func mediaWrite(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ handle: Int, _ value: [UInt8]) -> Bool {
        if let characteristic = mediaHandles.cccd(at: handle) {
            let enabled = value.first.map { $0 & 1 != 0 } ?? false
            add(record, connection, direction, "subscribe", "\(characteristic) notifications \(enabled ? "on" : "off")",
                [("characteristic", .string(characteristic.identifier)), ("enabled", .bool(enabled))])
            return true
        }
        guard case .ams(let characteristic)? = mediaHandles.characteristic(at: handle) else { return false }
        let hex: (String, JSON) = ("hex", .string(Hex.string(value)))
        do throws(MediaDecodingError) {
            switch characteristic {
            case .remoteCommand:
                let command = try RemoteCommandID.decode(write: value)
                add(record, connection, direction, "amsCommand", "AMS Remote Command: \(command)",
                    [("command", .string(command.description)), hex])
            case .entityUpdate:
                let registration = try EntityRegistration.decode(value)
                add(record, connection, direction, "amsRegistration",
                    "AMS Entity Update: register \(registration.entity) " + registration.attributes.map { $0.description }.joined(separator: ", "),
                    [("entity", .string(registration.entity.description)),
                     ("attributes", .array(registration.attributes.map { .string($0.description) })), hex])
            case .entityAttribute:
                let attribute = try MediaAttribute.decode(selection: value)
                links[connection]?.media.selected = attribute
                add(record, connection, direction, "amsSelection", "AMS Entity Attribute: select \(attribute)",
                    [("attribute", .string(attribute.description)), hex])
            }
        } catch {
            add(record, connection, direction, "amsWrite", "AMS \(characteristic): undecodable \(Hex.string(value)): \(error)",
                [("characteristic", .string(characteristic.identifier)), hex, ("decodingError", .string("\(error)"))])
        }
        return true
    }

    /// The answer to a write or read of a media characteristic or CCCD: told, true; else false.
    mutating func mediaWriteResult(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ handle: Int, error code: UInt8?) -> Bool {
        guard let characteristic = mediaHandles.characteristic(at: handle) ?? mediaHandles.cccd(at: handle) else { return false }
        let what = mediaHandles.cccd(at: handle) != nil ? "\(characteristic) CCCD" : "\(characteristic)"
        guard let code else {
            add(record, connection, direction, "mediaResult", "\(what): written",
                [("characteristic", .string(characteristic.identifier)), ("result", .string("success"))])
            return true
        }
        links[connection]?.media.reading.removeValue(forKey: opposite(direction))
        // AMS gives 0xA0–0xA2 its own meanings.
        let amsName: String? = if case .ams = characteristic, let ams = AMSErrorCode(ATTErrorCode(code)) { "\(ams)" } else { nil }
        let text = amsName ?? "\(ATTErrorCode(code))"
        add(record, connection, direction, "mediaResult", "\(what): error \(text)",
            [("characteristic", .string(characteristic.identifier)), ("error", .integer(Int(code))), ("errorName", .string(text))])
        return true
    }

    /// A Read Request (offset 0) or Read Blob Request of a media characteristic.
    mutating func mediaRead(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ opcode: UInt8, handle: Int, offset: Int) {
        guard mediaHandles.characteristic(at: handle) != nil else { return }
        if opcode == 0x0A || links[connection]?.media.reading[direction]?.handle != handle {
            links[connection]?.media.reading[direction] = (handle, [])
        }
    }

    /// A Read (Blob) Response: the value is told when it is whole (a part
    /// shorter than MTU − 1 bytes ends a long read).
    mutating func mediaReadResponse(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ part: [UInt8]) {
        guard var link = links[connection], var read = link.media.reading[opposite(direction)] else { return }
        read.value += part
        if part.count >= link.media.mtu - 1 {
            link.media.reading[opposite(direction)] = read
            links[connection] = link
            return
        }
        link.media.reading.removeValue(forKey: opposite(direction))
        links[connection] = link
        guard let characteristic = mediaHandles.characteristic(at: read.handle) else { return }
        mediaValue(record, connection, direction, characteristic, read.value, selected: link.media.selected)
    }

    /// A notification of a media characteristic: told, true; else false.
    mutating func mediaNotification(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction, _ handle: Int, _ value: [UInt8]) -> Bool {
        guard let characteristic = mediaHandles.characteristic(at: handle) else { return false }
        mediaValue(record, connection, direction, characteristic, value, selected: nil, notified: true)
        return true
    }

    private mutating func mediaValue(_ record: BTSnoopRecord, _ connection: Int, _ direction: BTSnoopRecord.Direction,
                                     _ characteristic: MediaCharacteristic, _ value: [UInt8], selected: MediaAttribute?, notified: Bool = false) {
        let hex: (String, JSON) = ("hex", .string(Hex.string(value)))
        do throws(MediaDecodingError) {
            switch characteristic {
            case .ams(.remoteCommand):
                let commands = RemoteCommandList.decode(value)
                add(record, connection, direction, "amsSupportedCommands",
                    "AMS supported commands: " + (commands.isEmpty ? "none" : commands.map { $0.description }.joined(separator: ", ")),
                    [("commands", .array(commands.map { .string($0.description) })), hex])
            case .ams(.entityUpdate):
                let update = try EntityUpdate.decode(value)
                add(record, connection, direction, "amsEntityUpdate",
                    "AMS \(update.attribute) = \(quoted(update.value))\(update.isTruncated ? " (truncated)" : "")",
                    [("attribute", .string(update.attribute.description)), ("value", .string(update.value.string)),
                     ("truncated", .bool(update.isTruncated)), hex])
            case .ams(.entityAttribute):
                let name = selected?.description ?? "the attribute selected"
                add(record, connection, direction, "amsEntityAttribute",
                    "AMS Entity Attribute: \(name) = \(quoted(AttributeValue(bytes: value))) (\(value.count) bytes)",
                    [("attribute", selected.map { .string($0.description) } ?? .null),
                     ("value", .string(AttributeValue(bytes: value).string)), hex])
            case .cts(.currentTime):
                let time = try CurrentTime.decode(value)
                add(record, connection, direction, "ctsCurrentTime", "CTS Current Time\(notified ? " (notified)" : ""): \(time)",
                    [("time", .string(time.date.description)), ("dayOfWeek", .integer(time.dayOfWeek)),
                     ("fractions256", .integer(time.fractions256)), ("adjustReason", .integer(Int(time.adjustReason.rawValue))), hex])
            case .cts(.localTimeInformation):
                let zone = try LocalTimeInformation.decode(value)
                let offset = zone.utcOffsetMinutes.map { $0 == 0 ? "UTC" : "UTC\(zone)" } ?? "zone unknown"
                add(record, connection, direction, "ctsLocalTimeInformation", "CTS Local Time Information: \(offset)",
                    [("utcOffsetMinutes", zone.utcOffsetMinutes.map { .integer($0) } ?? .null),
                     ("timeZone", .integer(Int(zone.timeZone))), ("dstOffset", .integer(Int(zone.dstOffset))), hex])
            }
        } catch {
            add(record, connection, direction, "mediaError", "\(characteristic): undecodable \(Hex.string(value)): \(error)",
                [("characteristic", .string(characteristic.identifier)), hex, ("decodingError", .string("\(error)"))])
        }
    }

    private func quoted(_ value: AttributeValue) -> String { "\"\(value.string)\"" }
}
