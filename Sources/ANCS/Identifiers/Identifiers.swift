// Identifiers of the ANCS wire protocol (spec: "Notification Source",
// "Control Point", "Data Source").
//
// Every identifier is an open struct over its wire byte rather than an enum:
// reserved values from a newer iOS (CategoryID 200, say) must be accepted,
// printed and sent back unchanged. `name` is the spec's name in lower camel
// case, or nil for a reserved value; `description` falls back to the integer.

/// EventID of a Notification Source event: 0 Added, 1 Modified, 2 Removed; 3–255 reserved.
public struct EventID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let added = EventID(rawValue: 0)
    public static let modified = EventID(rawValue: 1)
    public static let removed = EventID(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 0: "added"
        case 1: "modified"
        case 2: "removed"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// EventFlags of a Notification Source event. Bits 5–7 are reserved: kept, never rejected.
public struct EventFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let silent = EventFlags(rawValue: 1 << 0)
    public static let important = EventFlags(rawValue: 1 << 1)
    public static let preExisting = EventFlags(rawValue: 1 << 2)
    public static let positiveAction = EventFlags(rawValue: 1 << 3)
    public static let negativeAction = EventFlags(rawValue: 1 << 4)

    /// The spec's name of a single-bit flag, or nil for a reserved bit.
    public static func name(ofBit bit: UInt8) -> String? {
        switch bit {
        case 0: "silent"
        case 1: "important"
        case 2: "preExisting"
        case 3: "positiveAction"
        case 4: "negativeAction"
        default: nil
        }
    }

    /// Each set bit, lowest first: its name, or its value (32, 64, 128) when reserved.
    public var names: [String] {
        var result: [String] = []
        for bit in UInt8(0)..<8 where rawValue & (1 << bit) != 0 {
            result.append(EventFlags.name(ofBit: bit) ?? "\(UInt8(1) << bit)")
        }
        return result
    }

    public var description: String {
        var text = "["
        for (index, name) in names.enumerated() {
            if index > 0 { text += ", " }
            text += name
        }
        return text + "]"
    }
}

/// CategoryID of a Notification Source event; 12–255 reserved and accepted as "unknown".
public struct CategoryID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let other = CategoryID(rawValue: 0)
    public static let incomingCall = CategoryID(rawValue: 1)
    public static let missedCall = CategoryID(rawValue: 2)
    public static let voicemail = CategoryID(rawValue: 3)
    public static let social = CategoryID(rawValue: 4)
    public static let schedule = CategoryID(rawValue: 5)
    public static let email = CategoryID(rawValue: 6)
    public static let news = CategoryID(rawValue: 7)
    public static let healthAndFitness = CategoryID(rawValue: 8)
    public static let businessAndFinance = CategoryID(rawValue: 9)
    public static let location = CategoryID(rawValue: 10)
    public static let entertainment = CategoryID(rawValue: 11)

    public var name: String? {
        switch rawValue {
        case 0: "other"
        case 1: "incomingCall"
        case 2: "missedCall"
        case 3: "voicemail"
        case 4: "social"
        case 5: "schedule"
        case 6: "email"
        case 7: "news"
        case 8: "healthAndFitness"
        case 9: "businessAndFinance"
        case 10: "location"
        case 11: "entertainment"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// CommandID of a Control Point command and of the Data Source response it causes.
public struct CommandID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let getNotificationAttributes = CommandID(rawValue: 0)
    public static let getAppAttributes = CommandID(rawValue: 1)
    public static let performNotificationAction = CommandID(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 0: "getNotificationAttributes"
        case 1: "getAppAttributes"
        case 2: "performNotificationAction"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// NotificationAttributeID; 8–255 reserved.
public struct NotificationAttributeID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let appIdentifier = NotificationAttributeID(rawValue: 0)
    public static let title = NotificationAttributeID(rawValue: 1)
    public static let subtitle = NotificationAttributeID(rawValue: 2)
    public static let message = NotificationAttributeID(rawValue: 3)
    public static let messageSize = NotificationAttributeID(rawValue: 4)
    public static let date = NotificationAttributeID(rawValue: 5)
    public static let positiveActionLabel = NotificationAttributeID(rawValue: 6)
    public static let negativeActionLabel = NotificationAttributeID(rawValue: 7)

    /// Title, Subtitle and Message carry a uint16 max length in a Get
    /// Notification Attributes command; every other attribute must not.
    public var takesMaxLength: Bool { rawValue >= 1 && rawValue <= 3 }

    public var name: String? {
        switch rawValue {
        case 0: "appIdentifier"
        case 1: "title"
        case 2: "subtitle"
        case 3: "message"
        case 4: "messageSize"
        case 5: "date"
        case 6: "positiveActionLabel"
        case 7: "negativeActionLabel"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// AppAttributeID: 0 DisplayName; 1–255 reserved.
public struct AppAttributeID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let displayName = AppAttributeID(rawValue: 0)

    public var name: String? { rawValue == 0 ? "displayName" : nil }
    public var description: String { name ?? "\(rawValue)" }
}

/// ActionID of Perform Notification Action: 0 Positive, 1 Negative; 2–255 reserved.
public struct ActionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let positive = ActionID(rawValue: 0)
    public static let negative = ActionID(rawValue: 1)

    public var name: String? {
        switch rawValue {
        case 0: "positive"
        case 1: "negative"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// An ATT error code: the four ANCS defines (0xA0–0xA3, spec: "Errors") and
/// the ATT codes a link reports (0x05 Insufficient Authentication, …). The
/// one typed form of an error code in the project: results, errors and
/// the transports' lines all carry it.
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt8) { self.rawValue = value }

    /// 0xA0: the CommandID was not recognized.
    public static let unknownCommand = ATTErrorCode(rawValue: 0xA0)
    /// 0xA1: the command was malformed.
    public static let invalidCommand = ATTErrorCode(rawValue: 0xA1)
    /// 0xA2: a parameter (NotificationUID, AppIdentifier) names nothing on the NP.
    public static let invalidParameter = ATTErrorCode(rawValue: 0xA2)
    /// 0xA3: the action was not performed.
    public static let actionFailed = ATTErrorCode(rawValue: 0xA3)

    /// ATT 0x01 Invalid Handle.
    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    /// ATT 0x02 Read Not Permitted.
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    /// ATT 0x03 Write Not Permitted.
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    /// ATT 0x05 Insufficient Authentication.
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    /// ATT 0x06 Request Not Supported.
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    /// ATT 0x07 Invalid Offset.
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    /// ATT 0x08 Insufficient Authorization.
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    /// ATT 0x0C Insufficient Encryption Key Size.
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    /// ATT 0x0D Invalid Attribute Value Length.
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    /// ATT 0x0E Unlikely Error.
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    /// ATT 0x0F Insufficient Encryption.
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    /// ATT 0xFD Client Characteristic Configuration Descriptor Improperly Configured.
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)

    /// True for the four codes ANCS defines; other values are plain ATT errors.
    public var isANCS: Bool { rawValue >= 0xA0 && rawValue <= 0xA3 }

    /// The code's one name in the project (the Core Specification's ATT
    /// error names and ANCS's, in lower camel case), nil for a code neither
    /// defines. Logs, JSON and captures all use it.
    public var name: String? {
        switch rawValue {
        case 0x01: "invalidHandle"
        case 0x02: "readNotPermitted"
        case 0x03: "writeNotPermitted"
        case 0x04: "invalidPDU"
        case 0x05: "insufficientAuthentication"
        case 0x06: "requestNotSupported"
        case 0x07: "invalidOffset"
        case 0x08: "insufficientAuthorization"
        case 0x09: "prepareQueueFull"
        case 0x0A: "attributeNotFound"
        case 0x0B: "attributeNotLong"
        case 0x0C: "insufficientEncryptionKeySize"
        case 0x0D: "invalidAttributeValueLength"
        case 0x0E: "unlikelyError"
        case 0x0F: "insufficientEncryption"
        case 0x10: "unsupportedGroupType"
        case 0x11: "insufficientResources"
        case 0x12: "databaseOutOfSync"
        case 0x13: "valueNotAllowed"
        case 0xA0: "unknownCommand"
        case 0xA1: "invalidCommand"
        case 0xA2: "invalidParameter"
        case 0xA3: "actionFailed"
        case 0xFC: "writeRequestRejected"
        case 0xFD: "cccdImproperlyConfigured"
        case 0xFE: "procedureAlreadyInProgress"
        case 0xFF: "outOfRange"
        default: nil
        }
    }

    /// `name (0xNN)`, e.g. `insufficientAuthentication (0x05)`; a code with
    /// no name: `ATT error 0xNN`.
    public var description: String {
        let hex = "0x" + Hex.string(rawValue, uppercase: true)
        return name.map { "\($0) (\(hex))" } ?? "ATT error \(hex)"
    }
}

/// NotificationUID: names one iOS notification, valid only inside a session.
public struct NotificationUID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static func < (lhs: NotificationUID, rhs: NotificationUID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "\(rawValue)" }
}

/// The service and characteristic UUIDs (spec: "Service and characteristics").
public enum ANCSUUID {
    public static let service = "7905F431-B5CE-4E99-A40F-4B1E122D00D0"
    public static let notificationSource = "9FBF120D-6301-42D9-8C58-25E699A21DBD"
    public static let controlPoint = "69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9"
    public static let dataSource = "22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB"
    /// GATT's Service Changed characteristic (in the GATT service 0x1801).
    public static let serviceChanged: UInt16 = 0x2A05
    public static let gattService: UInt16 = 0x1801
}

/// The three ANCS characteristics, as the engines name them to a transport:
/// the one place that gives each its UUID, its name and its short name.
public enum ANCSCharacteristic: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case notificationSource
    case controlPoint
    case dataSource

    public var uuid: String {
        switch self {
        case .notificationSource: ANCSUUID.notificationSource
        case .controlPoint: ANCSUUID.controlPoint
        case .dataSource: ANCSUUID.dataSource
        }
    }

    /// The characteristic a UUID names (any case), or nil: an NC ignores characteristics it does not know.
    public init?(uuid: String) {
        let upper = asciiUppercased(uuid)
        switch upper {
        case Self.notificationSource.uuid: self = .notificationSource
        case Self.controlPoint.uuid: self = .controlPoint
        case Self.dataSource.uuid: self = .dataSource
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .notificationSource: "Notification Source"
        case .controlPoint: "Control Point"
        case .dataSource: "Data Source"
        }
    }

    /// The name as an identifier, `notificationSource`, `controlPoint`,
    /// `dataSource`: JSON values and keys (captures, `ancs provide --json`).
    public var identifier: String {
        switch self {
        case .notificationSource: "notificationSource"
        case .controlPoint: "controlPoint"
        case .dataSource: "dataSource"
        }
    }

    /// The short name: `ns`, `cp`, `ds` (the Bumble host's line protocol).
    public var shortName: String {
        switch self {
        case .notificationSource: "ns"
        case .controlPoint: "cp"
        case .dataSource: "ds"
        }
    }

    /// The characteristic a short name names, or nil.
    public init?<Text: StringProtocol>(shortName: Text) {
        switch shortName {
        case "ns": self = .notificationSource
        case "cp": self = .controlPoint
        case "ds": self = .dataSource
        default: return nil
        }
    }
}

func asciiUppercased(_ text: String) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count)
    for byte in text.utf8 {
        bytes.append(byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte)
    }
    return String(decoding: bytes, as: UTF8.self)
}
