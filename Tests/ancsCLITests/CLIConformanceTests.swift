// The shared conformance vectors through the built `ancs decode`: each case
// must print exactly one line of JSON equal to `expect`, or fail with a
// non-zero exit, nothing on stdout and one `error:` line on stderr.

import Foundation
import Testing

// MARK: - Vectors

/// A JSON value as Foundation parses it, comparable and Sendable; numbers compare as numbers.
enum JSONValue: Hashable, Sendable, CustomStringConvertible {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(any value: Any) throws {
        switch value {
        case let text as String: self = .string(text)
        case is NSNull: self = .null
        case let items as [Any]: self = .array(try items.map { try JSONValue(any: $0) })
        case let members as [String: Any]: self = .object(try members.mapValues { try JSONValue(any: $0) })
        case let number as NSNumber: self = .number(number.doubleValue)
        case let number as Int: self = .number(Double(number))
        case let number as Double: self = .number(number)
        case let flag as Bool: self = .bool(flag)
        default: throw CLITestError("unsupported JSON value \(value) of type \(type(of: value))")
        }
    }

    init(parsing data: Data) throws {
        try self.init(any: JSONSerialization.jsonObject(with: data))
    }

    var description: String {
        switch self {
        case .object(let members):
            "{" + members.keys.sorted().map { "\"\($0)\":\(members[$0]!)" }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
        case .string(let text): "\"\(text)\""
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? "\(Int64(value))" : "\(value)"
        case .bool(let flag): "\(flag)"
        case .null: "null"
        }
    }
}

struct CLITestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One conformance case as `ancs decode` arguments.
struct CLICase: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable {
        case expect(JSONValue)
        case error(String)
    }

    var name: String
    /// Everything after `ancs`.
    var arguments: [String]
    var outcome: Outcome

    var testDescription: String { name }
}

struct CLIVectors: Sendable {
    var notificationSource: [CLICase] = []
    var controlPoint: [CLICase] = []
    var dataSource: [CLICase] = []
    var loadError: String?

    /// The package root: Tests/ancsCLITests/CLIConformanceTests.swift → up three levels.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var url: URL {
        packageRoot.deletingLastPathComponent().appendingPathComponent("shared/vectors/conformance.json")
    }

    static let shared: CLIVectors = {
        do {
            return try load(from: url)
        } catch {
            var vectors = CLIVectors()
            vectors.loadError = "cannot load \(url.path): \(error)"
            return vectors
        }
    }()

    static func load(from url: URL) throws -> CLIVectors {
        guard case .object(let root) = try JSONValue(parsing: Data(contentsOf: url)) else {
            throw CLITestError("the vectors file is not a JSON object")
        }
        func cases(_ section: String, _ subcommand: String) throws -> [CLICase] {
            guard case .array(let items)? = root[section] else { throw CLITestError("no \"\(section)\" array") }
            return try items.enumerated().map { index, item in
                guard case .object(let fields) = item else { throw CLITestError("\(section)[\(index)] is not an object") }
                func string(_ key: String) -> String? {
                    if case .string(let text)? = fields[key] { return text }
                    return nil
                }
                let name = string("name") ?? "\(section)[\(index)]"
                let outcome: CLICase.Outcome
                if let expect = fields["expect"] {
                    outcome = .expect(expect)
                } else if let error = string("error") {
                    outcome = .error(error)
                } else {
                    throw CLITestError("\(section) case \"\(name)\" has neither expect nor error")
                }
                var arguments = ["decode", subcommand]
                if subcommand == "ds" {
                    guard let request = string("request"), case .array(let fragments)? = fields["fragments"] else {
                        throw CLITestError("\(name): a Data Source case needs request and fragments")
                    }
                    arguments += ["--request", request]
                    for fragment in fragments {
                        guard case .string(let text) = fragment else { throw CLITestError("\(name): a fragment is not a string") }
                        arguments.append(text)
                    }
                } else {
                    // An empty hex string is an argument too: "decode ns ''".
                    arguments.append(string("hex") ?? "")
                }
                return CLICase(name: name, arguments: arguments, outcome: outcome)
            }
        }
        return CLIVectors(
            notificationSource: try cases("notificationSource", "ns"),
            controlPoint: try cases("controlPoint", "cp"),
            dataSource: try cases("dataSource", "ds")
        )
    }
}

// MARK: - Running the executable

/// A class defined in the test bundle, to find the bundle's location.
private final class BundleMarker {}

/// The built `ancs` executable, next to the test bundle in the build products directory.
enum ANCSExecutable {
    static let url: URL? = locate()

    static func isExecutable(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isExecutableFile(atPath: url.path)
    }

    /// Directories that may hold the build products, the test bundle's own first.
    static var candidateDirectories: [URL] {
        var directories: [URL] = []
        let bundle = Bundle.main.bundleURL
        directories.append(bundle)
        directories.append(bundle.deletingLastPathComponent())
        if let executable = Bundle.main.executableURL {
            directories.append(executable.deletingLastPathComponent())
        }
        if let argument = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: argument).deletingLastPathComponent())
        }
        // On macOS the class's bundle is the .xctest bundle inside the products directory.
        directories.append(Bundle(for: BundleMarker.self).bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        // A test bundle on macOS: …/debug/X.xctest/Contents/MacOS/X.
        directories = directories.flatMap { directory in
            var upward = [directory]
            var current = directory
            for _ in 0..<4 {
                current = current.deletingLastPathComponent()
                if current.lastPathComponent.hasSuffix(".xctest") { upward.append(current.deletingLastPathComponent()) }
            }
            return upward
        }
        return directories
    }

    static func locate() -> URL? {
        if let override = ProcessInfo.processInfo.environment["ANCS_EXECUTABLE"] {
            let url = URL(fileURLWithPath: override)
            if isExecutable(url) { return url }
        }
        for directory in candidateDirectories {
            let candidate = directory.appendingPathComponent("ancs")
            if isExecutable(candidate) { return candidate }
        }
        // The default build directory of the package, as a last resort.
        let root = CLIVectors.packageRoot
        for path in [".build/debug/ancs", ".build/release/ancs"] {
            let candidate = root.appendingPathComponent(path)
            if isExecutable(candidate) { return candidate }
        }
        return nil
    }

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `ancs` with `arguments`; output goes through files so neither pipe can fill and block.
    static func run(_ arguments: [String]) throws -> Output {
        guard let url else {
            throw CLITestError("no `ancs` executable found near the test bundle (looked in \(candidateDirectories.map(\.path))); build with `swift build --build-tests`")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-cli-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)

        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        )
    }
}

/// Checks a successful run: exit 0, exactly one line of JSON, nothing on stderr.
func expectSuccess(_ output: ANCSExecutable.Output, equals expected: JSONValue, _ context: String) throws {
    #expect(output.status == 0, "\(context): exit \(output.status), stderr: \(output.stderr)")
    #expect(output.stderr.isEmpty, "\(context): stderr: \(output.stderr)")
    #expect(output.stdout.hasSuffix("\n"), "\(context): stdout does not end with a newline: \(output.stdout)")
    let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == 1, "\(context): \(lines.count) lines on stdout: \(output.stdout)")
    guard let line = lines.first else { return }
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
    static let vectors = CLIVectors.shared

    @Test("the vectors load, every section has cases, and the executable is found")
    func setup() {
        #expect(Self.vectors.loadError == nil, "\(Self.vectors.loadError ?? "")")
        #expect(Self.vectors.notificationSource.count > 0)
        #expect(Self.vectors.controlPoint.count > 0)
        #expect(Self.vectors.dataSource.count > 0)
        #expect(ANCSExecutable.url != nil, "no `ancs` executable in \(ANCSExecutable.candidateDirectories.map(\.path))")
    }

    @Test("ancs decode ns", arguments: CLIConformanceTests.vectors.notificationSource)
    func notificationSource(_ vector: CLICase) throws {
        try check(vector)
    }

    @Test("ancs decode cp", arguments: CLIConformanceTests.vectors.controlPoint)
    func controlPoint(_ vector: CLICase) throws {
        try check(vector)
    }

    @Test("ancs decode ds", arguments: CLIConformanceTests.vectors.dataSource)
    func dataSource(_ vector: CLICase) throws {
        try check(vector)
    }

    private func check(_ vector: CLICase) throws {
        let output = try ANCSExecutable.run(vector.arguments)
        let context = "\(vector.name) (ancs \(vector.arguments.joined(separator: " ")))"
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
