/// A walk over the attributes a Get Notification Attributes or Get App
/// Attributes command asks for, in the command's bytes: the one reading of
/// their layout. Each attribute is its AttributeID, then, in Get Notification
/// Attributes and for an attribute that takes one, its max length (2 bytes,
/// little-endian); a response carries one tuple per attribute, in that order
/// (spec: "Get Notification Attributes", "Get App Attributes"). A command is
/// checked with it (`DataSourceParser.layout`), a request's attributes read
/// (`DataSourceRequest`), and a response framed against it, byte by byte
/// (`DataSourceParser.feed`) or with several requests outstanding
/// (`DataSourceReassembler`).
struct AttributeCursor: Sendable {
    /// Where the next AttributeID is in the command's bytes.
    var offset: Int
    /// The command is Get Notification Attributes (whose attributes may take a max length).
    var notification: Bool

    /// At the first attribute of a command whose header (CommandID and
    /// NotificationUID, or CommandID, AppIdentifier and NUL) is `headerCount` bytes.
    init<Command: RandomAccessCollection<UInt8>>(_ command: Command, headerCount: Int) where Command.Index == Int {
        offset = headerCount
        notification = command.count > 0 && command[0] == CommandID.getNotificationAttributes.rawValue
    }

    init(offset: Int = 0, notification: Bool = false) {
        self.offset = offset
        self.notification = notification
    }

    /// Whether `offset` is at the command's end (every attribute walked).
    func isAtEnd<Command: RandomAccessCollection<UInt8>>(of command: Command) -> Bool where Command.Index == Int { offset >= command.count }

    /// Steps over the attribute at `offset` and returns its max length, nil
    /// when it takes none. A command that ends inside the max length leaves
    /// `offset` past its end (the max length read as 0): `layout` refuses it.
    mutating func next<Command: RandomAccessCollection<UInt8>>(in command: Command) -> Int? where Command.Index == Int {
        let id = offset
        guard notification && NotificationAttributeID(rawValue: command[id]).takesMaxLength else {
            offset = id &+ 1
            return nil
        }
        offset = id &+ 3
        return id &+ 2 < command.count ? Int(command[id &+ 1]) | Int(command[id &+ 2]) << 8 : 0
    }
}
