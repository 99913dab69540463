import ANCS
@testable import ANCSBumble
import ANCSDemo
import ANCSRuntime
import Foundation
import Testing

/// The phone's side of the interop client's expectations: two PreExisting
/// notifications, then Alice, Bike Shop and Mum once the session starts.
func prepareDemo(_ provider: ProviderServer) async throws {
    let scenario = DemoScenario.standard
    for app in scenario.apps { await provider.registerApp(identifier: app.identifier, displayName: app.displayName) }
    for (_, notification) in scenario.preExisting { try await provider.add(notification.providerNotification) }
}

func addFirstTimelineNotifications(_ provider: ProviderServer, count: Int) async throws {
    var added = 0
    for (_, step) in DemoScenario.standard.timeline {
        guard added < count, case .add(_, let notification) = step else { continue }
        try await provider.add(notification.providerNotification)
        added += 1
        try await Task.sleep(for: .milliseconds(300))
    }
}

@Suite("Bumble line protocol")
struct BumbleLineTests {
    @Test func hexRoundTrip() {
        #expect(hexString([0x00, 0xA2, 0xFF]) == "00a2ff")
        #expect(hexString([]) == "-")
        #expect(hexBytes("00a2FF") == [0x00, 0xA2, 0xFF])
        #expect(hexBytes("-") == [])
        #expect(hexBytes("0") == nil)
        #expect(hexBytes("zz") == nil)
    }

    @Test("every host line parses to its typed case; a malformed one to nil")
    func typedLines() {
        func parse(_ line: String) -> BumbleHostLine? { BumbleHostLine(line.split(separator: " "), line: line) }
        #expect(parse("connected 64 185 AA:BB 1 0") == .connected(ConnectionID(64), LinkInfo(mtu: 185, peer: "AA:BB", isEncrypted: true, isBonded: false)))
        #expect(parse("subscription 64 ds on") == .subscription(ConnectionID(64), .dataSource, enabled: true))
        #expect(parse("write 64 7 0001") == .write(ConnectionID(64), id: 7, value: [0, 1]))
        #expect(parse("notified 3 failed not-subscribed") == .notified(id: 3, outcome: "failed not-subscribed"))
        #expect(parse("mtu 64 517") == .connectionMTU(ConnectionID(64), 517))
        #expect(parse("mtu 185") == .mtu(185))
        #expect(parse("link-up 185 AA:BB 1 1") == .linkUp(LinkInfo(mtu: 185, peer: "AA:BB", isEncrypted: true, isBonded: true), media: nil))
        #expect(parse("notify ns 0000") == .notification(.notificationSource, [0, 0]))
        #expect(parse("result 9 att 0xA2") == .result(id: 9, .attError(.invalidParameter)))
        #expect(parse("failed no ANCS") == .failed("no ANCS"))
        #expect(parse("status scanning") == .notice(.status("scanning")))
        for bad in ["connected x", "write 64 7 0g", "notify xx 00", "result", "nonsense 1"] { #expect(parse(bad) == nil, "\(bad)") }
    }

    @Test func resultLines() {
        #expect(parseResult(["ok"]) == .success)
        #expect(parseResult(["att", "0xA2"]) == .attError(0xA2))
        #expect(parseResult(["att", "0F"]) == .attError(0x0F))
        #expect(parseResult(["failed"]) == .transportFailure)
        #expect(parseResult(["att", "nonsense"]) == .transportFailure)
        #expect(parseResult([]) == .transportFailure)
    }

    @Test func characteristicNames() {
        for characteristic in [ANCSCharacteristic.notificationSource, .controlPoint, .dataSource] {
            #expect(ANCSCharacteristic(shortName: Substring(characteristic.shortName)) == characteristic)
        }
        #expect(ANCSCharacteristic(shortName: "xx") == nil)
    }

    @Test func pendingRequestsEndOnTimeoutAnswerAndClose() async {
        let table = PendingTable<String>()
        let expired = await table.perform(timeout: .milliseconds(50), expired: "expired", { _ in true }, failed: "failed")
        #expect(expired == "expired")
        let unsent = await table.perform(timeout: .seconds(5), expired: "expired", { _ in false }, failed: "failed")
        #expect(unsent == "failed")
        async let answered = table.perform(timeout: .seconds(5), expired: "expired", { id in
            Task { try? await Task.sleep(for: .milliseconds(20)); table.resolve(id, "answer \(id)") }
            return true
        }, failed: "failed")
        #expect(await answered.hasPrefix("answer"))
        table.close(with: "closed")
        let late = await table.perform(timeout: .seconds(5), expired: "expired", { _ in true }, failed: "failed")
        #expect(late == "closed")
    }

    /// A host speaking another protocol version is refused with a message naming both.
    @Test(.enabled(if: BumbleTestEnvironment.anyPython != nil, "needs a Python"))
    func refusesAnotherProtocolVersion() async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-fake-host-\(UInt32.random(in: 0...UInt32.max)).py")
        try Data("import sys, time\nprint('ancs-bumble 3 serve', flush=True)\ntime.sleep(5)\n".utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let python = BumbleEnvironment(python: try #require(BumbleTestEnvironment.anyPython), script: script.path)
        await #expect {
            _ = try await BumbleServerTransport.start(BumbleHostOptions(transport: "none", startTimeout: .seconds(10)), environment: python)
        } throws: { error in
            "\(error)".contains("ancs-bumble 3 serve") && "\(error)".contains("expected `ancs-bumble 2 serve`")
        }
    }

    /// A host that dies before `ready` fails the start with its reason.
    @Test(.enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing))
    func reportsABadTransport() async throws {
        let environment = try BumbleTestEnvironment.environment()
        await #expect {
            _ = try await BumbleServerTransport.start(BumbleHostOptions(transport: "nonsense:1", startTimeout: .seconds(20)), environment: environment)
        } throws: { error in
            "\(error)".contains("cannot open transport nonsense:1")
        }
    }
}

@Suite("Bumble on virtual controllers", .enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing),
       .serialized)
struct BumbleVirtualControllerTests {
    /// ProviderServer over the Bumble transport, against Bumble's own
    /// AncsClient (a Python script): pairing, encryption required,
    /// PreExisting, attributes, app attributes, both actions, 0xA2.
    @Test(arguments: [23, 185])
    func providerAgainstBumbleAncsClient(mtu: Int) async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        let transport = try await BumbleServerTransport.start(BumbleHostOptions(transport: link.transports.0), environment: environment)
        let provider = ProviderServer(transport: transport)
        try await prepareDemo(provider)
        let run = Task { try await provider.run() }
        let events = Task {
            var seen: [ProviderEvent] = []
            for await event in provider.events {
                seen.append(event)
                if case .sessionStarted = event {
                    Task { try await addFirstTimelineNotifications(provider, count: 3) }
                }
            }
            return seen
        }
        let client = try ChildProcess(environment.python, ["-u", BumbleTestEnvironment.interopClient,
                                                           "--transport", link.transports.1, "--mtu", "\(mtu)"])
        let status = await client.waitForExit(timeout: .seconds(120))
        transport.close()
        try await withTimeout(.seconds(10), "provider run") { try await run.value }
        let seen = await events.value
        #expect(status == 0, "interop client:\n\(client.text)")
        #expect(client.text.contains("PASS 0xA2 Invalid Parameter"))
        #expect(!client.text.contains("FAIL"), "\(client.text)")
        #expect(seen.contains { if case .sessionStarted(_, preExisting: 2) = $0 { true } else { false } })
        #expect(seen.contains { if case .actionPerformed(let action) = $0 { action.actionID == .positive } else { false } })
        #expect(seen.contains { if case .actionPerformed(let action) = $0 { action.actionID == .negative } else { false } })
        #expect(seen.contains { if case .commandRejected(_, .unknownNotification) = $0 { true } else { false } })
    }

    /// Both sides on Bumble: a ConsumerClient over the Bumble client
    /// transport against a ProviderServer over the Bumble server transport.
    @Test func consumerAgainstProviderBothOnBumble() async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        let server = try await BumbleServerTransport.start(BumbleHostOptions(transport: link.transports.0), environment: environment)
        let provider = ProviderServer(transport: server)
        try await prepareDemo(provider)
        let providerRun = Task { try await provider.run() }
        let clientTransport = try await BumbleClientTransport.start(BumbleHostOptions(transport: link.transports.1, mtu: 185), environment: environment)
        let consumer = ConsumerClient(transport: clientTransport, configuration: .displaying(.standard))
        let consumerRun = Task { try await consumer.run() }
        let log = EventLog<ConsumerEvent>()
        let reader = Task { for await event in consumer.events where event.isEngineEvent { log.append(event.consumerEvent) } }
        let titles = try await log.wait(timeout: .seconds(60), "two PreExisting notifications with attributes") { events in
            let titles = events.compactMap { event -> String? in
                guard case .attributes(let response) = event else { return nil }
                return response.attributes.first(where: { $0.id == .title })?.value.string
            }
            return titles.count >= 2 ? titles : nil
        }
        #expect(Set(titles) == ["Team stand-up", "Pick up bike"])
        // An action answered 0xA3 by error injection reaches the consumer as 0xA3.
        let failing = ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, flags: [.negativeAction],
                                           title: "Fails", message: "x", negativeActionLabel: "Clear", negativeActionEffect: .fail)
        let uid = try await provider.add(failing)
        _ = try await log.wait(timeout: .seconds(20), "the Added event") { events in
            events.contains { if case .added(let n) = $0 { n.uid == uid } else { false } } ? true : nil
        }
        let result = try await withTimeout(.seconds(30), "the failed action") { () -> ConsumerError? in
            do throws(ConsumerError) {
                try await consumer.performAction(.negative, on: uid)
                return nil
            } catch {
                return error
            }
        }
        #expect(result == .actionFailed)
        clientTransport.close()
        server.close()
        try await withTimeout(.seconds(10), "consumer run") { try await consumerRun.value }
        try await withTimeout(.seconds(10), "provider run") { try await providerRun.value }
        await reader.value
    }

    /// The client transport on its own: link-up after pairing, subscribe,
    /// PreExisting notifications, a Control Point write answered 0xA2 on air,
    /// then a disconnection and a reconnection that re-encrypts with the
    /// bond stored in the keys files (no pairing). Either the accessory
    /// scans and connects, or (`phoneIsCentral`) it advertises and the
    /// provider connects to it, as an iPhone does.
    @Test(arguments: [false, true])
    func clientTransportBondsAndReconnects(phoneIsCentral: Bool) async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-bumble-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await BumbleServerTransport.start(
            // MTU 23 on both sides (as central the phone would ask for its own).
            BumbleHostOptions(transport: link.transports.0, keys: directory.appendingPathComponent("np.json").path, mtu: 23, central: phoneIsCentral),
            environment: environment)
        let provider = ProviderServer(transport: server)
        try await prepareDemo(provider)
        let providerRun = Task { try await provider.run() }
        let client = try await BumbleClientTransport.start(
            BumbleHostOptions(transport: link.transports.1, keys: directory.appendingPathComponent("nc.json").path, mtu: 23, reconnect: true,
                              peripheral: phoneIsCentral),
            environment: environment)
        let log = EventLog<GATTClientEvent>()
        let reader = Task { for try await event in client.events { log.append(event) } }

        let first = try await log.wait(timeout: .seconds(30), "the first link-up") { events in
            events.compactMap { if case .linkUp(let info) = $0 { info } else { nil } }.first
        }
        #expect(first.mtu == 23)
        #expect(first.isEncrypted)
        #expect(first.peer == "F0:F0:F0:F0:F0:F0")
        #expect(await client.subscribe(.dataSource) == .success)
        #expect(await client.subscribe(.notificationSource) == .success)
        let preExisting = try await log.wait(timeout: .seconds(10), "two PreExisting events") { events in
            let sources = events.compactMap { event -> NotificationSourceEvent? in
                guard case .notification(.notificationSource, let bytes) = event else { return nil }
                return try? NotificationSourceEvent.decode(bytes)
            }
            return sources.count >= 2 ? sources : nil
        }
        #expect(preExisting.allSatisfy { $0.eventFlags.contains(.preExisting) })
        let unknown = GetNotificationAttributes(notificationUID: NotificationUID(999), attributes: [NotificationAttributeRequest(.title, maxLength: 8)])
        #expect(await client.writeControlPoint(try ControlPointCommand.getNotificationAttributes(unknown).encode()) == .attError(.invalidParameter))

        client.disconnect()
        _ = try await log.wait(timeout: .seconds(10), "link-down") { events in events.contains(.linkDown) ? true : nil }
        let second = try await log.wait(timeout: .seconds(30), "the second link-up") { events in
            let ups = events.compactMap { if case .linkUp(let info) = $0 { info } else { nil } }
            return ups.count >= 2 ? ups[1] : nil
        }
        #expect(second.isBonded, "re-encrypted with the stored keys")
        #expect(second.isEncrypted)
        client.close()
        server.close()
        try await withTimeout(.seconds(10), "client events") { try await reader.value }
        try await withTimeout(.seconds(10), "provider run") { try await providerRun.value }
    }

    /// When the host process dies, the actor's run() throws the cause.
    @Test func hostDeathEndsTheRunWithTheCause() async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let server = try await BumbleServerTransport.start(BumbleHostOptions(transport: link.transports.0),
                                                           environment: try BumbleTestEnvironment.environment())
        let provider = ProviderServer(transport: server)
        let run = Task { try await provider.run() }
        kill(server.hostProcessIdentifier, SIGKILL)
        let outcome = try await withTimeout(.seconds(10), "run after the host died") { () -> String in
            do {
                try await run.value
                return "returned"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome.contains("killed by signal 9"), "\(outcome)")
        await #expect(throws: TransportError.self) {
            try await server.notify(ConnectionID(1), .notificationSource, [0])
        }
    }
}

extension ConsumerClientEvent {
    /// An event the engine tells as it is (not the display's `.ready`,
    /// `.updated`, `.displayFailed`): what these tests log as `ConsumerEvent`s.
    var isEngineEvent: Bool {
        switch self {
        case .ready, .updated, .displayFailed: false
        default: true
        }
    }
}
