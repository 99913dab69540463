// The code table (`ATTErrorCode.Named`): one entry per code, and every
// other place that names a code reads it or is checked against it — the
// constants, `ConsumerError`'s wording, and the C API's status constants,
// `ancs_status_name` and UUID bytes (read from their sources here).
import ANCS
import ANCSTestSupport
import Foundation
import Testing

@Suite("Codes: one table")
struct CodeTableTests {
    @Test("each entry's name is its case, and a code without an entry has no name")
    func entries() {
        var named = 0
        for raw in UInt8.min...UInt8.max {
            let code = ATTErrorCode(rawValue: raw)
            if let entry = ATTErrorCode.Named(rawValue: raw) {
                named += 1
                #expect(code.named == entry)
                #expect(code.name == "\(entry)")
                #expect(code.description == "\(entry) (0x\(Hex.string(raw, uppercase: true)))")
            } else {
                #expect(code.name == nil && code.phrase == nil)
                #expect(code.description == "ATT error 0x\(Hex.string(raw, uppercase: true))")
            }
        }
        #expect(named == ATTErrorCode.Named.allCases.count)
        #expect(ATTErrorCode.insufficientAuthentication == ATTErrorCode(ATTErrorCode.Named.insufficientAuthentication))
        #expect(ATTErrorCode.cccdImproperlyConfigured.rawValue == 0xFD)
        #expect(ATTErrorCode.Named.allCases.filter { ATTErrorCode($0).isANCS } == [.unknownCommand, .invalidCommand, .invalidParameter, .actionFailed])
    }

    @Test("each constant is made from the entry of its own name (read from the source)")
    func constantsFromTheirEntries() throws {
        let source = try String(contentsOfFile: PackagePaths.path("Sources/ANCS/Identifiers/Identifiers.swift"), encoding: .utf8)
        // `public static let invalidHandle = ATTErrorCode(Named.invalidHandle)`
        var constants = 0
        for line in source.split(separator: "\n") where line.contains("public static let") && line.contains("= ATTErrorCode(") {
            let words = line.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
            let name = try #require(words.firstIndex(of: "let").map { words[$0 + 1] }, "\(line)")
            let entry = try #require(words.firstIndex(of: "Named").map { words[$0 + 1] }, "a constant not made from an entry: \(line)")
            #expect(name == entry, "\(line)")
            #expect(ATTErrorCode.Named.allCases.contains { "\($0)" == entry }, "\(line)")
            constants += 1
        }
        #expect(constants == 16, "the constants ATTErrorCode declares")
    }

    @Test("phrases: words from the name, acronyms kept", arguments: [
        (ATTErrorCode.insufficientAuthentication, "insufficient authentication"),
        (ATTErrorCode(ATTErrorCode.Named.invalidPDU), "invalid PDU"),
        (ATTErrorCode.cccdImproperlyConfigured, "cccd improperly configured"),
        (ATTErrorCode(ATTErrorCode.Named.databaseOutOfSync), "database out of sync"),
        (ATTErrorCode.invalidParameter, "invalid parameter"),
    ])
    func phrases(_ code: ATTErrorCode, _ phrase: String) {
        #expect(code.phrase == phrase)
    }

    @Test("ConsumerError words the four ANCS codes from the table")
    func consumerError() {
        let pairs: [(ConsumerError, ATTErrorCode)] = [
            (.unknownCommand, .unknownCommand), (.invalidCommand, .invalidCommand),
            (.invalidParameter, .invalidParameter), (.actionFailed, .actionFailed),
        ]
        for (error, code) in pairs {
            #expect(error.description == "\(code.phrase!) (ANCS 0x\(Hex.string(code.rawValue, uppercase: true)))")
        }
        #expect(ConsumerError.invalidParameter.description == "invalid parameter (ANCS 0xA2)")
        #expect(ConsumerError.att(.insufficientAuthentication).description == "insufficientAuthentication (0x05)")
    }

    @Test("the C API's status constants and ancs_status_name agree with the table")
    func cStatusNames() throws {
        let header = try String(contentsOfFile: PackagePaths.path("integrations/c/include/ancs.h"), encoding: .utf8)
        let tables = try String(contentsOfFile: PackagePaths.path("integrations/c/src/ancs_tables.c"), encoding: .utf8)
        // `ANCS_ATT_WRITE_NOT_PERMITTED = 0x03,` → ("WRITE_NOT_PERMITTED", 0x03)
        var constants: [(String, UInt8)] = []
        for line in header.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("ANCS_ATT_"), let equals = text.firstIndex(of: "=") else { continue }
            let name = text[text.index(text.startIndex, offsetBy: 9)..<equals].trimmingCharacters(in: .whitespaces)
            let value = text[text.index(after: equals)...].prefix { $0 != "," }.trimmingCharacters(in: .whitespaces)
            let code = try #require(Hex.byte(value), "\(text)")
            constants.append((name, code))
        }
        #expect(constants.count >= 9, "ancs.h declares nine ANCS_ATT_ statuses")
        for (constant, raw) in constants {
            let code = ATTErrorCode(rawValue: raw)
            let name = try #require(code.name, "ANCS_ATT_\(constant): 0x\(Hex.string(raw)) has no entry")
            // WRITE_NOT_PERMITTED → writeNotPermitted
            let words = constant.lowercased().split(separator: "_")
            let camel = words.first.map(String.init)! + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
            #expect(camel == name, "ANCS_ATT_\(constant) is 0x\(Hex.string(raw)), which the table names \(name)")
            // case ANCS_ATT_X: return "…";  — the phrase and the code, in either case.
            let caseLine = try #require(tables.split(separator: "\n").first { $0.contains("case ANCS_ATT_\(constant):") }, "ancs_status_name has no case for ANCS_ATT_\(constant)")
            #expect(caseLine.lowercased().contains(code.phrase!.lowercased()), "\(caseLine)")
            #expect(caseLine.contains("0x\(Hex.string(raw, uppercase: true))"), "\(caseLine)")
            #expect(caseLine.contains(code.isANCS ? "(ANCS 0x" : "(ATT 0x"), "\(caseLine)")
        }
    }

    @Test("the C side's UUID bytes are the spec's UUIDs, little-endian")
    func cUUIDs() throws {
        let header = try String(contentsOfFile: PackagePaths.path("integrations/c/include/ancs.h"), encoding: .utf8)
        func bytes(_ macro: String) throws -> [UInt8] {
            let start = try #require(header.range(of: "#define \(macro) \\\n"), "ancs.h defines \(macro)")
            let line = header[start.upperBound...].prefix { $0 != "\n" }
            return try line.split(separator: ",").map { try #require(Hex.byte($0.trimmingCharacters(in: .whitespaces))) }
        }
        func spec(_ uuid: BluetoothUUID) -> [UInt8] { Array(uuid.bytes.reversed()) }
        #expect(try bytes("ANCS_UUID_SERVICE_LE") == spec(ANCSUUID.service))
        #expect(try bytes("ANCS_UUID_NOTIFICATION_SOURCE_LE") == spec(ANCSUUID.notificationSource))
        #expect(try bytes("ANCS_UUID_CONTROL_POINT_LE") == spec(ANCSUUID.controlPoint))
        #expect(try bytes("ANCS_UUID_DATA_SOURCE_LE") == spec(ANCSUUID.dataSource))
    }
}
