// Command lines that do not parse, or whose options contradict each other,
// exit 64 with one `error:` line, as `ancs --help` and docs/DECODE.md promise.

import ANCSTestSupport
import Foundation
import Testing

@Suite("Usage errors exit 64")
struct CLIUsageTests {
    static let capture = PackagePaths.path("Tests/ANCSCaptureTests/Fixtures/listen-nc.btsnoop")

    @Test("a subcommand or stack that is missing or unknown", arguments: [
        (["decode"], "name a subcommand (ns, cp, ds) or --btsnoop FILE"),
        (["setup", "foo"], "unknown stack 'foo'"),
        (["listen", "--stack", "foo"], "'foo' is invalid for '--stack <stack>': unknown stack"),
        (["listen", "--stack", "bumble"], "name a Bumble transport"),
        (["provide", "--stack", "foo"], "'foo' is invalid for '--stack <stack>': unknown stack"),
        (["provide", "--stack", "bluez"], "--stack bluez: unknown stack"),
        (["demo", "--hide-category", "nope"], "unknown category 'nope'"),
        (["listen", "--hide-category", "40"], "unknown category '40'"),
        (["demo", "--max-backlog=-1"], "--max-backlog must be 0 or more, got -1"),
        (["demo", "--hide-app", ""], "--hide-app needs an AppIdentifier"),
    ])
    func unknownNames(_ arguments: [String], _ message: String) throws {
        let result = try ANCSExecutable.run(arguments)
        expectOneErrorLine(result, status: 64, containing: message, arguments.joined(separator: " "))
        #expect(result.stdout.isEmpty)
    }

    @Test("--btsnoop with a subcommand, --json without --btsnoop", arguments: [
        (["decode", "--btsnoop", capture, "ns", seed004Hex], "takes no subcommand"),
        (["decode", "ns", "--btsnoop", capture, seed004Hex], "takes no subcommand"),
        (["decode", "--btsnoop", capture, "cp", "0000000000"], "takes no subcommand"),
        (["decode", "--btsnoop", capture, "ds", "--request", "01636F6D2E610000", "00"], "takes no subcommand"),
        (["decode", "--json"], "--json goes with --btsnoop"),
        (["decode", "--json", "ns", seed004Hex], "--json goes with --btsnoop"),
    ])
    func conflictingOptions(_ arguments: [String], _ message: String) throws {
        let result = try ANCSExecutable.run(arguments)
        expectOneErrorLine(result, status: 64, containing: message, arguments.joined(separator: " "))
        #expect(result.stdout.isEmpty, "\(arguments): stdout: \(result.stdout)")
    }

    @Test("the same options used as documented still work")
    func documentedForms() throws {
        let event = try ANCSExecutable.run(["decode", "ns", seed004Hex])
        #expect(event.status == 0 && event.stdout.contains("\"uid\":67"), "\(event.stderr)")
        let transcript = try ANCSExecutable.run(["decode", "--btsnoop", Self.capture, "--json"])
        #expect(transcript.status == 0, "\(transcript.stderr)")
        #expect(transcript.stdout.split(separator: "\n").count > 10)
    }
}
