// The built `ancs` at the edges of its input and output: a full disk or a
// closed pipe on stdout, an unwritable stderr, control characters in what the
// user typed, hex from standard input and files, --version and --log-level.

import ANCSTestSupport
import Foundation
import Testing

/// Checks a run that failed: it exited (no crash, no signal) with `status`,
/// and stderr is exactly one `error:` line containing `substring`.
func expectOneErrorLine(_ result: ANCSExecutable.Output, status: Int32, containing substring: String, _ context: String) {
    #expect(result.exited, "\(context): killed by signal \(result.status); stderr: \(result.stderr)")
    #expect(result.status == status, "\(context): exit \(result.status), expected \(status); stderr: \(result.stderr)")
    let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 2 && lines[1].isEmpty, "\(context): stderr is not one line: \(result.stderr.debugDescription)")
    #expect(result.stderr.hasPrefix("error: "), "\(context): stderr: \(result.stderr)")
    #expect(result.stderr.contains(substring), "\(context): \(result.stderr.debugDescription) does not contain \(substring.debugDescription)")
}

let hasDevFull = FileManager.default.fileExists(atPath: "/dev/full")
let seed004Hex = "0001000143000000"

// MARK: - Output failures

@Suite("Failed writes and closed pipes")
struct CLIOutputFailureTests {
    static let writers: [[String]] = [
        ["decode", "ns", seed004Hex],
        ["decode", "ds", "--request", "01636F6D2E610000", "01636F6D2E6100", "000600E982AEE4BBB6"],
        ["--version"],
        ["decode", "--help"],
        ["demo", "--fast"],
        ["demo", "--fast", "--json"],
    ]

    @Test("stdout on a full disk: one error line, status 74, no crash", .enabled(if: hasDevFull), arguments: writers)
    func fullStdout(_ arguments: [String]) throws {
        let result = try ANCSExecutable.run(arguments, stdout: .full)
        expectOneErrorLine(result, status: 74, containing: "cannot write to standard output: No space left on device", arguments.joined(separator: " "))
    }

    @Test("stdout and stderr both on a full disk: status 74, no crash", .enabled(if: hasDevFull))
    func fullStdoutAndStderr() throws {
        let result = try ANCSExecutable.run(["decode", "ns", seed004Hex], stdout: .full, stderr: .full)
        #expect(result.exited, "killed by signal \(result.status)")
        #expect(result.status == 74)
    }

    @Test("an error with stderr on a full disk: the status still tells, no crash", .enabled(if: hasDevFull))
    func fullStderr() throws {
        let bad = try ANCSExecutable.run(["decode", "ns", "zz"], stderr: .full)
        #expect(bad.exited, "killed by signal \(bad.status)")
        #expect(bad.status == 1)
        #expect(bad.stdout.isEmpty)
        let usage = try ANCSExecutable.run(["decode", "--no-such-option"], stderr: .full)
        #expect(usage.exited, "killed by signal \(usage.status)")
        #expect(usage.status == 64)
        // The demo's summary goes to stderr with --json.
        let demo = try ANCSExecutable.run(["demo", "--fast", "--json"], stderr: .full)
        #expect(demo.exited, "killed by signal \(demo.status)")
        #expect(demo.status == 74)
    }

    @Test("stdout a pipe nobody reads: a quiet stop with status 0, not SIGPIPE", arguments: writers)
    func closedPipe(_ arguments: [String]) throws {
        let result = try ANCSExecutable.run(arguments, stdout: .closedPipe)
        #expect(result.exited, "\(arguments): killed by signal \(result.status)")
        #expect(result.status == 0, "\(arguments): exit \(result.status), stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty, "\(arguments): stderr: \(result.stderr)")
    }

    @Test("`ancs demo --fast --json | head -1`: the first line arrives, then a quiet stop with status 0")
    func headOfDemo() throws {
        guard let url = ANCSExecutable.url else { throw TestSupportError("no `ancs` executable found") }
        let process = Process()
        process.executableURL = url
        // Far more output than a pipe buffers, so the demo is still writing when the reader goes.
        process.arguments = ["demo", "--fast", "--json", "--repeat", "200"]
        let pipe = Pipe()
        let errorURL = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-cli-head-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorURL) }
        let errorHandle = try FileHandle(forWritingTo: errorURL)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe.fileHandleForWriting
        process.standardError = errorHandle
        try process.run()
        try pipe.fileHandleForWriting.close()
        try errorHandle.close()

        // Read up to the first newline, as `head -1` does, then close the pipe.
        var received = Data()
        while !received.contains(UInt8(ascii: "\n")) {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        try pipe.fileHandleForReading.close()
        try ANCSExecutable.waitForExit(process, "ancs demo --fast --json --repeat 200")

        let firstLine = received.split(separator: UInt8(ascii: "\n")).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(firstLine.contains("\"sessionStarted\""), "first line: \(firstLine)")
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
        // Nothing on stderr: no error line, and no summary (the run stopped early).
        let stderr = String(decoding: try Data(contentsOf: errorURL), as: UTF8.self)
        #expect(stderr.isEmpty, "stderr: \(stderr)")
    }
}

// MARK: - Control characters and separators

@Suite("Control characters in errors, line breaks in hex")
struct CLIControlCharacterTests {
    @Test("a control character in hex is escaped in a one-line error", arguments: [
        ("00\u{1B}01", "hex character 3: '\\u{1B}' is not a hex digit"),
        ("00\u{7F}", "'\\u{7F}'"),
        ("00\u{85}", "'\\u{85}'"),
        ("00\u{2028}", "'\\u{2028}'"),
        ("00\u{202E}", "'\\u{202E}'"),
        ("0\u{8}0", "'\\u{8}'"),
    ])
    func escapedHexCharacter(_ hex: String, _ expected: String) throws {
        expectOneErrorLine(try ANCSExecutable.run(["decode", "ns", hex]), status: 1, containing: expected, hex.debugDescription)
    }

    @Test("a NUL from standard input shows as \\0")
    func nulFromStandardInput() throws {
        expectOneErrorLine(try ANCSExecutable.run(["decode", "ns", "-"], stdin: "00\u{0}1"), status: 1, containing: "event, stdin line 1: hex character 3: '\\0'", "NUL")
    }

    @Test("user input in the command line's own errors is escaped", arguments: [
        (["decode", "--fo\no"], "Unknown option '--fo\\no'"),
        (["demo", "--log-level", "de\nbug\r"], "The value 'de\\nbug\\r' is invalid for '--log-level"),
        (["demo", "--mtu", "1\u{1B}[31m"], "'1\\u{1B}[31m'"),
    ])
    func escapedParserError(_ arguments: [String], _ expected: String) throws {
        expectOneErrorLine(try ANCSExecutable.run(arguments), status: 64, containing: expected, arguments.debugDescription)
    }

    @Test("newlines, carriage returns and tabs separate hex bytes", arguments: [
        "00\n01\n00\n01\n43\n00\n00\n00",
        "0001\r\n0001\r\n4300\r\n0000\r\n",
        "00:01\t00:01\n43 00\r00 00",
    ])
    func lineBreaksInHex(_ hex: String) throws {
        try expectSuccess(try ANCSExecutable.run(["decode", "ns", hex]), equals: CLIConformanceTests.seed004, hex.debugDescription)
    }

    @Test("a byte split by a line break is an error, not two nibbles joined")
    func splitByte() throws {
        expectOneErrorLine(try ANCSExecutable.run(["decode", "ns", "0\n001000143000000"]), status: 1, containing: "a byte needs two digits", "split byte")
    }
}

// MARK: - Hex from standard input and files

@Suite("ancs decode: hex from standard input (-) and files (@PATH)")
struct CLIHexInputTests {
    /// A temporary directory with `files` in it, removed afterwards.
    static func withFiles<T>(_ files: [String: String], _ body: (URL) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-cli-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, text) in files {
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        }
        return try body(directory)
    }

    static let appAttributes = JSONValue.object([
        "kind": .string("appAttributes"), "appIdentifier": .string("com.a"),
        "attributes": .array([.object(["id": .string("displayName"), "value": .string("邮件")])]),
    ])
    static let fragments = """
        # The response to "Get App Attributes com.a: display name", in two notifications.
        01 63 6F 6D 2E 61 00   # command, app identifier

        00:06:00:E9:82:AE:E4:BB:B6\r

        """

    @Test("ns from standard input, over several lines with a comment")
    func notificationSourceFromStandardInput() throws {
        let output = try ANCSExecutable.run(["decode", "ns", "-"], stdin: "# seed 004\n00 01 00 01\n43 00 00 00\n")
        try expectSuccess(output, equals: CLIConformanceTests.seed004, "ns -")
    }

    @Test("cp from a file")
    func controlPointFromFile() throws {
        try Self.withFiles(["cp.txt": "01636f6d2e6170706c652e6d6f62696c656d61696c00\n00\n"]) { directory in
            let output = try ANCSExecutable.run(["decode", "cp", "@" + directory.appendingPathComponent("cp.txt").path])
            #expect(output.status == 0, "stderr: \(output.stderr)")
            #expect(output.stdout.contains("com.apple.mobilemail"), "stdout: \(output.stdout)")
        }
    }

    @Test("ds: the request and the fragments (one per line) from files")
    func dataSourceFromFiles() throws {
        try Self.withFiles(["request.txt": "01:63:6F:6D:2E:61:00:00\n", "fragments.txt": Self.fragments]) { directory in
            let output = try ANCSExecutable.run([
                "decode", "ds", "--request", "@" + directory.appendingPathComponent("request.txt").path,
                "@" + directory.appendingPathComponent("fragments.txt").path,
            ])
            try expectSuccess(output, equals: Self.appAttributes, "ds from files")
        }
    }

    @Test("ds: fragments from standard input, one per line")
    func dataSourceFromStandardInput() throws {
        let output = try ANCSExecutable.run(["decode", "ds", "--request", "0163 6f6d 2e61 0000", "-"], stdin: Self.fragments)
        try expectSuccess(output, equals: Self.appAttributes, "ds -")
    }

    @Test("ds: fragments as arguments and from a file, in order")
    func dataSourceMixed() throws {
        try Self.withFiles(["rest.txt": "00:06:00:E9:82:AE:E4:BB:B6\n"]) { directory in
            let output = try ANCSExecutable.run([
                "decode", "ds", "--request", "01636F6D2E610000", "01 63 6F 6D 2E 61 00", "@" + directory.appendingPathComponent("rest.txt").path,
            ])
            try expectSuccess(output, equals: Self.appAttributes, "ds mixed")
        }
    }

    @Test("errors name the file and the line")
    func errorsNameFileAndLine() throws {
        try Self.withFiles([
            "bad.txt": "00 01\n# comment\n00 0z\n",
            "frags.txt": "0001000000\n\n000100000000\n",
            "control.txt": "00\u{1}\n",
        ]) { directory in
            func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
            expectFailure(
                try ANCSExecutable.run(["decode", "ns", "@" + path("bad.txt")]),
                containing: "event, \(path("bad.txt")) line 3: hex character 5: 'z' is not a hex digit", "ns @bad.txt"
            )
            expectFailure(
                try ANCSExecutable.run(["decode", "ds", "--request", "@" + path("bad.txt"), "00"]),
                containing: "--request, \(path("bad.txt")) line 3:", "ds --request @bad.txt"
            )
            // The second fragment is on line 3 of the file: bytes after the end of the response.
            expectFailure(
                try ANCSExecutable.run(["decode", "ds", "--request", "000100000000", "@" + path("frags.txt")]),
                containing: "fragment 2, \(path("frags.txt")) line 3: bytes after the end of the response", "ds @frags.txt"
            )
            expectFailure(
                try ANCSExecutable.run(["decode", "cp", "@" + path("control.txt")]),
                containing: "line 1: hex character 3: '\\u{1}'", "cp @control.txt"
            )
            expectFailure(
                try ANCSExecutable.run(["decode", "ns", "@" + path("missing.txt")]),
                containing: "cannot open \(path("missing.txt")): No such file or directory", "ns @missing.txt"
            )
            expectFailure(try ANCSExecutable.run(["decode", "ns", "@" + directory.path]), containing: "cannot read \(directory.path)", "ns @directory")
        }
        expectFailure(try ANCSExecutable.run(["decode", "ns", "@"]), containing: "'@' must be followed by a file name", "ns @")
    }

    @Test("bytes that are not UTF-8 are named by line")
    func notUTF8() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-cli-bytes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bytes.bin")
        try Data([0x30, 0x30, 0x0A, 0x30, 0xFF, 0x0A]).write(to: file)
        expectFailure(try ANCSExecutable.run(["decode", "ns", "@" + file.path]), containing: "\(file.path) line 2: not UTF-8 text", "ns @bytes.bin")
    }

    @Test("standard input is read once")
    func standardInputOnce() throws {
        let output = try ANCSExecutable.run(["decode", "ds", "--request", "-", "-"], stdin: "01610000\n")
        expectOneErrorLine(output, status: 1, containing: "standard input ('-') can be read only once", "ds --request - -")
    }

    @Test("`ancs decode --help` documents - and @PATH")
    func helpDocumentsInputs() throws {
        let output = try ANCSExecutable.run(["decode", "--help"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("`-`") && output.stdout.contains("`@PATH`"), "\(output.stdout)")
    }
}

// MARK: - Version and log level

@Suite("ancs --version and --log-level")
struct CLIVersionAndLogLevelTests {
    @Test("--version prints one version line on stdout and exits 0")
    func version() throws {
        let output = try ANCSExecutable.run(["--version"])
        #expect(output.status == 0)
        #expect(output.stderr.isEmpty, "stderr: \(output.stderr)")
        let line = output.stdout.hasSuffix("\n") ? String(output.stdout.dropLast()) : output.stdout
        let parts = line.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }, "not MAJOR.MINOR.PATCH: \(output.stdout.debugDescription)")
        // Every subcommand knows the same version.
        #expect(try ANCSExecutable.run(["decode", "--version"]).stdout == output.stdout)
    }

    @Test("--log-level in any case", arguments: ["debug", "DEBUG", "Debug", "dEbUg"])
    func logLevelAnyCase(_ level: String) throws {
        let output = try ANCSExecutable.run(["demo", "--fast", "--log-level", level])
        #expect(output.status == 0, "stderr: \(output.stderr)")
        #expect(output.stderr.contains(" debug ancs.demo:"), "no debug log lines on stderr: \(output.stderr.prefix(400))")
    }

    @Test("the default level logs no debug lines")
    func defaultLevel() throws {
        let output = try ANCSExecutable.run(["demo", "--fast"])
        #expect(output.status == 0)
        #expect(!output.stderr.contains(" debug "), "stderr: \(output.stderr.prefix(400))")
    }

    @Test("an unknown level lists the valid ones on one line")
    func unknownLevel() throws {
        let output = try ANCSExecutable.run(["demo", "--log-level", "loud"])
        expectOneErrorLine(
            output, status: 64,
            containing: "The value 'loud' is invalid for '--log-level <log-level>'. Please provide one of: trace, debug, info, notice, warning, error, critical.",
            "--log-level loud"
        )
    }
}
