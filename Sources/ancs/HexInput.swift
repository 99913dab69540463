// Hex input from arguments, files and standard input (`decode`, `provide`).

import ANCS
import ANCSFormat
import ANCSRuntime
import ArgumentParser
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Hex input

/// Parses hex as `ancs decode` takes it: pairs of digits in either case, with
/// spaces, colons, tabs, newlines or carriage returns anywhere between bytes.
/// `what` names the input in the error ("event", "fragment 2, frags.txt line 3").
func parseHex(_ text: some StringProtocol, what: String) throws(CommandFailure) -> [UInt8] {
    var normalized = ""
    normalized.reserveCapacity(text.utf8.count)
    for (position, scalar) in text.unicodeScalars.enumerated() {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F", " ", ":", "\t":
            normalized.unicodeScalars.append(scalar)
        case "\n", "\r":
            normalized.unicodeScalars.append(" ")
        default:
            throw CommandFailure("\(what): hex character \(position + 1): '\(escapingControlCharacters(String(scalar)))' is not a hex digit")
        }
    }
    do {
        return try Hex.bytes(normalized)
    } catch {
        throw CommandFailure("\(what): \(error)")
    }
}

/// Hex arguments that may stand for more text: `-` is standard input and
/// `@PATH` a file, whose lines are read; anything else is hex itself.
///
/// In a file or on stdin, text after `#` on a line is a comment, and lines
/// with no hex are skipped. Standard input can be read once per command.
struct HexArguments {
    /// Where a piece came from, for its label.
    enum Origin {
        case argument
        case line(source: String, number: Int)

        func label(_ what: String) -> String {
            switch self {
            case .argument: what
            case .line(let source, let number): "\(what), \(source) line \(number)"
            }
        }
    }

    /// The most a file or standard input may hold: far beyond any hex a
    /// person writes, short of exhausting memory on `- < /dev/zero`.
    static let sizeLimit = 16 << 20

    private var readStandardInput = false

    /// The pieces `argument` stands for: itself, or the hex lines of stdin or a file.
    mutating func pieces(of argument: String) throws(CommandFailure) -> [(text: Substring, origin: Origin)] {
        if argument == "-" {
            guard !readStandardInput else {
                throw CommandFailure("standard input ('-') can be read only once")
            }
            readStandardInput = true
            let bytes = try Self.readAll(descriptor: STDIN_FILENO, name: "stdin")
            return try Self.hexLines(bytes, source: "stdin")
        }
        if argument.hasPrefix("@") {
            let path = String(argument.dropFirst())
            guard !path.isEmpty else { throw CommandFailure("'@' must be followed by a file name") }
            let bytes = try Self.readFile(path)
            return try Self.hexLines(bytes, source: path)
        }
        return [(argument[...], .argument)]
    }

    /// The lines of `bytes` that hold hex, comments removed, numbered from 1.
    static func hexLines(_ bytes: [UInt8], source: String) throws(CommandFailure) -> [(text: Substring, origin: Origin)] {
        var lines: [(text: Substring, origin: Origin)] = []
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let origin = Origin.line(source: source, number: index + 1)
            let content = line.firstIndex(of: UInt8(ascii: "#")).map { line[..<$0] } ?? line
            guard let text = String(validating: content, as: UTF8.self) else {
                throw CommandFailure("\(source) line \(index + 1): not UTF-8 text")
            }
            if text.unicodeScalars.allSatisfy({ [" ", "\t", "\r", ":"].contains($0) }) { continue }
            lines.append((text[...], origin))
        }
        return lines
    }

    /// The bytes of the file at `path`, at most `limit`; a failure names the
    /// file and says why (the system's reason).
    static func readFile(_ path: String, limit: Int = sizeLimit) throws(CommandFailure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot open \(path): \(errorText(errno))")
        }
        defer { close(descriptor) }
        return try readAll(descriptor: descriptor, name: path, limit: limit)
    }

    /// Everything `descriptor` holds up to end of file, at most `limit` bytes.
    static func readAll(descriptor: Int32, name: String, limit: Int = sizeLimit) throws(CommandFailure) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw CommandFailure("cannot read \(name): \(errorText(code))")
            }
            bytes += chunk[..<count]
            if bytes.count > limit {
                throw CommandFailure("\(name): more than \(limit >> 20) MiB of input")
            }
        }
    }
}
