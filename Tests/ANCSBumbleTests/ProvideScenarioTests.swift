import Foundation
import Testing

/// `ancs provide --scenario FILE --check` through the built executable:
/// JSON and YAML read the same, and bad files fail with one error line
/// naming the file and the place.
enum ProvideExecutable {
    /// The built `ancs` (`ANCS_TEST_EXECUTABLE` names another build to test).
    static var url: URL? {
        if let path = ProcessInfo.processInfo.environment["ANCS_TEST_EXECUTABLE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ancs"),
            BumbleTestEnvironment.packageRoot.appendingPathComponent(".build/debug/ancs"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let url else { throw ScenarioTestError("no built `ancs` executable; run `swift build` first") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-provide-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("out"), errURL = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
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
        return (process.terminationStatus, String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
                String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    static func scenario(_ name: String) -> String {
        BumbleTestEnvironment.packageRoot.appendingPathComponent("Tests/ANCSBumbleTests/Scenarios/\(name)").path
    }

    static func write(_ text: String, _ ext: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).\(ext)")
        try Data(text.utf8).write(to: url)
        return url
    }
}

struct ScenarioTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite("ancs provide scenarios", .enabled(if: ProvideExecutable.url != nil, "needs the built ancs executable"))
struct ProvideScenarioTests {
    @Test func theDemoScenarioByDefault() throws {
        let output = try ProvideExecutable.run(["provide", "--check"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == "scenario: 12 apps, 2 pre-existing, 9 added, 1 modified, 1 removed over 13.9 s, 0 with failing actions\n")
    }

    @Test func failActionsInjectsErrorsEverywhere() throws {
        let output = try ProvideExecutable.run(["provide", "--check", "--fail-actions"])
        #expect(output.stdout.hasSuffix("11 with failing actions\n"), "\(output.stdout)")
    }

    @Test func jsonAndYAMLReadTheSame() throws {
        let yaml = try ProvideExecutable.run(["provide", "--check", "--scenario", ProvideExecutable.scenario("errors.yaml")])
        let json = try ProvideExecutable.run(["provide", "--check", "--scenario", ProvideExecutable.scenario("errors.json")])
        #expect(yaml.status == 0, "\(yaml.stderr)")
        #expect(json.status == 0, "\(json.stderr)")
        #expect(yaml.stdout == "scenario: 2 apps, 1 pre-existing, 1 added, 1 modified, 1 removed over 4.0 s, 1 with failing actions\n")
        #expect(json.stdout == yaml.stdout)
    }

    @Test(arguments: [
        ("timeline:\n  - {at: 1, modify: ghost, message: x}\n", "yaml", "timeline[0]: no notification has key `ghost`"),
        ("preExisting:\n  - {key: a, title: no app}\n", "yaml", "preExisting[0]: `app` is required"),
        ("preExisting:\n  - {key: a, app: x, date: yesterday}\n", "yaml", "preExisting[0].date: `yesterday` is not yyyyMMdd'T'HHmmSS"),
        ("preExisting:\n  - {key: a, app: x, category: gossip}\n", "yaml", "preExisting[0].category: unknown category `gossip`"),
        ("preExisting:\n  - {key: a, app: x, negativeEffect: explode}\n", "yaml", "preExisting[0].negativeEffect: unknown effect `explode`"),
        ("preExisting:\n  - {key: a, app: x, colour: red}\n", "yaml", "preExisting[0]: unknown field `colour`"),
        ("timeline:\n  - {at: 2, add: {key: a, app: x}}\n  - {at: 1, remove: a}\n", "yaml", "timeline[1]: steps must be in time order"),
        ("{\"timeline\": [{\"at\": -1, \"remove\": \"a\"}]}", "json", "timeline[0].at: `at` must be between 0 and 86400 seconds"),
        ("{\"apps\": 3}", "json", "apps: expected a list"),
        ("{\"apps\": [", "json", "not valid JSON"),
        ("apps: [", "yaml", "not valid YAML"),
        ("sessions: 3\n", "yaml", "top level: unknown field `sessions`"),
    ])
    func badFilesNameThePlace(text: String, ext: String, message: String) throws {
        let url = try ProvideExecutable.write(text, ext)
        defer { try? FileManager.default.removeItem(at: url) }
        let output = try ProvideExecutable.run(["provide", "--check", "--scenario", url.path])
        #expect(output.status != 0)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.hasPrefix("error: --scenario \(url.path)"), "\(output.stderr)")
        #expect(output.stderr.contains(message), "\(output.stderr)")
        #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
    }

    @Test func aMissingFileIsNamed() throws {
        let output = try ProvideExecutable.run(["provide", "--check", "--scenario", "/nonexistent/scenario.yaml"])
        #expect(output.status != 0)
        #expect(output.stderr == "error: --scenario: cannot read /nonexistent/scenario.yaml\n")
    }
}
