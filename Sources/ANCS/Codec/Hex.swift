/// Hexadecimal text for bytes: the project's one encoder and one parser
/// (descriptions, JSON, captures, the Bumble line protocol, `ancs decode`,
/// the ATT codes in BlueZ's error messages).
public enum Hex {
    /// Two digits per byte, `separator` between bytes.
    public static func string<Bytes: Sequence<UInt8>>(_ bytes: Bytes, uppercase: Bool = false, separator: String = "") -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * (2 + separator.utf8.count))
        for byte in bytes {
            if !out.isEmpty { out.append(contentsOf: separator.utf8) }
            out.append(digit(byte >> 4, uppercase))
            out.append(digit(byte & 0xF, uppercase))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One byte as two digits.
    public static func string(_ byte: UInt8, uppercase: Bool = false) -> String {
        String(decoding: [digit(byte >> 4, uppercase), digit(byte & 0xF, uppercase)], as: UTF8.self)
    }

    @inline(__always)
    static func digit(_ nibble: UInt8, _ uppercase: Bool) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) + nibble - 10
    }

    /// The value of one hex digit in either case (an ASCII byte), or nil.
    @inline(__always)
    static func nibble(_ ascii: UInt32) -> UInt8? {
        switch ascii {
        case 0x30...0x39: UInt8(ascii - 0x30)
        case 0x61...0x66: UInt8(ascii - 0x61 + 10)
        case 0x41...0x46: UInt8(ascii - 0x41 + 10)
        default: nil
        }
    }

    /// Why hex text could not be read; `position` counts characters from 1.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public enum Reason: Hashable, Sendable {
            case notADigit(Unicode.Scalar)
            case splitByte
            case halfByteAtEnd
        }
        public let reason: Reason
        public let position: Int

        public var description: String {
            switch reason {
            case .notADigit(let scalar): "hex character \(position): '\(String(scalar))' is not a hex digit"
            case .splitByte: "hex character \(position): a byte needs two digits"
            case .halfByteAtEnd: "hex ends with half a byte (odd number of digits)"
            }
        }
    }

    /// One byte written as one or two digits in either case, with or without
    /// `0x` (`0xa2`, `0F`, `5`): an ATT code in a Bumble host line or a BlueZ
    /// error message. nil for anything else.
    public static func byte(_ text: some StringProtocol) -> UInt8? {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard (1...2).contains(digits.utf8.count), let bytes = try? Self.bytes(digits.count == 1 ? "0" + digits : digits),
              bytes.count == 1 else { return nil }
        return bytes[0]
    }

    /// Pairs of digits in either case; spaces, colons and tabs may stand
    /// between bytes (never inside one).
    public static func bytes(_ text: some StringProtocol) throws(ParseError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        var position = 0
        // Scalars, not Characters: no grapheme breaking (nor its tables in firmware).
        for character in text.unicodeScalars {
            position += 1
            guard let nibble = nibble(character.value) else {
                guard character == " " || character == ":" || character == "\t" else {
                    throw ParseError(reason: .notADigit(character), position: position)
                }
                if high != nil { throw ParseError(reason: .splitByte, position: position) }
                continue
            }
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        if high != nil { throw ParseError(reason: .halfByteAtEnd, position: position) }
        return bytes
    }
}
