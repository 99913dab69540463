import ANCS
import ANCSRuntime
import ANCSSimulation
import Synchronization
import Testing

/// What a review and a first-time user found, each through the real actors
/// on the simulated link, at the link's real speed, and on a slow one (MTU
/// 23, long connection interval, a phone slow to answer).
@Suite("Runtime: what users found", .timeLimit(.minutes(1)))
struct UserFindingsTests {
    struct Link: Sendable, CustomTestStringConvertible {
        var mtu: Int
        var interval: Duration
        var phoneDelay: Duration
        var testDescription: String { "MTU \(mtu), \(interval), phone delay \(phoneDelay)" }
    }
    static let links = [
        Link(mtu: 185, interval: .milliseconds(30), phoneDelay: .zero),
        Link(mtu: 23, interval: .milliseconds(100), phoneDelay: .milliseconds(40)),
    ]

    static func readyUIDs(_ rig: SimulationRig) -> [NotificationUID] {
        rig.events.compactMap { if case .ready(let shown) = $0 { shown.uid } else { nil } }
    }
    static func failures(_ rig: SimulationRig) -> [ConsumerError] {
        rig.events.compactMap { if case .displayFailed(_, let error) = $0 { error } else { nil } }
    }

    @Test("a phone holding 100 notifications at connection: every one is shown, and the application's requests work during the backlog",
          arguments: links)
    func hundredAtConnection(_ link: Link) throws {
        let rig = SimulationRig(mtu: link.mtu, interval: link.interval, display: .standard,
                                apps: [("com.example.a", "Alpha"), ("com.example.b", "Beta")])
        rig.link.serverDelay = link.phoneDelay
        var uids: [NotificationUID] = []
        for index in 0..<100 {
            uids.append(try rig.add(ProviderNotification(
                appIdentifier: index % 2 == 0 ? "com.example.a" : "com.example.b", categoryID: .social,
                flags: [.negativeAction], title: "note \(index)", message: "message \(index)")))
        }
        rig.link.connect()
        #expect(rig.simulation.run(while: { Self.readyUIDs(rig).count < 10 }))
        // While 90 still wait to be shown, the application asks 64 times (its whole budget) and acts.
        let fetches = uids.prefix(63).map { uid in
            rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.title, maxLength: 16)], for: uid) }
        }
        let last = uids[99]
        let action = rig.request { client throws(ConsumerError) in try await client.performAction(.negative, on: last) }
        #expect(rig.simulation.run(while: { fetches.contains { $0.outcome == nil } || action.outcome == nil }))
        #expect(Self.readyUIDs(rig).count < 99, "the application's requests were answered while the backlog lasted")
        for fetch in fetches { #expect(fetch.value?[.title]?.string.hasPrefix("note ") == true, "\(String(describing: fetch.outcome))") }
        #expect(action.error == nil)
        rig.simulation.runUntilIdle()
        let ready = Self.readyUIDs(rig)
        // The action removed notification 99 on the phone; every other one is shown, once.
        #expect(Set(ready).isSuperset(of: uids.prefix(99)))
        #expect(ready.count == Set(ready).count)
        #expect(Self.failures(rig).isEmpty)
        let shownNames = Set(rig.events.compactMap { if case .ready(let shown) = $0 { shown.appName } else { nil } })
        #expect(shownNames == ["Alpha", "Beta"])
    }

    @Test("the display asks once for an app the phone does not know, however many of its notifications come", arguments: links)
    func unknownAppAskedOnce(_ link: Link) throws {
        let rig = SimulationRig(mtu: link.mtu, interval: link.interval, display: .standard, apps: [])
        rig.link.serverDelay = link.phoneDelay
        rig.connect()
        // The phone's answers name an app it does not know ("com.y" for "com.x", in the first fragment).
        rig.link.rewriteNotification = { characteristic, bytes in
            guard characteristic == .dataSource, let at = Array(bytes.prefix(20)).firstRange(of: Array("com.x".utf8)) else { return [bytes] }
            var rewritten = bytes
            rewritten[at.upperBound - 1] = UInt8(ascii: "y")
            return [rewritten]
        }
        var uids: [NotificationUID] = []
        for index in 0..<3 {
            uids.append(try rig.add(ProviderNotification(appIdentifier: "com.x", title: "n\(index)")))
        }
        let refusals = rig.providerEvents.filter { if case .commandRejected(_, .unknownApp("com.y")) = $0 { true } else { false } }
        #expect(refusals.count == 1, "one Get App Attributes, refused with 0xA2: \(rig.providerEvents)")
        #expect(Self.readyUIDs(rig) == uids, "each shown, without a name")
        #expect(rig.events.allSatisfy { if case .ready(let shown) = $0 { shown.appName == nil } else { true } })
    }

    @Test("a request whose response names another UID fails at once; the next notification is shown without waiting for a timeout", arguments: links)
    func wrongUIDDoesNotBlock(_ link: Link) throws {
        let rig = SimulationRig(mtu: link.mtu, interval: link.interval,
                                configuration: ConsumerConfiguration(requestTimeout: .seconds(30)), display: .standard)
        rig.link.serverDelay = link.phoneDelay
        rig.connect()
        // Bytes no request explains (say, a late fragment of an earlier
        // session): the consumer resynchronizes on the next response.
        rig.link.injectNotification(.dataSource, [0x07, 0x01, 0x02])
        rig.simulation.runUntilIdle()
        var rewrote = false
        rig.link.rewriteNotification = { characteristic, bytes in
            // The phone answers the first Get Notification Attributes for another UID.
            guard characteristic == .dataSource, !rewrote, bytes.first == 0x00, bytes.count >= 5 else { return [bytes] }
            rewrote = true
            var wrong = bytes
            wrong[1] ^= 0x40
            return [wrong]
        }
        let first = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "first"))
        let start = rig.now
        let second = try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "second"))
        #expect(rewrote)
        let failed = rig.events.compactMap { if case .displayFailed(let uid, let error) = $0 { (uid, error) } else { nil } }
        #expect(failed.map(\.0) == [first])
        if case .invalidResponse(let error)? = failed.first?.1 {
            #expect("\(error)".contains("uid"), "the error names the UIDs: \(error)")
        } else {
            Issue.record("expected an invalid response, got \(failed)")
        }
        #expect(Self.readyUIDs(rig) == [second])
        #expect(rig.now - start < .seconds(5), "shown in \(rig.now - start), not after the 30 s timeout")
    }
}

extension UserFindingsTests {
    @Test("an unknown UID: attributes are asked and the phone answers 0xA2; an action is not sent and ends as unknownNotification", arguments: links)
    func unknownUID(_ link: Link) throws {
        let rig = SimulationRig(mtu: link.mtu, interval: link.interval)
        rig.link.serverDelay = link.phoneDelay
        rig.connect()
        try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", flags: [.positiveAction], title: "known"))
        let writesBefore = rig.link.counters.writes
        let unknown = NotificationUID(999)
        if case .failure(let error)? = rig.fetch(unknown) { #expect(error == .invalidParameter) } else { Issue.record("expected 0xA2") }
        #expect(rig.link.counters.writes == writesBefore + 1)
        let action = rig.request { client throws(ConsumerError) in try await client.performAction(.positive, on: unknown) }
        rig.simulation.runUntilIdle()
        #expect(action.error == .unknownNotification)
        #expect(action.error?.description == "no notification with this UID in this session")
        #expect(rig.link.counters.writes == writesBefore + 1, "the action was not sent")
    }
}

// MARK: - The provider never sends into a later session

/// A server transport whose `notify` blocks until the test opens the gate,
/// as a real stack's does while the link is busy; it records what it sent.
final class GatedServer: GATTServerTransport, @unchecked Sendable {
    let events: AsyncThrowingStream<GATTServerEvent, any Error>
    let sink: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>], sent: [(ConnectionID, ANCSCharacteristic, [UInt8])])>((false, [], []))

    init() { (events, sink) = AsyncThrowingStream.makeStream() }

    var sent: [(ConnectionID, ANCSCharacteristic, [UInt8])] { state.withLock { $0.sent } }
    var blocked: Int { state.withLock { $0.waiting.count } }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        await withCheckedContinuation { continuation in
            let go = state.withLock { state in
                if state.open { return true }
                state.waiting.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
        state.withLock { $0.sent.append((connection, characteristic, value)) }
    }
}

@Suite("Runtime: a provider's output stays in its session", .timeLimit(.minutes(1)))
struct ProviderSessionTests {
    @Test("Data Source output queued for a connection that dropped never reaches the next connection with the same ID")
    func noOutputIntoALaterSession() async throws {
        let server = GatedServer()
        let provider = ProviderServer(transport: server)
        let running = Task { try await provider.run() }
        defer { running.cancel() }
        let connection = ConnectionID(7)
        _ = try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: String(repeating: "long title ", count: 20)))
        func start() {
            server.sink.yield(.linkUp(connection, LinkInfo(mtu: 23)))
            server.sink.yield(.subscriptionChanged(connection, .dataSource, enabled: true))
            server.sink.yield(.subscriptionChanged(connection, .notificationSource, enabled: true))
        }
        start()
        // The first session: its PreExisting announcement blocks in notify; then a fetch whose response is 10 fragments.
        let answered = Mutex<ATTResult?>(nil)
        let command = try ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
            notificationUID: NotificationUID(0), attributes: [NotificationAttributeRequest(.title, maxLength: 200)])).encode()
        server.sink.yield(.controlPointWrite(connection, command, reply: ATTResponder { result in answered.withLock { $0 = result } }))
        try await waitUntil { server.blocked == 1 }
        // The link drops while the response waits, and the same ID connects again.
        server.sink.yield(.linkDown(connection))
        start()
        try await waitUntil { await provider.isSubscribed(connection, to: .notificationSource) }
        try await Task.sleep(for: .milliseconds(50))
        server.open()
        try await waitUntil { server.sent.contains { $0.1 == .notificationSource && $0.2.count == 8 && $0.2[1] & 0x04 != 0 } }
        try await Task.sleep(for: .milliseconds(100))
        // What went out: the first session's blocked notification (already in the stack's hands), then only the new session's announcement.
        let afterFirst = server.sent.dropFirst()
        #expect(!afterFirst.contains { $0.1 == .dataSource }, "a Data Source fragment of the old response reached the new session: \(afterFirst.map(\.2))")
        #expect(afterFirst.filter { $0.1 == .notificationSource }.count == 1)
    }

    func waitUntil(_ condition: () async -> Bool) async throws {
        for _ in 0..<500 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("condition never held")
    }
}

@Suite("Runtime: subscriptions the phone refuses or never answers")
struct SubscriptionRetryTests {
    typealias Driver = ConsumerDriver<Int>

    static func operations(_ outputs: [Driver.Output]) -> [Driver.Operation] {
        outputs.compactMap { if case .startOperation(let operation) = $0 { operation } else { nil } }
    }

    @Test("after both subscriptions fail on a link that stays up, the engine subscribes again after the retry interval (15 s), then twice as long (30 s); once the phone answers, the session runs, with only the new session's liveness probe scheduled")
    func retriesUntilThePhoneAnswers() throws {
        var driver = Driver(configuration: .displaying(.standard))
        var now = Timestamp.zero
        var pending = Self.operations(driver.handle(.linkUp(LinkInfo(mtu: 185)), at: now))
        var delays: [Duration] = []
        var ended = 0
        // The phone times out both subscriptions twice (the user has not allowed notifications yet).
        for round in 0..<2 {
            let dataSource = try #require(pending.first)
            #expect(dataSource.kind == .subscribe(.dataSource))
            pending = Self.operations(driver.operationEnded(dataSource, .transportFailure, at: now))
            let notificationSource = try #require(pending.first)
            #expect(notificationSource.kind == .subscribe(.notificationSource))
            let outputs = driver.operationEnded(notificationSource, .transportFailure, at: now)
            ended += outputs.filter { if case .event(.sessionEnded(.subscriptionFailed)) = $0 { true } else { false } }.count
            let retryAt = try #require(driver.nextDeadline, "round \(round): a retry is scheduled")
            delays.append(retryAt - now)
            #expect(Self.operations(driver.tick(at: now + .milliseconds(1))).isEmpty)
            now = retryAt
            pending = Self.operations(driver.tick(at: now))
        }
        #expect(ended == 2)
        #expect(delays == [.seconds(15), .seconds(30)])
        // Now the phone answers: the session starts and nothing more is scheduled.
        let dataSource = try #require(pending.first)
        #expect(dataSource.kind == .subscribe(.dataSource))
        let notificationSource = try #require(Self.operations(driver.operationEnded(dataSource, .success, at: now)).first)
        _ = driver.operationEnded(notificationSource, .success, at: now)
        #expect(driver.nextDeadline == now + driver.engine.configuration.retryInterval)  // the new session's probe
        #expect(driver.engine.isInSession)
        // A link that drops takes every timer with it.
        _ = driver.handle(.linkDown, at: now)
        #expect(driver.nextDeadline == nil)
    }
}
