// `ancs demo --json` as a reader of the stream sees it: one object per
// consumer event (removals and the end of the session included) and one
// `completed` object per action the person pressed.

import ANCSTestSupport
import Foundation
import Testing

/// The objects of a JSON-lines stream, each line parsed on its own.
func jsonLines(_ text: String, _ context: String) throws -> [[String: JSONValue]] {
    try text.split(separator: "\n").enumerated().map { index, line in
        guard case .object(let members) = try JSONValue(parsing: Data(line.utf8)) else {
            throw TestSupportError("\(context): line \(index + 1) is not an object: \(line)")
        }
        return members
    }
}

@Suite("ancs demo --json: every consumer event and every action's result")
struct CLIDemoJSONTests {
    @Test("removed, completed and sessionEnded objects, matching what the terminal view shows", arguments: ["eager", "lazy"])
    func everyEvent(policy: String) throws {
        let json = try ANCSExecutable.run(["demo", "--fast", "--json", "--policy", policy])
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let objects = try jsonLines(json.stdout, "demo --json --policy \(policy)")
        let events = objects.map { $0["event"] ?? .null }

        // Every object has a time and an event name.
        #expect(objects.allSatisfy { $0["time"] != nil && $0["event"] != nil })
        #expect(events.first == .string("sessionStarted"))

        // The scenario removes four notifications (two answered calls, an
        // email withdrawn by the phone, a chat cleared from the accessory).
        let added = Set(objects.filter { $0["event"] == .string("added") }.compactMap { $0["uid"] })
        let removed = objects.filter { $0["event"] == .string("removed") }.compactMap { $0["uid"] }
        #expect(removed.count == 4, "removed: \(removed)")
        #expect(removed.allSatisfy { added.contains($0) }, "removed \(removed), added \(added)")

        // Three actions pressed, each with its result, numbered in order.
        let completed = objects.filter { $0["event"] == .string("completed") }
        #expect(completed.map { $0["request"] } == [.number(1), .number(2), .number(3)])
        #expect(completed.allSatisfy { $0["result"] == .string("actionPerformed") && $0["error"] == nil })
        #expect(completed.map { $0["action"] } == [.string("positive"), .string("negative"), .string("negative")])
        #expect(completed.allSatisfy { $0["uid"].map { removed.contains($0) } ?? false },
                "each pressed notification is removed by its action")

        // The run ends with the session.
        #expect(events.last == .string("sessionEnded"))
        #expect(objects.last?["reason"] == .string("linkDown"))

        // The terminal view shows the same removals.
        let terminal = try ANCSExecutable.run(["demo", "--fast", "--policy", policy])
        #expect(terminal.status == 0)
        let terminalRemovals = terminal.stdout.split(separator: "\n").filter { $0.contains("✕") }
        #expect(terminalRemovals.count == removed.count, "\(terminal.stdout)")
        #expect(terminal.stdout.contains("session ended (linkDown)"))
    }
}

@Suite("ancs demo --hide-app, --hide-category: what is not shown is not fetched")
struct CLIDemoFilterTests {
    @Test("a hidden app's notification is asked for its AppIdentifier alone, a hidden category's for nothing; both told hidden")
    func hiddenAppAndCategory() throws {
        let run = try ANCSExecutable.run(["demo", "--fast", "--json", "--hide-app", "net.whatsapp.WhatsApp", "--hide-category", "news"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let objects = try jsonLines(run.stdout, "demo --json --hide-app --hide-category")
        func uids(_ event: String, where condition: ([String: JSONValue]) -> Bool = { _ in true }) -> [JSONValue] {
            objects.filter { $0["event"] == .string(event) && condition($0) }.compactMap { $0["uid"] }
        }
        let news = uids("added") { $0["category"] == .string("news") }
        let whatsApp = objects.filter { object in
            guard object["event"] == .string("attributes"), case .array(let attributes)? = object["attributes"] else { return false }
            return attributes.contains { $0 == .object(["id": .string("appIdentifier"), "value": .string("net.whatsapp.WhatsApp")]) }
        }
        #expect(news.count == 1 && whatsApp.count == 1, "news \(news), WhatsApp \(whatsApp)")
        // WhatsApp's: one fetch, of the AppIdentifier alone; the news: none.
        if case .array(let attributes)? = whatsApp.first?["attributes"] { #expect(attributes.count == 1) }
        #expect(uids("attributes") { news.contains($0["uid"] ?? .null) }.isEmpty)
        #expect(Set(uids("hidden")) == Set(news + whatsApp.compactMap { $0["uid"] }))
        // The scenario's press on the WhatsApp notification is dropped (never
        // seen); the two calls are answered.
        #expect(uids("completed").count == 2)
        #expect(run.stderr.contains("10 shown, 2 hidden"), "\(run.stderr)")
        #expect(!run.stderr.contains("never settled"))

        let terminal = try ANCSExecutable.run(["demo", "--fast", "--hide-app", "net.whatsapp.WhatsApp", "--hide-category", "news"])
        #expect(terminal.status == 0)
        #expect(!terminal.stdout.contains("[WhatsApp]") && !terminal.stdout.contains("[News]"), "\(terminal.stdout)")
        #expect(terminal.stdout.contains("[Messages]"))
    }
}

@Suite("ancs demo on a slow link: every notification is accounted for")
struct CLIDemoSlowLinkTests {
    @Test("--interval 4000: each notification is shown or named as removed by the phone before it could be shown", arguments: ["4000", "1000"])
    func everyNotificationAccountedFor(interval: String) throws {
        let run = try ANCSExecutable.run(["demo", "--fast", "--interval", interval])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try #require(run.stdout.split(separator: "\n").last.map(String.init))
        let numbers = summary.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        // "demo: N notifications, S shown, …; R removed on the phone before it could be shown (“…”)"
        let total = try #require(numbers.first), shown = numbers[1]
        var removed = 0
        if let range = summary.range(of: #"(\d+) removed on the phone before it could be shown \((.*)\)"#, options: .regularExpression) {
            removed = Int(summary[range].prefix { $0.isNumber }) ?? 0
            #expect(summary[range].contains("“Bike Shop”"), "names what was missed: \(summary)")
        }
        #expect(shown + removed == total, "every notification is shown or named: \(summary)")
        #expect(!summary.contains("failed)") || summary.contains("(0 failed)"))
    }
}
