/// What a Data Source response must look like: the header it starts with and
/// the attribute tuples it carries, in order, each with its max length
/// (spec: "the NC must remember which attributes it asked for, in which order").
public struct DataSourceRequest: Hashable, Sendable {
    public enum Subject: Hashable, Sendable {
        case notification(NotificationUID)
        /// The AppIdentifier as text; the response is matched, and answered
        /// with, its exact bytes (`appIdentifierBytes`).
        case app(String)
    }

    /// Whom the response is about (for an app, its AppIdentifier decoded
    /// leniently; the request itself keeps and matches the exact bytes).
    public var subject: Subject {
        if commandID == .getAppAttributes {
            return .app(String(decoding: bytes[1..<(headerCount - 1)], as: UTF8.self))
        }
        return .notification(notificationUID)
    }
    public let commandID: CommandID
    /// The NotificationUID asked for (0 for Get App Attributes).
    let notificationUID: NotificationUID
    /// The command's bytes: the response's header (CommandID and
    /// NotificationUID, or CommandID, AppIdentifier and NUL) in the first
    /// `headerCount`, then the attributes asked, in order, each AttributeID
    /// followed by its max length (2 bytes, little-endian) when it takes one
    /// (`AttributeCursor` reads them). Made from the command's encoded bytes,
    /// these are those bytes, shared.
    let bytes: [UInt8]
    let headerCount: Int
    /// Number of attribute tuples the response carries.
    public let tupleCount: Int

    public init(_ command: GetNotificationAttributes) {
        let whole = ControlPointCommand.getNotificationAttributes(command)
        self.init(command, bytes: whole.unvalidatedBytes(length: whole.encodedLength))
    }

    public init(_ command: GetAppAttributes) {
        let whole = ControlPointCommand.getAppAttributes(command)
        self.init(command, bytes: whole.unvalidatedBytes(length: whole.encodedLength))
    }

    /// The request a command's response answers; nil for Perform Notification
    /// Action, which has no Data Source response.
    public init?(_ command: ControlPointCommand) {
        switch command {
        case .getNotificationAttributes(let command): self.init(command)
        case .getAppAttributes(let command): self.init(command)
        case .performNotificationAction: return nil
        }
    }

    /// The request of a command's bytes as `encode()` made them (sharing
    /// them); nil for Perform Notification Action, which has no response.
    /// The bytes are trusted (the engine's own commands): read, not checked
    /// as `DataSourceParser.layout` checks a caller's (smaller firmware:
    /// BENCHMARKS.md section 5; a cut max length reads as 0, a missing NUL
    /// as no attributes, never past the end). The bytes are borrowed, and
    /// kept shared (a copy of the array, not of its bytes).
    init?(encoded bytes: borrowing [UInt8]) {
        commandID = CommandID(rawValue: bytes[0])
        self.bytes = copy bytes
        switch commandID {
        case .getNotificationAttributes:
            notificationUID = NotificationUID(readUInt32LE(bytes, at: 1))
            headerCount = 5
            var attributes = AttributeCursor(offset: 5, notification: true)
            var tuples = 0
            while attributes.offset < bytes.count {
                _ = attributes.next(in: bytes)
                tuples &+= 1
            }
            tupleCount = tuples
        case .getAppAttributes:
            notificationUID = NotificationUID(0)
            headerCount = (bytes.firstIndex(of: 0) ?? bytes.count &- 1) &+ 1
            // One AttributeID per attribute, after the NUL (none without one).
            tupleCount = bytes.count &- headerCount
        default:
            return nil
        }
    }

    private init(_ command: GetNotificationAttributes, bytes: [UInt8]) {
        notificationUID = command.notificationUID
        commandID = .getNotificationAttributes
        self.bytes = bytes
        headerCount = 5
        tupleCount = command.attributes.count
    }

    private init(_ command: GetAppAttributes, bytes: [UInt8]) {
        notificationUID = NotificationUID(0)
        commandID = .getAppAttributes
        self.bytes = bytes
        headerCount = command.appIdentifierBytes.count + 2
        tupleCount = command.attributes.count
    }

    // The bytes say everything else (the header count too, for a command
    // that cannot be encoded: a NUL inside its AppIdentifier).
    public static func == (left: DataSourceRequest, right: DataSourceRequest) -> Bool {
        left.headerCount == right.headerCount && left.bytes == right.bytes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(headerCount)
        hasher.combine(bytes)
    }

    /// Each attribute asked, in order: the offset of its AttributeID in
    /// `bytes` and its max length (nil when it takes none).
    private func forEachTuple(_ body: (_ offset: Int, _ maxLength: Int?) -> Void) {
        bytes.withUnsafeBytes { command in
            var attributes = AttributeCursor(command, headerCount: headerCount)
            while !attributes.isAtEnd(of: command) {
                let offset = attributes.offset
                body(offset, attributes.next(in: command))
            }
        }
    }

    /// The attributes asked, in order: each AttributeID and its max length
    /// (nil when it takes none). For checks; the reassembler reads them in
    /// place (`AttributeCursor`).
    var tuples: [(id: UInt8, maxLength: Int?)] {
        var tuples: [(id: UInt8, maxLength: Int?)] = []
        forEachTuple { offset, maxLength in tuples.append((bytes[offset], maxLength)) }
        return tuples
    }

    /// The AppIdentifier's bytes of a Get App Attributes request, nil for Get
    /// Notification Attributes.
    public var appIdentifierBytes: [UInt8]? {
        // (Copied out by `AttributeValue.bytes`, which a firmware links anyway.)
        appIdentifierValue?.bytes
    }

    /// The AppIdentifier of a Get App Attributes request as a value that
    /// shares the command's bytes (nothing copied); nil for Get Notification
    /// Attributes.
    var appIdentifierValue: AttributeValue? {
        // (`headerCount` never passes the bytes' end.)
        commandID == .getAppAttributes ? AttributeValue(in: bytes, start: 1, count: headerCount &- 2) : nil
    }

    /// The largest number of bytes the reassembler may hold for this
    /// request's response (its values are kept together, each after its
    /// AttributeID and Length): the sum of its max lengths, `unlimited` for
    /// each attribute without one, plus 3 bytes per attribute.
    public func valueBound(unlimited: Int) -> Int {
        var bound = 0
        forEachTuple { _, maxLength in bound += 3 + (maxLength ?? unlimited) }
        return bound
    }
}
