/// JSON as scenario files hold it, read into the values `JSONSerialization`
/// gives (`[String: Any]`, `[Any]`, `String`, `Int`, `Double`, `Bool`,
/// `NSNull`), but with every mistake placed: a truncated file, a stray
/// character or a key that appears twice in one object is reported with its
/// line and column.
import Foundation

struct ScenarioJSONError: Error, CustomStringConvertible {
    var line: Int
    var column: Int
    var message: String
    var description: String { "line \(line), column \(column): \(message)" }
}

struct ScenarioJSON {
    private let bytes: [UInt8]
    private var index = 0

    /// The value `bytes` hold: one JSON value, nothing but white space after it.
    static func parse(_ bytes: [UInt8]) throws(ScenarioJSONError) -> Any {
        var parser = ScenarioJSON(bytes: bytes)
        // A byte-order mark is not JSON, but editors write one.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected \(parser.describeNext()) after the end of the document") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// Line and column (counted in characters) of byte `offset`, from 1.
    private func place(_ offset: Int) -> (line: Int, column: Int) {
        var line = 1, lineStart = 0
        for position in 0..<min(offset, bytes.count) where bytes[position] == UInt8(ascii: "\n") {
            line += 1
            lineStart = position + 1
        }
        let column = bytes[lineStart..<min(offset, bytes.count)].filter { $0 & 0xC0 != 0x80 }.count + 1
        return (line, column)
    }

    private func error(_ message: String, at offset: Int? = nil) -> ScenarioJSONError {
        let (line, column) = place(offset ?? index)
        return ScenarioJSONError(line: line, column: column, message: message)
    }

    private func describeNext() -> String {
        guard index < bytes.count else { return "end of file" }
        let byte = bytes[index]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(UnicodeScalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(ScenarioJSONError) {
        skipSpace()
        guard index < bytes.count else { throw error("the file ends where \(what) was expected (is it cut short?)") }
        guard bytes[index] == byte else { throw error("expected \(what), found \(describeNext())") }
        index += 1
    }

    private mutating func value(depth: Int) throws(ScenarioJSONError) -> Any {
        guard depth < 256 else { throw error("nested too deeply") }
        skipSpace()
        guard index < bytes.count else { throw error("the file ends where a value was expected (is it cut short?)") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return try string()
        case UInt8(ascii: "t"): return try literal("true", true)
        case UInt8(ascii: "f"): return try literal("false", false)
        case UInt8(ascii: "n"): return try literal("null", NSNull())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("expected a value, found \(describeNext())")
        }
    }

    private mutating func literal(_ word: String, _ value: Any) throws(ScenarioJSONError) -> Any {
        let start = index
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw error("expected `\(word)`", at: start) }
            index += 1
        }
        return value
    }

    private mutating func number() throws(ScenarioJSONError) -> Any {
        let start = index
        while index < bytes.count, "+-.eE0123456789".utf8.contains(bytes[index]) { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if let integer = Int(text) { return integer }
        guard let double = Double(text), double.isFinite else { throw error("`\(text)` is not a number", at: start) }
        return double
    }

    private mutating func string() throws(ScenarioJSONError) -> String {
        let start = index
        index += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
        while true {
            guard index < bytes.count else { throw error("the file ends inside the text that starts here (a missing '\"'?)", at: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flush(index)
                index += 1
                break
            }
            if byte < 0x20 { throw error("a control character (0x\(String(byte, radix: 16, uppercase: true))) inside text; write it escaped") }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            flush(index)
            index += 1
            guard index < bytes.count else { throw error("the file ends inside an escape", at: start) }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{8}")
            case UInt8(ascii: "f"): scalars.append("\u{C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code), bytes[index...].starts(with: Array("\\u".utf8)) {
                    index += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("a UTF-16 surrogate without its pair") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = UnicodeScalar(code) else { throw error("a UTF-16 surrogate without its pair") }
                scalars.append(scalar)
            default:
                throw error("unknown escape `\\\(Character(UnicodeScalar(escape)))`", at: index - 2)
            }
            run = index
        }
        return String(scalars)
    }

    private mutating func hex4() throws(ScenarioJSONError) -> UInt32 {
        guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw error("`\\u` needs four hex digits")
        }
        index += 4
        return code
    }

    private mutating func array(depth: Int) throws(ScenarioJSONError) -> [Any] {
        index += 1
        var items: [Any] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return items
        }
        while true {
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw error("the file ends inside a list (a missing ']'?)") }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return items
            }
            try expect(UInt8(ascii: ","), "',' or ']'")
        }
    }

    private mutating func object(depth: Int) throws(ScenarioJSONError) -> [String: Any] {
        index += 1
        var members: [String: Any] = [:]
        var places: [String: Int] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        while true {
            skipSpace()
            guard index < bytes.count else { throw error("the file ends inside an object (a missing '}'?)") }
            guard bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key in quotes, found \(describeNext())") }
            let keyStart = index
            let key = try string()
            if let first = places[key] {
                throw error("key `\(key)` appears twice in one object (first at line \(place(first).line), column \(place(first).column))", at: keyStart)
            }
            places[key] = keyStart
            try expect(UInt8(ascii: ":"), "':'")
            members[key] = try value(depth: depth + 1)
            skipSpace()
            guard index < bytes.count else { throw error("the file ends inside an object (a missing '}'?)") }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return members
            }
            try expect(UInt8(ascii: ","), "',' or '}'")
        }
    }
}
