// The bytes of AMS: what each characteristic carries in each direction.
//
//   Remote Command   write  [RemoteCommandID]
//                    notify [RemoteCommandID…]            the commands supported now
//   Entity Update    write  [EntityID, AttributeID…]      a registration
//                    notify [EntityID, AttributeID, EntityUpdateFlags, value…]
//   Entity Attribute write  [EntityID, AttributeID]       then read: the whole value
//
// Values are UTF-8 text (`AttributeValue`, kept as bytes, as ANCS's are);
// the numbers in them (PlaybackInfo, the volume, the duration, the queue's
// fields) are decimal text, read and written here without the C library.

/// Why bytes from the peer are not a valid AMS or CTS PDU, and where.
public struct MediaDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// An Entity Update notification is at least 3 bytes.
        case entityUpdateLength(actual: Int)
        /// A registration names an entity and at least one attribute.
        case registrationLength(actual: Int)
        /// An Entity Attribute write is exactly 2 bytes.
        case attributeSelectionLength(actual: Int)
        /// A Remote Command write is exactly 1 byte.
        case remoteCommandLength(actual: Int)
        /// A Current Time value is exactly 10 bytes.
        case currentTimeLength(actual: Int)
        /// A Local Time Information value is exactly 2 bytes.
        case localTimeInformationLength(actual: Int)
        /// A field of the Current Time is out of its range.
        case currentTimeField(String)
    }

    public var reason: Reason
    public var offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var message: String {
        switch reason {
        case .entityUpdateLength(let actual): "an Entity Update notification is at least 3 bytes, got \(actual)"
        case .registrationLength(let actual): "a registration is an EntityID and at least one AttributeID, got \(actual) bytes"
        case .attributeSelectionLength(let actual): "an Entity Attribute write is exactly 2 bytes, got \(actual)"
        case .remoteCommandLength(let actual): "a Remote Command write is exactly 1 byte, got \(actual)"
        case .currentTimeLength(let actual): "a Current Time value is exactly 10 bytes, got \(actual)"
        case .localTimeInformationLength(let actual): "a Local Time Information value is exactly 2 bytes, got \(actual)"
        case .currentTimeField(let field): "the Current Time's \(field) is out of range"
        }
    }

    public var description: String { "offset \(offset): \(message)" }
}

/// The commands a Remote Command notification lists: one byte each.
public enum RemoteCommandList {
    public static func decode(_ bytes: [UInt8]) -> [RemoteCommandID] {
        bytes.map { RemoteCommandID(rawValue: $0) }
    }

    public static func encode(_ commands: [RemoteCommandID]) -> [UInt8] {
        commands.map { $0.rawValue }
    }
}

/// A Remote Command write: one RemoteCommandID.
extension RemoteCommandID {
    public static func decode(write bytes: [UInt8]) throws(MediaDecodingError) -> RemoteCommandID {
        guard bytes.count == 1 else { throw MediaDecodingError(.remoteCommandLength(actual: bytes.count), at: min(bytes.count, 1)) }
        return RemoteCommandID(rawValue: bytes[0])
    }
}

/// A registration, written to Entity Update: the attributes of one entity
/// the accessory wants notified. A new one for an entity replaces the last.
public struct EntityRegistration: Hashable, Sendable {
    public var entity: EntityID
    public var attributeIDs: [UInt8]

    public init(_ entity: EntityID, _ attributeIDs: [UInt8]) {
        self.entity = entity
        self.attributeIDs = attributeIDs
    }

    /// The registration of these attributes, all of one entity.
    public init(_ entity: EntityID, attributes: [MediaAttribute]) {
        self.init(entity, attributes.filter { $0.entity == entity }.map { $0.attributeID })
    }

    /// Every attribute AMS defines, one registration per entity.
    public static var all: [EntityRegistration] {
        [EntityID.player, .queue, .track].map { EntityRegistration($0, attributes: MediaAttribute.all) }
    }

    public var attributes: [MediaAttribute] { attributeIDs.map { MediaAttribute(entity, $0) } }

    public func encode() -> [UInt8] { [entity.rawValue] + attributeIDs }

    public static func decode(_ bytes: [UInt8]) throws(MediaDecodingError) -> EntityRegistration {
        guard bytes.count >= 2 else { throw MediaDecodingError(.registrationLength(actual: bytes.count), at: bytes.count) }
        return EntityRegistration(EntityID(rawValue: bytes[0]), Array(bytes[1...]))
    }
}

extension MediaAttribute {
    /// The Entity Attribute write that selects this attribute for the read that follows.
    public func encodeSelection() -> [UInt8] { [entity.rawValue, attributeID] }

    public static func decode(selection bytes: [UInt8]) throws(MediaDecodingError) -> MediaAttribute {
        guard bytes.count == 2 else {
            throw MediaDecodingError(.attributeSelectionLength(actual: bytes.count), at: min(bytes.count, 2))
        }
        return MediaAttribute(EntityID(rawValue: bytes[0]), bytes[1])
    }
}

/// An Entity Update notification: one attribute's value, perhaps cut.
public struct EntityUpdate: Hashable, Sendable {
    public var attribute: MediaAttribute
    public var flags: EntityUpdateFlags
    public var value: AttributeValue

    public init(_ attribute: MediaAttribute, _ value: AttributeValue, flags: EntityUpdateFlags = []) {
        self.attribute = attribute
        self.value = value
        self.flags = flags
    }

    public var isTruncated: Bool { flags.contains(.truncated) }

    public func encode() -> [UInt8] {
        var bytes = [attribute.entity.rawValue, attribute.attributeID, flags.rawValue]
        value.withBytes { bytes.append(contentsOf: $0) }
        return bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(MediaDecodingError) -> EntityUpdate {
        guard bytes.count >= 3 else { throw MediaDecodingError(.entityUpdateLength(actual: bytes.count), at: bytes.count) }
        return EntityUpdate(
            MediaAttribute(EntityID(rawValue: bytes[0]), bytes[1]),
            AttributeValue(bytes: Array(bytes[3...])),
            flags: EntityUpdateFlags(rawValue: bytes[2]))
    }

    /// The notification an AMS server sends for `value` at this ATT MTU:
    /// whole when it fits in MTU − 3 bytes, else cut at a character's start
    /// and flagged truncated (the accessory then reads all of it).
    public static func fitting(_ attribute: MediaAttribute, _ value: AttributeValue, mtu: Int) -> EntityUpdate {
        let room = max(min(max(mtu, 23), 517) - 3 - 3, 0)
        guard value.count > room else { return EntityUpdate(attribute, value) }
        let cut = value.withBytes { bytes -> [UInt8] in
            var end = room
            while end > 0 && bytes[end] & 0xC0 == 0x80 { end -= 1 }  // not inside a character
            return Array(bytes[..<end])
        }
        return EntityUpdate(attribute, AttributeValue(bytes: cut), flags: .truncated)
    }
}

/// The Player's PlaybackInfo, `state,rate,elapsed`: `1,1.0,12.345` is
/// playing at normal speed, 12.345 s into the track.
public struct PlaybackInfo: Hashable, Sendable, CustomStringConvertible {
    public var state: PlaybackState
    /// 1 is normal speed, 0 paused, negative rewinding.
    public var rate: Double
    /// Seconds into the track when the value was sent.
    public var elapsed: Double

    public init(state: PlaybackState, rate: Double, elapsed: Double) {
        self.state = state
        self.rate = rate
        self.elapsed = elapsed
    }

    /// Reads the value; nil unless it is three comma-separated fields, an
    /// integer and two decimals. (An empty value means no player: nil.)
    public init?(_ value: AttributeValue) {
        let parsed: PlaybackInfo? = value.withBytes { bytes in
            let fields = bytes.split(separator: 0x2C, omittingEmptySubsequences: false)
            guard fields.count == 3,
                  let state = MediaNumber.integer(UnsafeBufferPointer(rebasing: fields[0])),
                  let rate = MediaNumber.decimal(UnsafeBufferPointer(rebasing: fields[1])),
                  let elapsed = MediaNumber.decimal(UnsafeBufferPointer(rebasing: fields[2])) else { return nil }
            return PlaybackInfo(state: PlaybackState(rawValue: state), rate: rate, elapsed: elapsed)
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// `1,1.0,12.345`: the rate and the elapsed time to the millisecond.
    public var value: AttributeValue {
        AttributeValue(bytes: MediaNumber.text(state.rawValue) + [0x2C] + MediaNumber.text(rate) + [0x2C] + MediaNumber.text(elapsed))
    }

    public var description: String { value.string }
}

/// Decimal text, as AMS values carry numbers: read and written here, not
/// by the C library (firmware has no `strtod` to spare).
public enum MediaNumber {
    // One specialization each (the bytes in place): a generic reader was
    // compiled once per kind of collection, 400 bytes more in firmware.

    /// An optional minus, then digits: nil for anything else (or more than 18 digits).
    public static func integer(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBufferPointer { integer($0) } }

    /// An optional minus, digits, and an optional fraction: nil for anything else.
    public static func decimal(_ bytes: [UInt8]) -> Double? { bytes.withUnsafeBufferPointer { decimal($0) } }

    /// An optional minus, then digits: nil for anything else (or more than 18 digits).
    public static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var negative = false
        var value = 0
        var digits = 0
        for (index, byte) in bytes.enumerated() {
            if index == 0 && byte == 0x2D { negative = true; continue }
            guard byte >= 0x30 && byte <= 0x39, digits < 18 else { return nil }
            value = value * 10 + Int(byte - 0x30)
            digits += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    /// An optional minus, digits, and an optional fraction (`.5`, `12.`
    /// and `3.25` are read; an exponent is not): nil for anything else.
    public static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var negative = false
        var mantissa: Int64 = 0
        var scale = 1.0
        var digits = 0
        var seenPoint = false
        for (index, byte) in bytes.enumerated() {
            if index == 0 && byte == 0x2D { negative = true; continue }
            if byte == 0x2E && !seenPoint { seenPoint = true; continue }
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            if digits < 18 {
                mantissa = mantissa * 10 + Int64(byte - 0x30)
                if seenPoint { scale *= 10 }
            } else if !seenPoint {
                return nil  // a number past 10^18: not a media value
            }
            digits += 1
        }
        guard digits > 0 else { return nil }
        let magnitude = Double(mantissa) / scale
        return negative ? -magnitude : magnitude
    }

    public static func text(_ value: Int) -> [UInt8] { Array("\(value)".utf8) }

    /// At most three decimals, at least one: `1.0`, `0.5`, `12.345`.
    public static func text(_ value: Double) -> [UInt8] {
        guard value.isFinite, abs(value) < 1e15 else { return Array("0.0".utf8) }  // no media number is larger
        let milli = Int64(abs(value) * 1000 + 0.5)  // rounded, without libm's round()
        var text = value < 0 && milli != 0 ? "-" : ""
        text += "\(milli / 1000)."
        var fraction = milli % 1000
        var places = 3
        while places > 1 && fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        let digits = "\(fraction)"
        text += String(repeating: "0", count: places - digits.count) + digits
        return Array(text.utf8)
    }
}
