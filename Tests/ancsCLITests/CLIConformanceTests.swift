// The shared conformance vectors through the built `ancs decode`: each case
// must print exactly one line of JSON equal to `expect`, or fail with a
// non-zero exit, nothing on stdout and one `error:` line on stderr.

import ANCSTestSupport
import Foundation
import Testing

/// The `ancs decode` arguments of a conformance case.
func decodeArguments(_ vector: ConformanceCase) -> [String] {
    switch vector.section {
    case .notificationSource: ["decode", "ns", vector.hex]  // an empty hex string is an argument too: "decode ns ''"
    case .controlPoint: ["decode", "cp", vector.hex]
    case .dataSource: ["decode", "ds", "--request", vector.request ?? ""] + vector.fragments
    }
}

/// Checks a successful run: exit 0, exactly one line of JSON, nothing on stderr.
func expectSuccess(_ output: ANCSExecutable.Output, equals expected: JSONValue, _ context: String) throws {
    #expect(output.status == 0, "\(context): exit \(output.status), stderr: \(output.stderr)")
    #expect(output.stderr.isEmpty, "\(context): stderr: \(output.stderr)")
    #expect(output.stdout.hasSuffix("\n"), "\(context): stdout does not end with a newline: \(output.stdout)")
    let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == 1, "\(context): \(lines.count) lines on stdout: \(output.stdout)")
    let line = try #require(lines.first, "\(context): nothing on stdout")
    let actual = try JSONValue(parsing: Data(line.utf8))
    #expect(actual == expected, "\(context)\n  printed:  \(line)\n  expected: \(expected)")
}

/// Checks a failed run: non-zero exit, empty stdout, one `error:` line on stderr containing `substring`.
func expectFailure(_ output: ANCSExecutable.Output, containing substring: String, _ context: String) {
    #expect(output.status != 0, "\(context): exit 0, stdout: \(output.stdout)")
    #expect(output.stdout.isEmpty, "\(context): stdout: \(output.stdout)")
    let lines = output.stderr.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 2 && lines[1].isEmpty, "\(context): stderr is not one line: \(output.stderr)")
    #expect(output.stderr.hasPrefix("error: "), "\(context): stderr: \(output.stderr)")
    #expect(output.stderr.contains(substring), "\(context): \"\(output.stderr)\" does not contain \"\(substring)\"")
}

// MARK: - Tests

@Suite("Conformance vectors through `ancs decode`")
struct CLIConformanceTests {
    static let vectors = ConformanceVectors.shared

    @Test("the vectors load, every section has cases, and the executable is found")
    func setup() {
        #expect(Self.vectors.loadError == nil, "\(Self.vectors.loadError ?? "")")
        #expect(Self.vectors.notificationSource.count > 0)
        #expect(Self.vectors.controlPoint.count > 0)
        #expect(Self.vectors.dataSource.count > 0)
        #expect(ANCSExecutable.url != nil, "no `ancs` executable in \(ANCSExecutable.candidateDirectories.map(\.path))")
    }

    @Test("ancs decode ns", arguments: CLIConformanceTests.vectors.notificationSource)
    func notificationSource(_ vector: ConformanceCase) throws {
        try check(vector)
    }

    @Test("ancs decode cp", arguments: CLIConformanceTests.vectors.controlPoint)
    func controlPoint(_ vector: ConformanceCase) throws {
        try check(vector)
    }

    @Test("ancs decode ds", arguments: CLIConformanceTests.vectors.dataSource)
    func dataSource(_ vector: ConformanceCase) throws {
        try check(vector)
    }

    private func check(_ vector: ConformanceCase) throws {
        let arguments = decodeArguments(vector)
        let output = try ANCSExecutable.run(arguments)
        let context = "\(vector.name) (ancs \(arguments.joined(separator: " ")))"
        switch vector.outcome {
        case .expect(let expected): try expectSuccess(output, equals: expected, context)
        case .error(let substring): expectFailure(output, containing: substring, context)
        }
    }

    // MARK: Hex input

    static let seed004 = JSONValue.object([
        "kind": .string("notificationSource"), "event": .string("added"), "flags": .array([.string("silent")]),
        "category": .string("other"), "categoryCount": .number(1), "uid": .number(67),
    ])

    @Test("hex with spaces, colons, tabs, uppercase, or split over several arguments", arguments: [
        ["00 01 00 01 43 00 00 00"],
        ["00:01:00:01:43:00:00:00"],
        ["00:01 00:01\t43 00:00 00"],
        ["0001000143000000"],
        ["00010001", "43000000"],
        ["00", "01", "00", "01", "43", "00", "00", "00"],
    ])
    func hexForms(_ hex: [String]) throws {
        try expectSuccess(try ANCSExecutable.run(["decode", "ns"] + hex), equals: Self.seed004, "ns \(hex)")
    }

    @Test("uppercase hex is the same bytes")
    func uppercaseHex() throws {
        let lower = try ANCSExecutable.run(["decode", "cp", "01636f6d2e6170706c652e6d6f62696c656d61696c0000"])
        let upper = try ANCSExecutable.run(["decode", "cp", "01636F6D2E6170706C652E6D6F62696C656D61696C0000"])
        #expect(lower.status == 0 && upper.status == 0)
        #expect(lower.stdout == upper.stdout)
        #expect(lower.stdout.contains("com.apple.mobilemail"))
        let event = try ANCSExecutable.run(["decode", "ns", "000A040378563412"])
        try expectSuccess(event, equals: .object([
            "kind": .string("notificationSource"), "event": .string("added"), "flags": .array([.string("important"), .string("positiveAction")]),
            "category": .string("social"), "categoryCount": .number(3), "uid": .number(305_419_896),
        ]), "uppercase ns")
    }

    @Test("Data Source request and fragments with separators and uppercase")
    func dataSourceHexForms() throws {
        let output = try ANCSExecutable.run([
            "decode", "ds", "--request", "01:63:6F:6D:2E:61:00:00",
            "01 63 6F 6D 2E 61 00", "00:06:00:E9:82:AE:E4:BB:B6",
        ])
        try expectSuccess(output, equals: .object([
            "kind": .string("appAttributes"), "appIdentifier": .string("com.a"),
            "attributes": .array([.object(["id": .string("displayName"), "value": .string("邮件")])]),
        ]), "ds with separators")
    }

    @Test("bad hex fails with one error line", arguments: [
        (["decode", "ns", "zz"], "not a hex digit"),
        (["decode", "ns", "0g01000143000000"], "'g' is not a hex digit"),
        (["decode", "ns", "000100014300000"], "half a byte"),
        (["decode", "cp", "0 001"], "two digits"),
        (["decode", "cp", "00-43"], "not a hex digit"),
        (["decode", "ds", "--request", "0x00", "00"], "--request"),
        (["decode", "ds", "--request", "0102", "00"], "--request"),
        (["decode", "ds", "--request", "000100000000", "0001000000", "zz"], "fragment 2"),
    ])
    func badHex(_ arguments: [String], _ substring: String) throws {
        expectFailure(try ANCSExecutable.run(arguments), containing: substring, arguments.joined(separator: " "))
    }

    @Test("Data Source edge cases: no Data Source response, bytes after the end, a Control Point error code")
    func dataSourceEdges() throws {
        expectFailure(
            try ANCSExecutable.run(["decode", "ds", "--request", "024300000001", "00"]),
            containing: "Perform Notification Action has no Data Source response", "ds for a perform action"
        )
        expectFailure(
            try ANCSExecutable.run(["decode", "ds", "--request", "01610000", "0161000000000000"]),
            containing: "bytes after the end of the response", "ds with trailing bytes"
        )
        expectFailure(try ANCSExecutable.run(["decode", "ds", "--request", "01610000"]), containing: "incomplete", "ds with no fragments")
        expectFailure(try ANCSExecutable.run(["decode", "cp", "0543000000"]), containing: "0xA0", "cp unknown command")
        expectFailure(try ANCSExecutable.run(["decode", "cp", "004300000001"]), containing: "0xA1", "cp malformed")
    }
}
