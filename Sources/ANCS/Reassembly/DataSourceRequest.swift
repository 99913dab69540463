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

    /// Whom the response is about (for an app, its AppIdentifier decoded
    /// leniently; the request itself keeps and matches the exact bytes).
    public var subject: Subject {
        if commandID == .getAppAttributes {
            return .app(String(decoding: header[1..<(header.count - 1)], as: UTF8.self))
        }
        return .notification(notificationUID)
    }
    public let commandID: CommandID
    /// The NotificationUID asked for (0 for Get App Attributes).
    let notificationUID: NotificationUID
    /// CommandID and NotificationUID, or CommandID, AppIdentifier and NUL.
    let header: [UInt8]
    let tuples: [ExpectedTuple]

    public init(_ command: GetNotificationAttributes) {
        notificationUID = command.notificationUID
        commandID = .getNotificationAttributes
        let uid = command.notificationUID.rawValue
        // One allocation of the exact size (appending would grow it twice).
        header = [CommandID.getNotificationAttributes.rawValue, UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
                  UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24)]
        tuples = command.attributes.map { ExpectedTuple(id: $0.id.rawValue, maxLength: $0.maxLength.map { Int($0) }) }
    }

    public init(_ command: GetAppAttributes) {
        notificationUID = NotificationUID(0)
        commandID = .getAppAttributes
        var header: [UInt8] = [CommandID.getAppAttributes.rawValue]
        header.append(contentsOf: command.appIdentifierBytes)
        header.append(0)
        self.header = header
        tuples = command.attributes.map { ExpectedTuple(id: $0.rawValue, maxLength: nil) }
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

    /// The AppIdentifier's bytes of a Get App Attributes request, nil for Get
    /// Notification Attributes.
    public var appIdentifierBytes: [UInt8]? {
        commandID == .getAppAttributes ? Array(header[1..<(header.count - 1)]) : nil
    }

    /// Number of attribute tuples the response carries.
    public var tupleCount: Int { tuples.count }

    /// The largest number of value bytes the reassembler may hold for this
    /// request: its largest max length, `unlimited` for attributes without one.
    public func valueBound(unlimited: Int) -> Int {
        var bound = 0
        for tuple in tuples { bound = max(bound, tuple.maxLength ?? unlimited) }
        return bound
    }
}
