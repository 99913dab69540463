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

    struct ExpectedTuple: Hashable, Sendable {
        var id: UInt8
        /// The max length asked, or nil when the attribute carries none.
        var maxLength: Int?
    }

    /// The attributes asked, in order: the command's own list, not a copy.
    enum Attributes: Hashable, Sendable, RandomAccessCollection {
        case notification([NotificationAttributeRequest])
        case app([AppAttributeID])

        var startIndex: Int { 0 }
        var endIndex: Int { count }

        var count: Int {
            switch self {
            case .notification(let attributes): return attributes.count
            case .app(let attributes): return attributes.count
            }
        }

        /// The tuple at `index` (0 ..< count).
        subscript(index: Int) -> ExpectedTuple {
            switch self {
            case .notification(let attributes):
                let attribute = attributes[index]
                return ExpectedTuple(id: attribute.id.rawValue, maxLength: attribute.maxLength.map { Int($0) })
            case .app(let attributes):
                return ExpectedTuple(id: attributes[index].rawValue, maxLength: nil)
            }
        }
    }

    /// Whom the response is about (for an app, its AppIdentifier decoded
    /// leniently; the request itself keeps and matches the exact bytes).
    public var subject: Subject {
        if commandID == .getAppAttributes {
            return .app(String(decoding: header[1..<(headerCount - 1)], as: UTF8.self))
        }
        return .notification(notificationUID)
    }
    public let commandID: CommandID
    /// The NotificationUID asked for (0 for Get App Attributes).
    let notificationUID: NotificationUID
    /// The header, CommandID and NotificationUID or CommandID, AppIdentifier
    /// and NUL, in its first `headerCount` bytes. Made from the command's
    /// encoded bytes (which begin with it), these are those bytes, shared.
    let header: [UInt8]
    let headerCount: Int
    let tuples: Attributes

    public init(_ command: GetNotificationAttributes) {
        let uid = command.notificationUID.rawValue
        // One allocation of the exact size (appending would grow it twice).
        self.init(command, header: [CommandID.getNotificationAttributes.rawValue, UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
                                    UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24)])
    }

    public init(_ command: GetAppAttributes) {
        var header: [UInt8] = [CommandID.getAppAttributes.rawValue]
        header.append(contentsOf: command.appIdentifierBytes)
        header.append(0)
        self.init(command, header: header)
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

    /// The same, with the header read from `encoded`, the command's bytes as
    /// `encode()` made them (no allocation: the request shares them).
    init?(_ command: ControlPointCommand, encoded: [UInt8]) {
        switch command {
        case .getNotificationAttributes(let command): self.init(command, header: encoded)
        case .getAppAttributes(let command): self.init(command, header: encoded)
        case .performNotificationAction: return nil
        }
    }

    /// `header` begins with the header of `command`'s response (5 bytes).
    private init(_ command: GetNotificationAttributes, header: [UInt8]) {
        notificationUID = command.notificationUID
        commandID = .getNotificationAttributes
        self.header = header
        headerCount = 5
        tuples = .notification(command.attributes)
    }

    /// `header` begins with the header of `command`'s response.
    private init(_ command: GetAppAttributes, header: [UInt8]) {
        notificationUID = NotificationUID(0)
        commandID = .getAppAttributes
        self.header = header
        headerCount = command.appIdentifierBytes.count + 2
        tuples = .app(command.attributes)
    }

    public static func == (left: DataSourceRequest, right: DataSourceRequest) -> Bool {
        left.commandID == right.commandID && left.notificationUID == right.notificationUID
            && left.header[..<left.headerCount].elementsEqual(right.header[..<right.headerCount]) && left.tuples == right.tuples
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(commandID)
        hasher.combine(notificationUID)
        hasher.combine(headerCount)
        for byte in header[..<headerCount] { hasher.combine(byte) }
        hasher.combine(tuples)
    }

    /// The AppIdentifier's bytes of a Get App Attributes request, nil for Get
    /// Notification Attributes.
    public var appIdentifierBytes: [UInt8]? {
        commandID == .getAppAttributes ? Array(header[1..<(headerCount - 1)]) : nil
    }

    /// Number of attribute tuples the response carries.
    public var tupleCount: Int { tuples.count }

    /// The largest number of value bytes the reassembler may hold for this
    /// request (a response's values are kept together): the sum of its max
    /// lengths, `unlimited` for each attribute without one.
    public func valueBound(unlimited: Int) -> Int {
        var bound = 0
        for index in 0..<tuples.count { bound += tuples[index].maxLength ?? unlimited }
        return bound
    }
}
