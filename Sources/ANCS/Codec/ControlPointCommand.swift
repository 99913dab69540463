// Control Point commands (spec: "Control Point"). The NC encodes them; the NP
// decodes and validates them, and a decoding error tells which ANCS error the
// NP answers (`DecodingError.controlPointErrorCode`).

/// One attribute asked for in Get Notification Attributes.
///
/// Title, Subtitle and Message always carry a max length on the wire (0xFFFF
/// when none is given); other attributes never do, so a `maxLength` given for
/// them is dropped. Reserved attribute IDs carry none.
public struct NotificationAttributeRequest: Hashable, Sendable, CustomStringConvertible {
    public let id: NotificationAttributeID
    public let maxLength: UInt16?

    public init(_ id: NotificationAttributeID, maxLength: UInt16? = nil) {
        self.id = id
        self.maxLength = id.takesMaxLength ? (maxLength ?? 0xFFFF) : nil
    }

    public var description: String {
        if let maxLength { return "\(id)(max \(maxLength))" }
        return id.description
    }

    /// Its bytes in a command: the AttributeID, then the max length when it has one.
    var encodedLength: Int { maxLength == nil ? 1 : 3 }

    /// Writes its bytes at `index` of `bytes` and returns where the next
    /// attribute goes: the one writer of this layout (`ControlPointCommand`,
    /// and the C API's encoder into a caller's buffer).
    func write(to bytes: UnsafeMutablePointer<UInt8>, at index: Int) -> Int {
        bytes[index] = id.rawValue
        var next = index &+ 1
        if let maxLength {
            bytes[next] = UInt8(truncatingIfNeeded: maxLength)
            bytes[next &+ 1] = UInt8(truncatingIfNeeded: maxLength >> 8)
            next &+= 2
        }
        return next
    }
}

/// Get Notification Attributes (CommandID 0).
public struct GetNotificationAttributes: Hashable, Sendable {
    public var notificationUID: NotificationUID
    public var attributes: [NotificationAttributeRequest]

    public init(notificationUID: NotificationUID, attributes: [NotificationAttributeRequest]) {
        self.notificationUID = notificationUID
        self.attributes = attributes
    }
}

/// Get App Attributes (CommandID 1).
///
/// The AppIdentifier is kept as the bytes that go on the wire: the NP names
/// apps by those bytes (no Unicode equivalence), and an AppIdentifier that
/// is not valid UTF-8 must be asked for exactly as the NP sent it. Equality
/// is byte equality.
public struct GetAppAttributes: Hashable, Sendable {
    /// The AppIdentifier's bytes, without the NUL terminator.
    public var appIdentifierBytes: [UInt8]
    public var attributes: [AppAttributeID]

    /// The AppIdentifier as text (invalid UTF-8 shown as U+FFFD); setting it
    /// sets its UTF-8 bytes.
    public var appIdentifier: String {
        get { String(decoding: appIdentifierBytes, as: UTF8.self) }
        set { appIdentifierBytes = Array(newValue.utf8) }
    }

    public init(appIdentifier: String, attributes: [AppAttributeID] = [.displayName]) {
        self.appIdentifierBytes = Array(appIdentifier.utf8)
        self.attributes = attributes
    }

    public init(appIdentifierBytes: [UInt8], attributes: [AppAttributeID] = [.displayName]) {
        self.appIdentifierBytes = appIdentifierBytes
        self.attributes = attributes
    }
}

/// Perform Notification Action (CommandID 2), exactly 6 bytes.
public struct PerformNotificationAction: Hashable, Sendable {
    public var notificationUID: NotificationUID
    public var actionID: ActionID

    public init(notificationUID: NotificationUID, actionID: ActionID) {
        self.notificationUID = notificationUID
        self.actionID = actionID
    }
}

/// A Control Point command, either direction.
public enum ControlPointCommand: Hashable, Sendable {
    case getNotificationAttributes(GetNotificationAttributes)
    case getAppAttributes(GetAppAttributes)
    case performNotificationAction(PerformNotificationAction)

    /// The largest command an ATT write can carry.
    public static let maximumLength = 512

    public var commandID: CommandID {
        switch self {
        case .getNotificationAttributes: .getNotificationAttributes
        case .getAppAttributes: .getAppAttributes
        case .performNotificationAction: .performNotificationAction
        }
    }

    @inline(never) // called from several places in an engine: one copy
    public func encode() throws(EncodingError) -> [UInt8] {
        switch self {
        case .getNotificationAttributes(let command):
            guard !command.attributes.isEmpty else { throw EncodingError(.noAttributesRequested) }
        case .getAppAttributes(let command):
            guard !command.attributes.isEmpty else { throw EncodingError(.noAttributesRequested) }
            guard !command.appIdentifierBytes.contains(0) else { throw EncodingError(.appIdentifierContainsNUL) }
        case .performNotificationAction:
            break
        }
        let length = encodedLength
        guard length <= ControlPointCommand.maximumLength else {
            throw EncodingError(.commandTooLong(length: length))
        }
        return unvalidatedBytes(length: length)
    }

    /// The length of the command's bytes.
    var encodedLength: Int {
        switch self {
        case .getNotificationAttributes(let command):
            // (Wrapping: each attribute adds at most 3 and takes at least 5
            // bytes of the array's storage, itself at most `Int.max` bytes.)
            var length = 5
            for attribute in command.attributes { length &+= attribute.encodedLength }
            return length
        case .getAppAttributes(let command):
            return 2 + command.appIdentifierBytes.count + command.attributes.count
        case .performNotificationAction:
            return 6
        }
    }

    /// The command's bytes, as `encode()` makes them but whatever the
    /// command holds (no attributes, a NUL in the AppIdentifier, any
    /// length): what a `DataSourceRequest` made from it reads. (Out of
    /// line: inlined in the throwing `encode()`, the array's making kept a
    /// check for an error its closure never throws.)
    @inline(never)
    func unvalidatedBytes(length: Int) -> [UInt8] {
        // Every byte written in place into one allocation of the length
        // computed first: no growth code in a firmware image (`length`
        // bounds every write).
        [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            let bytes = buffer.baseAddress!
            bytes[0] = commandID.rawValue
            var index = 5
            let uid: NotificationUID
            switch self {
            case .getNotificationAttributes(let command):
                uid = command.notificationUID
                for attribute in command.attributes { index = attribute.write(to: bytes, at: index) }
            case .getAppAttributes(let command):
                index = 1
                for byte in command.appIdentifierBytes {
                    bytes[index] = byte
                    index &+= 1
                }
                bytes[index] = 0
                index &+= 1
                for attribute in command.attributes {
                    bytes[index] = attribute.rawValue
                    index &+= 1
                }
                assert(index == length, "encode: the bytes written differ from the length computed")
                initialized = buffer.count
                return
            case .performNotificationAction(let command):
                uid = command.notificationUID
                bytes[5] = command.actionID.rawValue
                index = 6
            }
            // The two commands about a notification: its UID after the
            // CommandID, stored in one place.
            storeUInt32LE(uid.rawValue, at: bytes + 1)
            assert(index == length, "encode: the bytes written differ from the length computed")
            // (The whole buffer, `length` bytes, which `index` equals: then
            // no check of the count against the capacity is compiled.)
            initialized = buffer.count
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> ControlPointCommand {
        guard let first = bytes.first else { throw DecodingError(.emptyCommand, at: 0) }
        switch CommandID(rawValue: first) {
        case .getNotificationAttributes:
            guard bytes.count >= 5 else { throw DecodingError(.truncated(field: .notificationUID), at: bytes.count) }
            let uid = NotificationUID(UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24)
            var attributes: [NotificationAttributeRequest] = []
            var index = 5
            while index < bytes.count {
                let id = NotificationAttributeID(rawValue: bytes[index])
                if id.takesMaxLength {
                    guard index + 2 < bytes.count else { throw DecodingError(.missingMaxLength(id), at: bytes.count) }
                    let maxLength = UInt16(bytes[index + 1]) | UInt16(bytes[index + 2]) << 8
                    attributes.append(NotificationAttributeRequest(id, maxLength: maxLength))
                    index += 3
                } else {
                    attributes.append(NotificationAttributeRequest(id))
                    index += 1
                }
            }
            guard !attributes.isEmpty else { throw DecodingError(.noAttributesRequested, at: 5) }
            return .getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes))
        case .getAppAttributes:
            guard let nul = bytes[1...].firstIndex(of: 0) else {
                throw DecodingError(.missingNULTerminator, at: bytes.count)
            }
            let attributes = bytes[(nul + 1)...].map { AppAttributeID(rawValue: $0) }
            guard !attributes.isEmpty else { throw DecodingError(.noAttributesRequested, at: nul + 1) }
            return .getAppAttributes(GetAppAttributes(appIdentifierBytes: Array(bytes[1..<nul]), attributes: attributes))
        case .performNotificationAction:
            guard bytes.count == 6 else {
                throw DecodingError(.performActionLength(actual: bytes.count), at: min(bytes.count, 6))
            }
            let uid = NotificationUID(UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24)
            return .performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: ActionID(rawValue: bytes[5])))
        default:
            throw DecodingError(.unknownCommand(CommandID(rawValue: first)), at: 0)
        }
    }
}
