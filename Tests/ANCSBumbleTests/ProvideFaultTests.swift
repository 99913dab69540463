import ANCS
@testable import ANCSBumble
import ANCSRuntime
import ANCSTestSupport
import Foundation
import Testing

/// `ancs provide` reproduces what iPhones do in the field that stops an
/// accessory's notifications (docs/PROVIDE.md: "Act as an iPhone", faults), seen from
/// the project's consumer over a virtual link: what the phone sends and
/// answers under each fault.
@Suite("ancs provide: faults of real iPhones",
       .enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing),
       .enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"),
       .serialized)
struct ProvideFaultTests {
    typealias Pair = ProvideInteropOptionsTests.Pair

    static func title(_ event: ConsumerClientEvent) -> String? { ProvideInteropOptionsTests.title(event) }

    /// The uid `provide --json` gave the scenario notification `key`.
    static func uid(_ pair: Pair, _ key: String) -> NotificationUID? {
        let added = pair.provided("notification").first { $0["key"] as? String == key }
        return (added?["uid"] as? Int).flatMap { UInt32(exactly: $0) }.map { NotificationUID(rawValue: $0) }
    }

    /// How a request ended: its error, or nil if it succeeded.
    static func error<T>(_ request: () async throws(ConsumerError) -> T) async -> ConsumerError? {
        do throws(ConsumerError) {
            _ = try await request()
            return nil
        } catch { return error }
    }

    static func scenario(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("faults-\(UUID().uuidString).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Sharing off from the start: the subscriptions are taken, nothing is
    /// announced, and every Control Point write is refused with 0x03; once
    /// sharing is on, the phone announces what it holds and answers.
    @Test func sharingOffThenOn() async throws {
        let pair = try await Pair(provideArguments: ["--share-after", "5", "--sessions", "1", "--duration", "60"])
        _ = try await pair.log.wait(timeout: .seconds(30), "a session") { $0.contains(.sessionStarted) ? true : nil }
        // Not shared: a fetch is refused with Write Not Permitted, whatever it names.
        let refused = await Self.error { () async throws(ConsumerError) in try await pair.consumer.fetchAppAttributes("com.apple.MobileSMS") }
        #expect(refused == .att(.writeNotPermitted), "\(pair.diagnostics)")
        #expect(!pair.log.all.contains { if case .added = $0 { true } else { false } }, "nothing announced while not shared")
        let shown = try await pair.log.wait(timeout: .seconds(30), "notifications shown once shared") { events in
            Set(events.compactMap(Self.title)).isSuperset(of: ["Team stand-up", "Pick up bike"]) ? events : nil
        }
        #expect(shown.filter { $0 == .sessionStarted }.count == 1, "shown in the session subscribed while not shared")
        let status = try await pair.finish()
        #expect(status == 0, "\(pair.diagnostics)")
        let faults = pair.provided("fault").filter { $0["fault"] as? String == "sharing" }
        #expect(faults.map { $0["on"] as? Bool } == [false, true], "\(pair.diagnostics)")
        let rejected = pair.provided("commandRejected")
        #expect(rejected.contains { ($0["reason"] as? String)?.contains("not shared") == true }, "\(pair.diagnostics)")
    }

    /// Notification Source quiet while the Control Point answers, then the
    /// subscriptions forgotten in silence: the consumer hears neither, a
    /// notification it was never told of is still answered while quiet,
    /// and after the subscriptions are forgotten a fetch is refused with 0xFD,
    /// from which the consumer subscribes again by itself and shows what it missed.
    @Test func quietNotificationSourceThenForgottenSubscriptions() async throws {
        let path = try Self.scenario("""
            apps: [{id: com.apple.MobileSMS, name: Messages}]
            preExisting:
              - {key: first, app: com.apple.MobileSMS, title: First}
            timeline:
              - {at: 1, notificationSource: quiet}
              - {at: 1.5, add: {key: unheard, app: com.apple.MobileSMS, title: Unheard}}
              - {at: 3, notificationSource: normal}
              - {at: 3.5, add: {key: heard, app: com.apple.MobileSMS, title: Heard}}
              - {at: 6, forgetSubscriptions: true}
              - {at: 6.5, add: {key: lost, app: com.apple.MobileSMS, title: Lost}}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pair = try await Pair(provideArguments: ["--scenario", path, "--duration", "12"])
        _ = try await pair.log.wait(timeout: .seconds(40), "Heard shown") { events in events.contains { Self.title($0) == "Heard" } ? true : nil }
        #expect(!pair.log.all.contains { Self.title($0) == "Unheard" }, "announced while quiet")
        let unheard = try #require(Self.uid(pair, "unheard"), "\(pair.diagnostics)")
        let answer = try await pair.consumer.fetchAttributes([.init(.title, maxLength: 16)], for: unheard)
        #expect(answer[.title]?.string == "Unheard", "the Control Point answers while Notification Source is quiet")

        _ = try await pair.log.wait(timeout: .seconds(20), "Lost added on the phone") { _ in Self.uid(pair, "lost") }
        let lost = try #require(Self.uid(pair, "lost"))
        let refused = await Self.error { () async throws(ConsumerError) in try await pair.consumer.fetchAttributes([.init(.title, maxLength: 16)], for: lost) }
        #expect(refused == .att(.cccdImproperlyConfigured), "\(pair.diagnostics)")
        // Told nothing by the phone, the consumer learns it from the 0xFD, subscribes
        // again by itself, and the phone announces what it holds: Lost is shown.
        _ = try await pair.log.wait(timeout: .seconds(20), "subscribing again after 0xFD, then Lost shown") { events in
            events.contains(.health(.resubscribing(.subscriptionLost))) && events.contains { Self.title($0) == "Lost" } ? true : nil
        }
        _ = try await pair.finish()
        let faults = pair.provided("fault").compactMap { $0["fault"] as? String }
        #expect(faults == ["notificationSource", "notificationSource", "forgetSubscriptions"], "\(pair.diagnostics)")
        #expect(pair.provided("fault").first?["quiet"] as? Bool == true)
    }

    /// ANCS removed and added back without Service Changed: the consumer is
    /// not told, its subscriptions are gone with the old database (a fetch
    /// is refused with 0xFD, and from that answer the consumer subscribes
    /// again by itself); then the phone forgets the bond and drops the link:
    /// it pairs again at the next connection, and a new session shows the
    /// notifications.
    @Test func silentServiceChangeThenForgottenBond() async throws {
        let path = try Self.scenario("""
            apps: [{id: com.apple.MobileSMS, name: Messages}]
            preExisting:
              - {key: first, app: com.apple.MobileSMS, title: First}
            timeline:
              - {at: 1, removeANCS: {serviceChanged: false}}
              - {at: 2, addANCS: {serviceChanged: false}}
              - {at: 2.5, add: {key: after, app: com.apple.MobileSMS, title: After}}
              - {at: 5, forgetBond: true}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pair = try await Pair(provideArguments: ["--scenario", path, "--duration", "15"], reconnect: true)
        _ = try await pair.log.wait(timeout: .seconds(40), "First shown") { events in events.contains { Self.title($0) == "First" } ? true : nil }
        _ = try await pair.log.wait(timeout: .seconds(20), "After added on the phone") { _ in Self.uid(pair, "after") }
        let after = try #require(Self.uid(pair, "after"))
        let refused = await Self.error { () async throws(ConsumerError) in try await pair.consumer.fetchAttributes([.init(.title, maxLength: 16)], for: after) }
        #expect(refused == .att(.cccdImproperlyConfigured), "\(pair.diagnostics)")
        // Told nothing by the phone, the consumer learns it from the 0xFD and subscribes again.
        _ = try await pair.log.wait(timeout: .seconds(20), "subscribing again after 0xFD") { events in
            events.contains(.health(.resubscribing(.subscriptionLost))) ? true : nil
        }
        // The bond forgotten: the link drops, the phone pairs again, a new session shows both.
        let events: [ConsumerClientEvent]
        do {
            events = try await pair.log.wait(timeout: .seconds(40), "a new session after the bond was forgotten") { events -> [ConsumerClientEvent]? in
                guard let down = events.firstIndex(of: .sessionEnded(.linkDown)) else { return nil }
                return Set(events[down...].compactMap(Self.title)).isSuperset(of: ["First", "After"]) ? events : nil
            }
        } catch {
            Issue.record("\(error)\n\(pair.diagnostics)\nconsumer: \(pair.log.all)")
            _ = try? await pair.finish()
            return
        }
        #expect(events.contains(.sessionEnded(.linkDown)))
        _ = try await pair.finish()
        let removed = try #require(pair.provided("unpublished").first, "\(pair.diagnostics)")
        #expect(removed["serviceChanged"] as? Bool == false)
        #expect(removed["indicated"] as? Int == 0)
        let forgot = try #require(pair.provided("fault").first { $0["fault"] as? String == "forgetBond" }, "\(pair.diagnostics)")
        #expect((forgot["bonds"] as? Int ?? 0) >= 1, "\(pair.diagnostics)")
        #expect(pair.provided("paired").count >= 2, "paired again: \(pair.diagnostics)")
    }
}

@Suite("ancs provide: fault steps of a scenario")
struct ProvideFaultScenarioTests {
    @Test(.enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"))
    func everyFaultIsReadAndSummarized() throws {
        let path = try ProvideFaultTests.scenario("""
            timeline:
              - {at: 1, sharing: off}
              - {at: 2, sharing: on}
              - {at: 3, notificationSource: quiet}
              - {at: 4, notificationSource: normal}
              - {at: 5, forgetSubscriptions: true}
              - {at: 6, forgetBond: true}
              - {at: 7, removeANCS: {serviceChanged: false}}
              - {at: 8, addANCS: true}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("faults: sharing, sharing, notificationSource, notificationSource, forgetSubscriptions, forgetBond, removeANCS, addANCS"),
                "\(output.stdout)")
    }

    @Test(.enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"),
          arguments: [
            ("{at: 1, sharing: maybe}", "timeline[0].sharing: expected `on` or `off`"),
            ("{at: 1, notificationSource: loud}", "timeline[0].notificationSource: expected `quiet` or `normal`"),
            ("{at: 1, forgetBond: false}", "timeline[0].forgetBond: expected `true`"),
            ("{at: 1, removeANCS: {serviceChanged: maybe}}", "timeline[0].removeANCS.serviceChanged: expected true or false"),
            ("{at: 1, addANCS: {indicate: true}}", "timeline[0].addANCS: unknown field `indicate`"),
            ("{at: 1, sharing: off, forgetBond: true}", "this one has `sharing` and `forgetBond`: make them two steps"),
            ("{at: 1, sharing: off, message: hi}", "timeline[0]: `message` goes with `modify`"),
          ])
    func badFaultStepsAreNamed(step: String, message: String) throws {
        let path = try ProvideFaultTests.scenario("timeline:\n  - \(step)\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = try ANCSExecutable.run(["provide", "--check", "--scenario", path])
        #expect(output.status != 0)
        #expect(output.stderr.contains(message), "\(output.stderr)")
    }

    @Test func hostLines() {
        func parse(_ line: String) -> BumbleHostLine? { BumbleHostLine(line.split(separator: " "), line: line) }
        #expect(parse("bonds-forgotten 7 1") == .bondsForgotten(id: 7, outcome: "1"))
        #expect(parse("bonds-forgotten 7") == nil)
        #expect(parse("unpublished 3 14 22 0") == .serviceChange(id: 3, published: false, outcome: "14 22 0"))
    }

    @Test(.enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"))
    func shareAfterIsChecked() throws {
        let output = try ANCSExecutable.run(["provide", "--check", "--share-after=-1"])
        #expect(output.status != 0)
        #expect(output.stderr.contains("--share-after must be between 0 and 86400 seconds"), "\(output.stderr)")
        let shared = try ANCSExecutable.run(["provide", "--check", "--share-after", "5"])
        #expect(shared.status == 0, "\(shared.stderr)")
        #expect(shared.stdout.contains("faults: sharing"), "\(shared.stdout)")
    }
}
