import ANCSTestSupport
import Foundation
import Testing

/// `ancs provide --scenario FILE --check` through the built executable:
/// JSON and YAML read the same, and bad files fail with one error line
/// naming the file and the place.

/// Files for `ancs provide --scenario`.
enum ScenarioFiles {
    static func scenario(_ name: String) -> String {
        PackagePaths.path("Tests/ANCSBumbleTests/Scenarios/\(name)")
    }

    static func write(_ text: String, _ ext: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).\(ext)")
        try Data(text.utf8).write(to: url)
        return url
    }
}

@Suite("ancs provide scenarios", .enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"))
struct ProvideScenarioTests {
    @Test func theDemoScenarioByDefault() throws {
        let output = try ANCSExecutable.run(["provide", "--check"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == "scenario: 12 apps, 2 pre-existing, 9 added, 1 modified, 1 removed over 13.9 s, 0 with failing actions, "
                 + "a player of 3 tracks, 1 player and clock steps\n")
    }

    @Test func failActionsInjectsErrorsEverywhere() throws {
        let output = try ANCSExecutable.run(["provide", "--check", "--fail-actions"])
        #expect(output.stdout.contains("11 with failing actions"), "\(output.stdout)")
    }

    @Test func jsonAndYAMLReadTheSame() throws {
        let yaml = try ANCSExecutable.run(["provide", "--check", "--scenario", ScenarioFiles.scenario("errors.yaml")])
        let json = try ANCSExecutable.run(["provide", "--check", "--scenario", ScenarioFiles.scenario("errors.json")])
        #expect(yaml.status == 0, "\(yaml.stderr)")
        #expect(json.status == 0, "\(json.stderr)")
        #expect(yaml.stdout == "scenario: 2 apps, 1 pre-existing, 1 added, 1 modified, 1 removed over 4.0 s, 1 with failing actions\n")
        #expect(json.stdout == yaml.stdout)
    }

    /// The phone's player and clock (`--media`): tracks, steps, the time and its zone.
    @Test func aPlayerAndAClock() throws {
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", ScenarioFiles.scenario("media.yaml")])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == "scenario: 1 apps, 0 pre-existing, 1 added, 0 modified, 0 removed over 3.0 s, 0 with failing actions, "
                 + "a player of 3 tracks, 2 player and clock steps\n")
    }

    @Test(arguments: [
        ("player:\n  tracks: []\n", "yaml", "player: `tracks` needs at least one track"),
        ("player:\n  tracks: [{artist: a}]\n", "yaml", "player.tracks[0]: `title` is required"),
        ("player:\n  state: loud\n  tracks: [{title: t}]\n", "yaml", "player.state: `loud` is not playing or paused"),
        ("player:\n  volume: 2\n  tracks: [{title: t}]\n", "yaml", "player.volume: 2.0 is not within 0.0…1.0"),
        ("timeline:\n  - {at: 1, player: dance}\n", "yaml", "timeline[0].player: expected an AMS command"),
        ("timeline:\n  - {at: 1, player: play, volume: 1}\n", "yaml", "timeline[0]: a step has one of"),
        ("time: \"2026-13-01T00:00:00\"\n", "yaml", "time: `2026-13-01T00:00:00` is not yyyy-MM-ddTHH:mm:ss"),
        ("time: {at: \"2026-11-28T14:53:07\", utcOffsetMinutes: 61}\n", "yaml", "time.utcOffsetMinutes: must be a multiple of 15"),
    ])
    func aBadPlayerOrClockIsNamed(_ text: String, _ ext: String, _ message: String) throws {
        let file = try ScenarioFiles.write(text, ext)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", file.path])
        #expect(output.status != 0)
        #expect(output.stderr.contains(message), "\(output.stderr)")
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
        // Mistakes that used to be accepted silently.
        ("timeline:\n  - {at: 1, add: {key: a, app: x}, remove: a}\n", "yaml",
         "timeline[0]: a step has one of `add`, `modify` or `remove`, this one has `add` and `remove`"),
        ("{\"timeline\": [{\"at\": 1, \"add\": {\"key\": \"a\", \"app\": \"x\"}, \"modify\": \"a\", \"message\": \"m\"}]}", "json",
         "timeline[0]: a step has one of `add`, `modify` or `remove`, this one has `add` and `modify`"),
        ("timeline:\n  - {at: 1, add: {key: a, app: x}}\n  - {at: 2, add: {key: a, app: y}}\n", "yaml",
         "timeline[1].add: key `a` is still in use (added at timeline[0])"),
        ("preExisting:\n  - {key: a, app: x}\ntimeline:\n  - {at: 2, add: {key: a, app: y}}\n", "yaml",
         "timeline[0].add: key `a` is still in use (added at preExisting[0])"),
        ("timeline:\n  - {at: 1, add: {key: a, app: x}}\n  - {at: 2, remove: a}\n  - {at: 3, modify: a, message: late}\n", "yaml",
         "timeline[2]: notification `a` was removed at timeline[1]"),
        ("apps:\n  - {id: com.x, name: X}\n  - {id: com.y, name: Y}\n  - {id: com.x, name: Other}\n", "yaml",
         "apps[2].id: `com.x` is already apps[0]"),
        ("apps: [{id: com.x, name: X, icon: x.png}]\n", "yaml", "apps[0]: unknown field `icon`"),
        ("timeline:\n  - at: 1\n    remove: a\n    remove: b\n", "yaml", "line 4, column 5: key `remove` appears twice in one mapping (first at line 3)"),
        ("apps: []\napps: [{id: a, name: A}]\n", "yaml", "line 2, column 1: key `apps` appears twice"),
        ("{\"apps\": [],\n \"apps\": []}", "json", "line 2, column 2: not valid JSON: key `apps` appears twice in one object (first at line 1, column 2)"),
        ("{\"apps\": [{\"id\": \"a\",\n  \"name\": \"A\"", "json", "line 2, column 14: not valid JSON: the file ends inside an object"),
        ("{\"apps\": [{\"id\": \"a\", \"name\": \"A\"}],\n \"timeline\": [{\"at\": 1, \"remove\" \"a\"}]}", "json",
         "line 2, column 34: not valid JSON: expected ':', found '\"'"),
        ("apps: [{id: a, name: " + String(repeating: "n", count: 60_000) + "}]\n", "yaml",
         "apps[0].name: 60000 bytes is too long for an app's name: ANCS asks for it without a max length, and a consumer takes at most 1024 bytes"),
        ("timeline:\n  - {at: 1, add: {key: a, app: x, positive: " + String(repeating: "p", count: 1025) + "}}\n", "yaml",
         "timeline[0].add.positive: 1025 bytes is too long for an action label"),
        ("preExisting:\n  - {key: a, app: x, message: " + String(repeating: "m", count: 65_536) + "}\n", "yaml",
         "preExisting[0].message: 65536 bytes is too long for a message: ANCS carries at most 65535 bytes"),
    ])
    func badFilesNameThePlace(text: String, ext: String, message: String) throws {
        let url = try ScenarioFiles.write(text, ext)
        defer { try? FileManager.default.removeItem(at: url) }
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", url.path])
        #expect(output.status != 0)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.hasPrefix("error: --scenario \(url.path)"), "\(output.stderr)")
        #expect(output.stderr.contains(message), "\(output.stderr)")
        #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
    }

    @Test func aMissingFileIsNamedWithTheReason() throws {
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", "/nonexistent/scenario.yaml"])
        #expect(output.status != 0)
        #expect(output.stderr == "error: --scenario: cannot open /nonexistent/scenario.yaml: No such file or directory\n")
        let directory = FileManager.default.temporaryDirectory.path
        let notAFile = try ANCSExecutable.run(["provide", "--check", "--scenario", directory])
        #expect(notAFile.status != 0)
        #expect(notAFile.stderr == "error: --scenario: cannot read \(directory): Is a directory\n")
    }

    @Test func aKeyMayBeUsedAgainOnceItsNotificationIsRemoved() throws {
        let yaml = """
            apps: [{id: com.x, name: X}]
            timeline:
              - {at: 1, add: {key: a, app: com.x, title: First}}
              - {at: 2, remove: a}
              - {at: 3, add: {key: a, app: com.x, title: Second, positive: \(String(repeating: "p", count: 1024))}}
              - {at: 4, modify: a, message: "edited"}
            """
        let url = try ScenarioFiles.write(yaml, "yaml")
        defer { try? FileManager.default.removeItem(at: url) }
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", url.path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == "scenario: 1 apps, 0 pre-existing, 2 added, 1 modified, 1 removed over 4.0 s, 0 with failing actions\n")
    }
}
