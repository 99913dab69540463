/// A Notification Source event (spec: "Notification Source"), exactly 8 bytes.
public struct NotificationSourceEvent: Hashable, Sendable {
    public var eventID: EventID
    public var eventFlags: EventFlags
    public var categoryID: CategoryID
    /// Active iOS notifications in that category, this one included.
    public var categoryCount: UInt8
    public var notificationUID: NotificationUID

    public static let length = 8

    public init(eventID: EventID, eventFlags: EventFlags, categoryID: CategoryID, categoryCount: UInt8, notificationUID: NotificationUID) {
        self.eventID = eventID
        self.eventFlags = eventFlags
        self.categoryID = categoryID
        self.categoryCount = categoryCount
        self.notificationUID = notificationUID
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(DecodingError) -> NotificationSourceEvent {
        guard bytes.count == length else {
            throw DecodingError(.notificationSourceLength(actual: bytes.count), at: min(bytes.count, length))
        }
        return NotificationSourceEvent(
            eventID: EventID(rawValue: bytes[0]),
            eventFlags: EventFlags(rawValue: bytes[1]),
            categoryID: CategoryID(rawValue: bytes[2]),
            categoryCount: bytes[3],
            notificationUID: NotificationUID(readUInt32LE(bytes, at: 4))
        )
    }

    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> NotificationSourceEvent {
        let result = bytes.withUnsafeBytes { raw in
            Result<NotificationSourceEvent, DecodingError> { () throws(DecodingError) in try decode(raw) }
        }
        return try result.get()
    }

    public func encode() -> [UInt8] {
        let uid = notificationUID.rawValue
        return [
            eventID.rawValue, eventFlags.rawValue, categoryID.rawValue, categoryCount,
            UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
            UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24),
        ]
    }
}

@inline(__always)
func readUInt32LE(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset &+ 1]) << 8 | UInt32(bytes[offset &+ 2]) << 16 | UInt32(bytes[offset &+ 3]) << 24
}

/// A little-endian UInt16 from an array, as an Int: one bounds check for the two bytes.
func readUInt16LE(_ bytes: [UInt8], at offset: Int) -> Int {
    precondition(offset >= 0 && offset <= bytes.count - 2, "readUInt16LE: out of range")
    return bytes.withUnsafeBytes { Int($0[offset]) | Int($0[offset &+ 1]) << 8 }
}

/// The same from an array: one bounds check for the four bytes.
func readUInt32LE(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    precondition(offset >= 0 && offset <= bytes.count - 4, "readUInt32LE: out of range")
    return bytes.withUnsafeBytes { readUInt32LE($0, at: offset) }
}

@inline(__always)
func storeUInt32LE(_ value: UInt32, at bytes: UnsafeMutablePointer<UInt8>) {
    bytes[0] = UInt8(truncatingIfNeeded: value)
    bytes[1] = UInt8(truncatingIfNeeded: value >> 8)
    bytes[2] = UInt8(truncatingIfNeeded: value >> 16)
    bytes[3] = UInt8(truncatingIfNeeded: value >> 24)
}

@inline(__always)
func appendUInt32LE(_ value: UInt32, to bytes: inout [UInt8]) {
    bytes.append(UInt8(truncatingIfNeeded: value))
    bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    bytes.append(UInt8(truncatingIfNeeded: value >> 16))
    bytes.append(UInt8(truncatingIfNeeded: value >> 24))
}

@inline(__always)
func appendUInt16LE(_ value: UInt16, to bytes: inout [UInt8]) {
    bytes.append(UInt8(truncatingIfNeeded: value))
    bytes.append(UInt8(truncatingIfNeeded: value >> 8))
}
