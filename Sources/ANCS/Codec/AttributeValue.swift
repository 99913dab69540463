/// The value of one attribute tuple of a Data Source response.
///
/// Values are UTF-8 but arrive cut to the max length asked, which may split
/// a multi-byte sequence (spec: "Data Source", rules). A value is kept as its
/// raw bytes, exactly as received: nothing is validated or decoded while
/// responses are reassembled, and a `String` is made only when `string` (or
/// `description`) is read, at the API edge. Equality is byte equality.
public struct AttributeValue: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    // The bytes are `count` bytes of `storage` from `start`: the reassembler
    // keeps all the values of a response in one buffer, and each value is
    // its part of it (one allocation per response, not one per value).
    // Inlinable accessors below (count, withBytes, …): a consumer reads every
    // value, and a call per access costs more than the access.
    @usableFromInline var storage: [UInt8]
    @usableFromInline var start: Int
    /// Byte length on the wire.
    public let count: Int

    public init(_ string: String) { self.init(bytes: Array(string.utf8)) }
    public init(stringLiteral value: String) { self.init(bytes: Array(value.utf8)) }
    public init(bytes: [UInt8]) {
        storage = bytes
        start = 0
        count = bytes.count
    }
    public init(bytes: UnsafeBufferPointer<UInt8>) { self.init(bytes: Array(bytes)) }

    /// `count` bytes of `buffer` from `start` (the caller checked the range).
    init(in buffer: [UInt8], start: Int, count: Int) {
        storage = buffer
        self.start = start
        self.count = count
    }

    public static var empty: AttributeValue { AttributeValue(bytes: []) }

    @inlinable
    public var isEmpty: Bool { count == 0 }

    /// The raw bytes, exactly as received (a copy, unless the value is its
    /// whole buffer). Out of line: inlined, each use grew a firmware engine
    /// (BENCHMARKS.md section 5, "Why the core is shaped for size").
    public var bytes: [UInt8] {
        @inline(never) get { start == 0 && count == storage.count ? storage : withBytes { Array($0) } }
    }

    /// Calls `body` with the raw bytes, without copying them.
    @inlinable
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        storage.withUnsafeBufferPointer { buffer in
            body(UnsafeBufferPointer(start: buffer.baseAddress.map { $0 + start }, count: count))
        }
    }

    public static func == (left: AttributeValue, right: AttributeValue) -> Bool {
        // (A loop of its own: `elementsEqual` is 76 more bytes of firmware.)
        left.count == right.count && left.withBytes { a in
            right.withBytes { b in
                for index in 0..<a.count where a[index] != b[index] { return false }
                return true
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Whether the bytes are valid UTF-8 as received (checked on each read).
    public var isValidUTF8: Bool {
        withBytes { UTF8Validation.isValidUTF8($0) }
    }

    /// The text, decoded leniently: a multi-byte sequence cut at the end (the
    /// NP truncated to the max length) is dropped; any other invalid byte
    /// becomes U+FFFD.
    public var string: String {
        withBytes { bytes in
            if let text = UTF8Validation.string(bytes) { return text }
            let end = bytes.count - AttributeValue.truncatedSuffixLength(bytes)
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
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

    /// How many bytes at the end form the start of a multi-byte sequence that
    /// the end cut short (0 when the value ends on a whole character). Only a
    /// start that valid UTF-8 could go on from counts: a lead byte C2–F4 and,
    /// after E0, ED, F0 or F4, a second byte in its allowed range (Unicode
    /// Table 3-7). C0, C1, F5–FF or an impossible second byte are invalid,
    /// not cut, and become U+FFFD.
    static func truncatedSuffixLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var index = bytes.count - 1
        var continuation = 0
        while index >= 0 && continuation < 3 && bytes[index] & 0xC0 == 0x80 {
            continuation += 1
            index -= 1
        }
        guard index >= 0 else { return 0 }
        let lead = bytes[index]
        let needed: Int
        switch lead {
        case 0xC2...0xDF: needed = 1
        case 0xE0...0xEF: needed = 2
        case 0xF0...0xF4: needed = 3
        default: return 0
        }
        guard continuation < needed else { return 0 }
        if continuation > 0 {
            let second = bytes[index + 1]
            switch lead {
            case 0xE0: guard second >= 0xA0 else { return 0 }
            case 0xED: guard second <= 0x9F else { return 0 }
            case 0xF0: guard second >= 0x90 else { return 0 }
            case 0xF4: guard second <= 0x8F else { return 0 }
            default: break
            }
        }
        return continuation + 1
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

/// UTF-8 validation for attribute values: the same verdict as
/// `String(validating:as: UTF8.self)` (well-formed UTF-8, Unicode Table 3-7:
/// no overlong forms, surrogates or code points above U+10FFFF), about four
/// times faster on mixed text, and without the generic call the standard
/// library's validating initializer makes at run time.
///
/// A shift-based DFA: a state is a bit offset (0, 6, …, 48) into a 64-bit
/// row chosen by the byte's class; the row holds, at that offset, the offset
/// of the next state. So one step is a table load and a shift, and the long
/// dependency chain of a per-byte branch is gone. The scan skips the ASCII
/// prefix a word at a time and then runs two halves of the rest side by side.
enum UTF8Validation {
    // States, as bit offsets.
    static let accept: UInt64 = 0
    static let stateMask: UInt64 = 63

    /// The class of each byte: 0 ASCII, 1 80–8F, 2 90–9F, 3 A0–BF (continuation
    /// bytes), 4 never valid (C0, C1, F5–FF), 5 C2–DF, 6 E0, 7 E1–EC and EE–EF,
    /// 8 ED, 9 F0, 10 F1–F3, 11 F4.
    static let byteClasses: [UInt8] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 00–1F
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 20–3F
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 40–5F
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 60–7F
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,  // 80–9F
        3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,  // A0–BF
        4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,  // C0–DF
        6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 7, 9, 10, 10, 10, 11, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,  // E0–FF
    ]

    /// The transitions by byte class. States (offsets): 0 accept, 6 reject,
    /// 12/18/24 one/two/three continuation bytes to go, 30 after E0 (next
    /// A0–BF), 36 after ED (next 80–9F), 42 after F0 (next 90–BF), 48 after
    /// F4 (next 80–8F). Row c holds next(s, c) << s for every state s.
    static let transitions: [UInt64] = [
        0x0006_1861_8618_6180, 0x0012_18C1_9230_0186, 0x0006_48C1_9230_0186, 0x0006_4863_1230_0186,
        0x0006_1861_8618_6186, 0x0006_1861_8618_618C, 0x0006_1861_8618_619E, 0x0006_1861_8618_6192,
        0x0006_1861_8618_61A4, 0x0006_1861_8618_61AA, 0x0006_1861_8618_6198, 0x0006_1861_8618_61B0,
    ]

    #if !hasFeature(Embedded)
    /// Two bytes per step on hosted platforms (a quarter less time): the
    /// row at 12 × c1 + c2 is row c1 followed by row c2. Computed once from
    /// `transitions`; Embedded builds do without it, to save firmware text
    /// (BENCHMARKS.md section 5, "Why the core is shaped for size").
    static let pairTransitions: [UInt64] = {
        var pairs = [UInt64](repeating: 0, count: 144)
        for first in 0..<12 {
            for second in 0..<12 {
                var row: UInt64 = 0
                for state in stride(from: UInt64(0), through: 48, by: 6) {
                    let middle = (transitions[first] &>> state) & stateMask
                    row |= ((transitions[second] &>> middle) & stateMask) << state
                }
                pairs[first * 12 + second] = row
            }
        }
        return pairs
    }()
    #endif

    /// Whether the bytes are well-formed UTF-8.
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return true }
        let ascii = asciiPrefixLength(start, bytes.count)
        return ascii == bytes.count || isValid(start + ascii, bytes.count - ascii)
    }

    /// The bytes as a String when they are valid UTF-8, else nil.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return "" }
        let ascii = asciiPrefixLength(start, bytes.count)
        if ascii < bytes.count && !isValid(start + ascii, bytes.count - ascii) { return nil }
        if #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) {
            // Validated above: copy without validating again.
            return String(copying: UTF8Span(unchecked: bytes.span, isKnownASCII: ascii == bytes.count))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// How many bytes at the start are ASCII.
    static func asciiPrefixLength(_ start: UnsafePointer<UInt8>, _ count: Int) -> Int {
        let raw = UnsafeRawPointer(start)
        var index = 0
        while index + 8 <= count {
            let high = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080
            if high != 0 { return index + (UInt64(littleEndian: high).trailingZeroBitCount >> 3) }
            index += 8
        }
        while index < count && start[index] < 0x80 { index += 1 }
        return index
    }

    /// Whether `count` bytes at `start` are well-formed UTF-8.
    static func isValid(_ start: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        // Split at a byte that is not a continuation byte, so that each half
        // starts on a character: then the whole is valid exactly when both
        // halves are. Valid UTF-8 has one within any four bytes.
        var middle = count >> 1
        let limit = min(count, middle + 4)
        while middle < limit && start[middle] & 0xC0 == 0x80 { middle += 1 }
        if middle == limit && middle < count { return false }
        let second = start + middle
        let firstCount = middle
        let secondCount = count - middle
        let common = min(firstCount, secondCount)
        return byteClasses.withUnsafeBufferPointer { classes in
            transitions.withUnsafeBufferPointer { rows in
                let classes = classes.baseAddress!
                let rows = rows.baseAddress!
                var state1 = accept
                var state2 = accept
                var index = 0
                #if !hasFeature(Embedded)
                pairTransitions.withUnsafeBufferPointer { pairs in
                    let pairs = pairs.baseAddress!
                    let paired = common & ~1
                    while index < paired {
                        let pair1 = Int(classes[Int(start[index])]) &* 12 &+ Int(classes[Int(start[index + 1])])
                        let pair2 = Int(classes[Int(second[index])]) &* 12 &+ Int(classes[Int(second[index + 1])])
                        state1 = pairs[pair1] &>> state1
                        state2 = pairs[pair2] &>> state2
                        index += 2
                    }
                }
                #endif
                while index < common {
                    state1 = rows[Int(classes[Int(start[index])])] &>> state1
                    state2 = rows[Int(classes[Int(second[index])])] &>> state2
                    index += 1
                }
                for index in common..<firstCount { state1 = rows[Int(classes[Int(start[index])])] &>> state1 }
                for index in common..<secondCount { state2 = rows[Int(classes[Int(second[index])])] &>> state2 }
                return state1 & stateMask == accept && state2 & stateMask == accept
            }
        }
    }
}
