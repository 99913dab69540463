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
    public init(_ named: Named) { self.rawValue = named.rawValue }

    /// The codes the project names, one entry each: the case is the code's
    /// name (the Core Specification's ATT error names and ANCS's, in lower
    /// camel case) and its raw value the code. The constants below are made
    /// from it, and `name`, `phrase`, `ConsumerError`'s wording and the
    /// C API's `ancs_status_name` (tested against it) read it.
    public enum Named: UInt8, CaseIterable, Sendable {
        case invalidHandle = 0x01
        case readNotPermitted = 0x02
        case writeNotPermitted = 0x03
        case invalidPDU = 0x04
        case insufficientAuthentication = 0x05
        case requestNotSupported = 0x06
        case invalidOffset = 0x07
        case insufficientAuthorization = 0x08
        case prepareQueueFull = 0x09
        case attributeNotFound = 0x0A
        case attributeNotLong = 0x0B
        case insufficientEncryptionKeySize = 0x0C
        case invalidAttributeValueLength = 0x0D
        case unlikelyError = 0x0E
        case insufficientEncryption = 0x0F
        case unsupportedGroupType = 0x10
        case insufficientResources = 0x11
        case databaseOutOfSync = 0x12
        case valueNotAllowed = 0x13
        /// ANCS: the CommandID was not recognized.
        case unknownCommand = 0xA0
        /// ANCS: the command was malformed.
        case invalidCommand = 0xA1
        /// ANCS: a parameter (NotificationUID, AppIdentifier) names nothing on the NP.
        case invalidParameter = 0xA2
        /// ANCS: the action was not performed.
        case actionFailed = 0xA3
        case writeRequestRejected = 0xFC
        /// Client Characteristic Configuration Descriptor Improperly Configured.
        case cccdImproperlyConfigured = 0xFD
        case procedureAlreadyInProgress = 0xFE
        case outOfRange = 0xFF
    }

    // The constants the project's code and its users match on, each made
    // from its entry of `Named`.
    public static let unknownCommand = ATTErrorCode(Named.unknownCommand)
    public static let invalidCommand = ATTErrorCode(Named.invalidCommand)
    public static let invalidParameter = ATTErrorCode(Named.invalidParameter)
    public static let actionFailed = ATTErrorCode(Named.actionFailed)
    public static let invalidHandle = ATTErrorCode(Named.invalidHandle)
    public static let readNotPermitted = ATTErrorCode(Named.readNotPermitted)
    public static let writeNotPermitted = ATTErrorCode(Named.writeNotPermitted)
    public static let insufficientAuthentication = ATTErrorCode(Named.insufficientAuthentication)
    public static let requestNotSupported = ATTErrorCode(Named.requestNotSupported)
    public static let invalidOffset = ATTErrorCode(Named.invalidOffset)
    public static let insufficientAuthorization = ATTErrorCode(Named.insufficientAuthorization)
    public static let insufficientEncryptionKeySize = ATTErrorCode(Named.insufficientEncryptionKeySize)
    public static let invalidAttributeValueLength = ATTErrorCode(Named.invalidAttributeValueLength)
    public static let unlikelyError = ATTErrorCode(Named.unlikelyError)
    public static let insufficientEncryption = ATTErrorCode(Named.insufficientEncryption)
    public static let cccdImproperlyConfigured = ATTErrorCode(Named.cccdImproperlyConfigured)

    /// True for the four codes ANCS defines; other values are plain ATT errors.
    public var isANCS: Bool { rawValue >= 0xA0 && rawValue <= 0xA3 }

    /// The code's entry in the table, nil for a code neither specification names.
    public var named: Named? { Named(rawValue: rawValue) }

    #if !hasFeature(Embedded)
    /// The code's one name in the project (its `Named` case), nil for a code
    /// neither specification defines. Logs, JSON and captures all use it.
    /// (Firmware has no reflection to name a case: the C API's
    /// `ancs_status_name` names its statuses.)
    public var name: String? { named.map { String(describing: $0) } }

    /// The name as words, for sentences: `insufficient authentication`,
    /// `invalid PDU`, `cccd improperly configured`; nil without a name.
    public var phrase: String? {
        guard let name else { return nil }
        var words = ""
        var previousUpper = false
        for (index, character) in name.enumerated() {
            let upper = character.isUppercase
            let next = name.dropFirst(index + 1).first
            // A new word starts at a capital after a small letter, or at the
            // last capital of a run followed by a small letter (`PDUList`).
            if upper, index > 0, !previousUpper || (next?.isLowercase ?? false) {
                words.append(" ")
            }
            let run = upper && (previousUpper || (next?.isUppercase ?? false) || next == nil)
            words.append(run ? character : Character(character.lowercased()))
            previousUpper = upper
        }
        return words
    }

    /// `name (0xNN)`, e.g. `insufficientAuthentication (0x05)`; a code with
    /// no name: `ATT error 0xNN`.
    public var description: String {
        let hex = "0x" + Hex.string(rawValue, uppercase: true)
        return name.map { "\($0) (\(hex))" } ?? "ATT error \(hex)"
    }
    #else
    public var description: String { "ATT error 0x" + Hex.string(rawValue, uppercase: true) }
    #endif
}

/// NotificationUID: names one iOS notification, valid only inside a session.
public struct NotificationUID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static func < (lhs: NotificationUID, rhs: NotificationUID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "\(rawValue)" }
}

/// A Bluetooth UUID: 128 bits, written `7905F431-B5CE-4E99-A40F-4B1E122D00D0`.
/// A 16-bit SIG UUID (0x2A05 Service Changed) is one on the Bluetooth Base
/// UUID, `0000xxxx-0000-1000-8000-00805F9B34FB`. Two values are equal when
/// their bits are, whatever the case or form of the text they came from.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// The first and last 64 bits, as the text reads (most significant first).
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The 16-bit SIG UUID on the Bluetooth Base UUID.
    public init(uuid16: UInt16) {
        self.init(high: 0x0000_1000 | UInt64(uuid16) << 32, low: 0x8000_0080_5F9B_34FB)
    }

    /// Reads `8-4-4-4-12` hex digits in any case, or 4 (a 16-bit SIG UUID):
    /// nil for anything else.
    public init?(_ text: String) {
        var digits: [UInt8] = []
        var dashes: [Int] = []
        for byte in text.utf8 {
            if byte == 0x2D { dashes.append(digits.count); continue }
            guard let digit = Hex.nibble(UInt32(byte)) else { return nil }
            digits.append(digit)
        }
        if digits.count == 4, dashes.isEmpty {
            self.init(uuid16: digits.reduce(0) { $0 << 4 | UInt16($1) })
            return
        }
        guard digits.count == 32, dashes == [8, 12, 16, 20] else { return nil }
        self.init(high: digits[..<16].reduce(0) { $0 << 4 | UInt64($1) },
                  low: digits[16...].reduce(0) { $0 << 4 | UInt64($1) })
    }

    /// The 16 bytes, most significant first (the text's order; ATT carries
    /// them reversed, little-endian).
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(16)
        for half in [high, low] {
            for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: half >> UInt64(shift))) }
        }
        return result
    }

    /// The 16-bit SIG UUID, when this one is on the Bluetooth Base UUID.
    public var uuid16: UInt16? {
        guard low == 0x8000_0080_5F9B_34FB, high & 0xFFFF_0000_FFFF_FFFF == 0x0000_1000 else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// `7905F431-B5CE-4E99-A40F-4B1E122D00D0`, upper case; BlueZ's
    /// properties and Bumble print lower case (`lowercased()` of this).
    public var description: String {
        let hex = Hex.string(bytes, uppercase: true)
        var text = ""
        for (index, character) in hex.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { text.append("-") }
            text.append(character)
        }
        return text
    }
}

/// The service and characteristic UUIDs (spec: "Service and characteristics").
public enum ANCSUUID {
    public static let service = BluetoothUUID(high: 0x7905_F431_B5CE_4E99, low: 0xA40F_4B1E_122D_00D0)
    public static let notificationSource = BluetoothUUID(high: 0x9FBF_120D_6301_42D9, low: 0x8C58_25E6_99A2_1DBD)
    public static let controlPoint = BluetoothUUID(high: 0x69D1_D8F3_45E1_49A8, low: 0x9821_9BBD_FDAA_D9D9)
    public static let dataSource = BluetoothUUID(high: 0x22EA_C6E9_24D6_4BB5, low: 0xBE44_B36A_CE7C_7BFB)
    /// GATT's Service Changed characteristic (in the GATT service 0x1801).
    public static let serviceChanged = BluetoothUUID(uuid16: 0x2A05)
    public static let gattService = BluetoothUUID(uuid16: 0x1801)
}

/// The three ANCS characteristics, as the engines name them to a transport:
/// the one place that gives each its UUID, its name and its short name.
public enum ANCSCharacteristic: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case notificationSource
    case controlPoint
    case dataSource

    public var uuid: BluetoothUUID {
        switch self {
        case .notificationSource: ANCSUUID.notificationSource
        case .controlPoint: ANCSUUID.controlPoint
        case .dataSource: ANCSUUID.dataSource
        }
    }

    /// The characteristic a UUID names, or nil: an NC ignores characteristics it does not know.
    public init?(uuid: BluetoothUUID) {
        switch uuid {
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
