/// The value of one attribute tuple of a Data Source response.
///
/// Values are UTF-8 but arrive cut to the max length asked, which may split
/// a multi-byte sequence (spec: "Data Source", rules). The raw bytes are
/// always kept; `string` decodes leniently. A valid UTF-8 value is stored as
/// a `String` (short ones inline, with no heap allocation), anything else as
/// its bytes.
public struct AttributeValue: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    enum Storage: Hashable, Sendable {
        case text(String)
        case bytes([UInt8])
    }
    var storage: Storage

    public init(_ string: String) { storage = .text(string) }
    public init(stringLiteral value: String) { storage = .text(value) }

    public init(bytes: [UInt8]) {
        if let text = String(validating: bytes, as: UTF8.self) {
            storage = .text(text)
        } else {
            storage = .bytes(bytes)
        }
    }

    public init(bytes: UnsafeBufferPointer<UInt8>) {
        if let text = String(validating: bytes, as: UTF8.self) {
            storage = .text(text)
        } else {
            storage = .bytes(Array(bytes))
        }
    }

    public static let empty = AttributeValue("")

    /// Byte length on the wire.
    public var count: Int {
        switch storage {
        case .text(let text): text.utf8.count
        case .bytes(let bytes): bytes.count
        }
    }

    public var isEmpty: Bool { count == 0 }

    /// The raw bytes, exactly as received.
    public var bytes: [UInt8] {
        switch storage {
        case .text(let text): Array(text.utf8)
        case .bytes(let bytes): bytes
        }
    }

    /// Calls `body` with the raw bytes, without copying them.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        switch storage {
        case .text(var text):
            return text.withUTF8 { body($0) }
        case .bytes(let bytes):
            return bytes.withUnsafeBufferPointer { body($0) }
        }
    }

    /// Whether the bytes are valid UTF-8 as received.
    public var isValidUTF8: Bool {
        if case .text = storage { return true }
        return false
    }

    /// The text, decoded leniently: a multi-byte sequence cut at the end (the
    /// NP truncated to the max length) is dropped; any other invalid byte
    /// becomes U+FFFD.
    public var string: String {
        switch storage {
        case .text(let text):
            return text
        case .bytes(let bytes):
            let end = bytes.count - AttributeValue.truncatedSuffixLength(bytes)
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
    }

    /// The Date attribute (`yyyyMMdd'T'HHmmSS`), or nil if the value is not one.
    public var date: ANCSDate? { withBytes { ANCSDate(parsing: $0) } }

    /// The MessageSize attribute (decimal ASCII digits), or nil if the value is not one.
    public var messageSize: Int? {
        withBytes { bytes in
            guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
            var value = 0
            for byte in bytes {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
    }

    public var description: String { string }

    /// Equality is byte equality.
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        switch (lhs.storage, rhs.storage) {
        case (.text(let a), .text(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.bytes(let a), .bytes(let b)): return a == b
        default: return false  // valid and invalid UTF-8 never have equal bytes
        }
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { bytes in
            hasher.combine(bytes.count)
            for byte in bytes { hasher.combine(byte) }
        }
    }

    /// How many bytes at the end form the start of a multi-byte sequence that
    /// the end cut short (0 when the value ends on a whole character).
    static func truncatedSuffixLength(_ bytes: [UInt8]) -> Int {
        var index = bytes.count - 1
        var continuation = 0
        while index >= 0 && continuation < 3 && bytes[index] & 0xC0 == 0x80 {
            continuation += 1
            index -= 1
        }
        guard index >= 0 else { return 0 }
        let lead = bytes[index]
        let needed: Int
        if lead & 0xE0 == 0xC0 { needed = 1 }
        else if lead & 0xF0 == 0xE0 { needed = 2 }
        else if lead & 0xF8 == 0xF0 { needed = 3 }
        else { return 0 }
        return continuation < needed ? continuation + 1 : 0
    }
}

/// A Date attribute in calendar fields: local time of the NP, no zone
/// (spec: "Attribute value formats", `yyyyMMdd'T'HHmmSS`).
public struct ANCSDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// Parses exactly 15 bytes `yyyyMMddTHHmmSS`; nil when malformed or out of range.
    public init?(parsing bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == 15, bytes[8] == 0x54 /* T */ else { return nil }
        func number(_ start: Int, _ length: Int) -> Int? {
            var value = 0
            for index in start..<(start + length) {
                let byte = bytes[index]
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(4, 2), let day = number(6, 2),
              let hour = number(9, 2), let minute = number(11, 2), let second = number(13, 2),
              (1...12).contains(month), (1...ANCSDate.daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second <= 60
        else { return nil }
        self.init(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    public init?(_ text: String) {
        var text = text
        guard let parsed = text.withUTF8({ ANCSDate(parsing: $0) }) else { return nil }
        self = parsed
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    public static func < (lhs: ANCSDate, rhs: ANCSDate) -> Bool {
        (lhs.year, lhs.month, lhs.day, lhs.hour, lhs.minute, lhs.second)
            < (rhs.year, rhs.month, rhs.day, rhs.hour, rhs.minute, rhs.second)
    }

    /// The wire form, `yyyyMMddTHHmmSS`.
    public var wireValue: String {
        padded(year, 4) + padded(month, 2) + padded(day, 2) + "T" + padded(hour, 2) + padded(minute, 2) + padded(second, 2)
    }

    /// ISO 8601 without zone: `YYYY-MM-DDTHH:MM:SS`.
    public var description: String {
        padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + "T"
            + padded(hour, 2) + ":" + padded(minute, 2) + ":" + padded(second, 2)
    }
}

func padded(_ value: Int, _ width: Int) -> String {
    var text = "\(value)"
    while text.utf8.count < width { text = "0" + text }
    return text
}
