import ANCS

// The public JSON shape of decoded PDUs (`ancs decode`, `ancs demo --json`).
// Defined names print as names; reserved values print as their integer (a
// reserved flag as its bit's value).

public enum ANCSJSON {
    public static func name(_ name: String?, _ raw: UInt8) -> JSON {
        if let name { return .string(name) }
        return .integer(Int(raw))
    }

    public static func flags(_ flags: EventFlags) -> JSON {
        var items: [JSON] = []
        for bit in UInt8(0)..<8 where flags.rawValue & (1 << bit) != 0 {
            if let name = EventFlags.name(ofBit: bit) { items.append(.string(name)) } else { items.append(.integer(1 << Int(bit))) }
        }
        return .array(items)
    }

    public static func notificationSource(_ event: NotificationSourceEvent) -> JSON {
        .object([
            ("kind", .string("notificationSource")),
            ("event", name(event.eventID.name, event.eventID.rawValue)),
            ("flags", flags(event.eventFlags)),
            ("category", name(event.categoryID.name, event.categoryID.rawValue)),
            ("categoryCount", .integer(Int(event.categoryCount))),
            ("uid", .integer(Int(event.notificationUID.rawValue))),
        ])
    }

    public static func controlPoint(_ command: ControlPointCommand) -> JSON {
        switch command {
        case .getNotificationAttributes(let command):
            let attributes: [JSON] = command.attributes.map { attribute in
                var members: [(String, JSON)] = [("id", name(attribute.id.name, attribute.id.rawValue))]
                if let maxLength = attribute.maxLength { members.append(("maxLength", .integer(Int(maxLength)))) }
                return .object(members)
            }
            return .object([
                ("kind", .string("getNotificationAttributes")),
                ("uid", .integer(Int(command.notificationUID.rawValue))),
                ("attributes", .array(attributes)),
            ])
        case .getAppAttributes(let command):
            return .object([
                ("kind", .string("getAppAttributes")),
                ("appIdentifier", .string(command.appIdentifier)),
                ("attributes", .array(command.attributes.map { .object([("id", name($0.name, $0.rawValue))]) })),
            ])
        case .performNotificationAction(let command):
            return .object([
                ("kind", .string("performNotificationAction")),
                ("uid", .integer(Int(command.notificationUID.rawValue))),
                ("action", name(command.actionID.name, command.actionID.rawValue)),
            ])
        }
    }

    /// One attribute: its id, its value (decoded leniently), and for a Date
    /// or a MessageSize the parsed form; invalid UTF-8 adds the raw bytes as hex.
    public static func attribute(id: JSON, value: AttributeValue, parse: NotificationAttributeID?) -> JSON {
        var members: [(String, JSON)] = [("id", id), ("value", .string(value.string))]
        if !value.isValidUTF8 { members.append(("bytes", .string(hex(value.bytes)))) }
        if parse == .date, let date = value.date { members.append(("parsed", .string(date.description))) }
        if parse == .messageSize, let size = value.messageSize { members.append(("parsed", .integer(size))) }
        return .object(members)
    }

    public static func dataSource(_ response: DataSourceResponse) -> JSON {
        switch response {
        case .notificationAttributes(let response):
            return .object([
                ("kind", .string("notificationAttributes")),
                ("uid", .integer(Int(response.notificationUID.rawValue))),
                ("attributes", .array(response.attributes.map {
                    attribute(id: name($0.id.name, $0.id.rawValue), value: $0.value, parse: $0.id)
                })),
            ])
        case .appAttributes(let response):
            return .object([
                ("kind", .string("appAttributes")),
                ("appIdentifier", .string(response.appIdentifier)),
                ("attributes", .array(response.attributes.map {
                    attribute(id: name($0.id.name, $0.id.rawValue), value: $0.value, parse: nil)
                })),
            ])
        }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Hex text as the CLI accepts it: pairs of digits in either case, with any
/// spaces or colons between them.
public enum HexInput {
    public struct Error: Swift.Error, CustomStringConvertible {
        public let description: String
    }

    public static func parse(_ text: String) throws(HexInput.Error) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for (position, character) in text.utf8.enumerated() {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\t"):
                if high != nil { throw Error(description: "hex character \(position + 1): a byte needs two digits") }
                continue
            default:
                throw Error(description: "hex character \(position + 1): '\(String(decoding: [character], as: UTF8.self))' is not a hex digit")
            }
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        if high != nil { throw Error(description: "hex ends with half a byte (odd number of digits)") }
        return bytes
    }
}
