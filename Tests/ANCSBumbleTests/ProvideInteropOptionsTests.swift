import ANCS
@testable import ANCSBumble
import ANCSRuntime
import ANCSTestSupport
import Foundation
import Testing

/// `ancs provide --central` as a phone that behaves like a real iPhone in two
/// ways an accessory must cope with, against the project's consumer
/// (`ConsumerClient` over the Bumble client transport, advertising as an
/// accessory does) on a virtual link:
/// `--allow-notifications-after` (subscriptions refused with 0x08 until the
/// user allows notifications) and `--republish` (ANCS removed and added
/// again, told by Service Changed).
@Suite("ancs provide: notifications allowed late, Service Changed",
       .enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing),
       .enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"),
       .serialized)
struct ProvideInteropOptionsTests {
    /// A phone process and an accessory in this process, paired over one virtual link.
    struct Pair {
        let link: VirtualLink
        let provide: ChildProcess
        let transport: BumbleClientTransport
        let consumer: ConsumerClient
        let log: EventLog<ConsumerClientEvent>
        let run: Task<Void, any Error>
        let reader: Task<Void, Never>

        /// `reconnect`: the accessory advertises again after a disconnection.
        init(provideArguments: [String], reconnect: Bool = false) async throws {
            link = try await VirtualLink()
            let environment = try BumbleTestEnvironment.environment()
            let executable = try #require(ANCSExecutable.url).path
            provide = try ChildProcess(
                executable, ["provide", "--stack", "bumble:\(link.transports.0)", "--central", "--json"] + provideArguments,
                environment: ["ANCS_BUMBLE_PYTHON": environment.python], captureErrors: true)
            var options = BumbleHostOptions(transport: link.transports.1, mtu: 185, peripheral: true)
            options.reconnect = reconnect
            transport = try await BumbleClientTransport.start(options, environment: environment)
            consumer = ConsumerClient(transport: transport, configuration: .displaying(.standard))
            let consumer = consumer
            run = Task { try await consumer.run() }
            let log = EventLog<ConsumerClientEvent>()
            self.log = log
            reader = Task { for await event in consumer.events { log.append(event) } }
        }

        /// The provider's `--json` objects so far, parsed.
        var provided: [[String: Any]] {
            provide.text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        func provided(_ event: String) -> [[String: Any]] {
            provided.filter { $0["event"] as? String == event }
        }

        /// Ends the accessory, then waits for the phone to exit on its own (`--sessions`).
        func finish() async throws -> Int32? {
            transport.close()
            try await withTimeout(.seconds(15), "consumer run") { try await run.value }
            await reader.value
            let status = await provide.waitForExit(timeout: .seconds(20))
            link.stop()
            return status
        }

        var diagnostics: String {
            "provide stdout:\n\(provide.text)\nprovide stderr:\n\(provide.errorText)"
        }
    }

    static func title(_ event: ConsumerClientEvent) -> String? {
        guard case .ready(let shown) = event else { return nil }
        return shown.title
    }

    /// The phone refuses both subscriptions with 0x08 until 3 s after the
    /// link is encrypted; the consumer subscribes again (2 s, then 4 s) and
    /// then shows the notifications.
    @Test func subscriptionsRefusedUntilNotificationsAreAllowed() async throws {
        let pair = try await Pair(provideArguments: ["--allow-notifications-after", "3", "--sessions", "1", "--duration", "90"])
        let shown = try await pair.log.wait(timeout: .seconds(60), "the PreExisting notifications shown") { (events: [ConsumerClientEvent]) -> [ConsumerClientEvent]? in
            let titles = Set(events.compactMap(Self.title))
            return titles.isSuperset(of: ["Team stand-up", "Pick up bike"]) ? events : nil
        }
        let refused = ConsumerClientEvent.sessionEnded(.subscriptionFailed(.attError(.insufficientAuthorization)))
        let firstRefusal = try #require(shown.firstIndex(of: refused), "no subscription refused with 0x08: \(shown)")
        let firstShown = try #require(shown.firstIndex { Self.title($0) != nil })
        #expect(firstRefusal < firstShown)
        #expect(shown.contains(.dataSourceUnavailable(.attError(.insufficientAuthorization))),
                "the Data Source subscription is refused too")
        #expect(shown.contains(.health(.waitingForPermission(.dataSource, .insufficientAuthorization))),
                "the refusal is told as a health state, with its ATT code")
        #expect(shown.contains(.health(.healthy)), "and the recovery")
        // Shown in the session that started once notifications were allowed.
        let lastStart = try #require(shown.lastIndex(of: .sessionStarted))
        #expect(lastStart < firstShown)
        #expect(!shown[lastStart...].contains(refused))
        // Each notification announced once, however many subscriptions were tried on the link.
        let added = shown[lastStart...].compactMap { event -> NotificationUID? in
            if case .added(let notification) = event { notification.uid } else { nil }
        }
        #expect(added.count == Set(added).count, "\(added)")

        let status = try await pair.finish()
        #expect(status == 0, "\(pair.diagnostics)")
        let refusals = pair.provided("subscriptionRefused")
        #expect(refusals.count >= 2, "\(pair.diagnostics)")
        #expect(refusals.allSatisfy { $0["code"] as? Int == 8 && $0["error"] as? String == "insufficientAuthorization" })
        #expect(Set(refusals.compactMap { $0["characteristic"] as? String }) == ["notificationSource", "dataSource"])
        // The phone's own order: refusals, then allowed, then the session.
        let events = pair.provided.compactMap { $0["event"] as? String }
        let allowed = try #require(events.firstIndex(of: "notificationsAllowed"), "\(pair.diagnostics)")
        let started = try #require(events.firstIndex(of: "sessionStarted"), "\(pair.diagnostics)")
        #expect(events.lastIndex(of: "subscriptionRefused").map { $0 < allowed } == true)
        #expect(allowed < started)
        #expect(pair.provided("notificationsAllowed").first?["peer"] as? String == "F1:F1:F1:F1:F1:F1")
    }

    /// Service Changed: 3 s into the timeline the phone removes ANCS and
    /// indicates it; the consumer's session ends (serviceUnpublished). 2 s
    /// later ANCS is back, the consumer discovers it, subscribes, and the
    /// live notifications are announced again as PreExisting and shown.
    @Test func serviceChangedEndsTheSessionAndANewOneShowsTheNotificationsAgain() async throws {
        let pair = try await Pair(provideArguments: ["--republish", "3,2", "--sessions", "2", "--duration", "90"])
        let events = try await pair.log.wait(timeout: .seconds(60), "a session after ANCS came back, showing notifications") { (events: [ConsumerClientEvent]) -> [ConsumerClientEvent]? in
            guard let end = events.firstIndex(of: .sessionEnded(.serviceUnpublished)),
                  let start = events[end...].firstIndex(of: .sessionStarted) else { return nil }
            let titles = Set(events[start...].compactMap(Self.title))
            return titles.isSuperset(of: ["Team stand-up", "Pick up bike", "Alice"]) ? events : nil
        }
        let end = try #require(events.firstIndex(of: .sessionEnded(.serviceUnpublished)))
        #expect(events[..<end].contains { Self.title($0) == "Team stand-up" }, "shown in the first session")
        let second = try #require(events[end...].firstIndex(of: .sessionStarted))
        // The new session announces what the phone still has as PreExisting.
        let announced = events[second...].compactMap { event -> ConsumerNotification? in
            if case .added(let notification) = event { notification } else { nil }
        }
        #expect(announced.count >= 3)
        #expect(announced.prefix(3).allSatisfy { $0.isPreExisting })
        #expect(!events.contains { if case .sessionEnded(.linkDown) = $0 { true } else { false } },
                "the link stayed up")

        let status = try await pair.finish()
        #expect(status == 0, "\(pair.diagnostics)")
        let unpublished = try #require(pair.provided("unpublished").first, "\(pair.diagnostics)")
        let republished = try #require(pair.provided("republished").first, "\(pair.diagnostics)")
        #expect(unpublished["service"] as? String == "ANCS")
        #expect(unpublished["indicated"] as? Int == 1, "the consumer subscribed to Service Changed")
        #expect(republished["indicated"] as? Int == 1)
        for change in [unpublished, republished] {
            let start = try #require(change["startHandle"] as? Int), end = try #require(change["endHandle"] as? Int)
            #expect(start > 0 && start < end)
        }
        let sessions = pair.provided("sessionStarted")
        #expect(sessions.count >= 2)
        #expect((sessions.dropFirst().first?["preExisting"] as? Int ?? 0) >= 3, "\(pair.diagnostics)")
        let ended = pair.provided("sessionEnded")
        #expect(ended.count == 2)
    }
}

@Suite("ancs provide: the two options' lines and arguments")
struct ProvideInteropOptionLineTests {
    func parse(_ line: String) -> BumbleHostLine? { BumbleHostLine(line.split(separator: " "), line: line) }

    @Test func hostLines() {
        #expect(parse("subscription-refused 64 ns 0x08")
                == .notice(.subscriptionRefused(connection: 64, characteristic: .notificationSource, code: 0x08)))
        #expect(parse("subscription-refused 64 ds 0x08")
                == .notice(.subscriptionRefused(connection: 64, characteristic: .dataSource, code: 0x08)))
        #expect(parse("notifications-allowed F1:F1:F1:F1:F1:F1") == .notice(.notificationsAllowed(peer: "F1:F1:F1:F1:F1:F1")))
        #expect(parse("unpublished 3 14 22 1") == .serviceChange(id: 3, published: false, outcome: "14 22 1"))
        #expect(parse("published 4 14 22 0") == .serviceChange(id: 4, published: true, outcome: "14 22 0"))
        #expect(parse("unpublished 5 failed not-published") == .serviceChange(id: 5, published: false, outcome: "failed not-published"))
        #expect(parse("service-changed unpublished") == .serviceChanged(published: false))
        #expect(parse("service-changed published") == .serviceChanged(published: true))
        for bad in ["subscription-refused 64 xx 0x08", "subscription-refused 64 ns nonsense", "notifications-allowed",
                    "unpublished x 1 2 3", "published 4", "service-changed", "service-changed maybe"] {
            #expect(parse(bad) == nil, "\(bad)")
        }
    }

    @Test func hostArguments() throws {
        var options = BumbleHostOptions(transport: "usb:0")
        #expect(!options.arguments(role: "serve").contains("--allow-notifications-after"))
        options.allowNotificationsAfter = 2.5
        let serve = options.arguments(role: "serve")
        let index = try #require(serve.firstIndex(of: "--allow-notifications-after"))
        #expect(serve[index + 1] == "2.5")
        #expect(!options.arguments(role: "consume").contains("--allow-notifications-after"))
        options.allowNotificationsAfter = 0
        #expect(!options.arguments(role: "serve").contains("--allow-notifications-after"))
    }

    @Test(.enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"),
          arguments: [
            (["--republish", "5"], "--republish takes <at>,<after>"),
            (["--republish", "5,0"], "--republish takes <at>,<after>"),
            (["--republish=-1,2"], "--republish takes <at>,<after>"),
            (["--allow-notifications-after=-1"], "--allow-notifications-after must be between 0 and 3600 seconds"),
          ])
    func badValuesAreRefused(arguments: [String], message: String) throws {
        let output = try ANCSExecutable.run(["provide", "--check"] + arguments)
        #expect(output.status != 0)
        #expect(output.stderr.contains(message), "\(output.stderr)")
    }

    @Test(.enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"))
    func helpTellsBoth() throws {
        let output = try ANCSExecutable.run(["provide", "--help"])
        #expect(output.stdout.contains("--allow-notifications-after <seconds>"))
        #expect(output.stdout.contains("--republish <at,after>"))
        #expect(output.stdout.contains("Insufficient Authorization"))
        #expect(output.stdout.contains("Service Changed"))
    }
}
