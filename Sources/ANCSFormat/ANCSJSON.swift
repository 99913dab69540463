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
        if !value.isValidUTF8 { members.append(("bytes", .string(Hex.string(value.bytes)))) }
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
}

