import ANCS
import Foundation
import Testing
import ANCSDemo
@testable import ANCSRuntime
@testable import ANCSSimulation

/// Faults over the simulated link, through the runtime's actors. After each:
/// the consumer's model is consistent, nothing of an ended session
/// survives, pending requests failed with the right error, and the next
/// request or session works.
@Suite struct FaultMatrixTests {
    static let alice = ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .incomingCall, flags: [.positiveAction, .negativeAction],
                                            title: "Alice", message: "On my way — 5 min 🚲", positiveActionLabel: "Answer", negativeActionLabel: "Decline")

    /// A connected rig with one notification.
    static func setup(mtu: Int = 23) throws -> (SimulationRig, NotificationUID) {
        let rig = SimulationRig(mtu: mtu)
        rig.connect()
        return (rig, try rig.add(alice))
    }

    /// A fetch that must succeed with the provider's values.
    static func expectWorkingFetch(_ rig: SimulationRig, _ uid: NotificationUID, _ context: String) {
        guard case .success(let response)? = rig.fetch(uid) else {
            Issue.record("\(context): the next fetch did not succeed")
            return
        }
        #expect(response[.title]?.string == "Alice", "\(context)")
        #expect(response[.message]?.string == "On my way — 5 min 🚲", "\(context)")
    }

    enum Command: String, CaseIterable, CustomTestStringConvertible {
        case notificationAttributes, appAttributes, action
        var testDescription: String { rawValue }
    }

    static let errors: [(ATTErrorCode, ConsumerError)] = [
        (.unknownCommand, .unknownCommand), (.invalidCommand, .invalidCommand), (.invalidParameter, .invalidParameter),
        (.actionFailed, .actionFailed), (.insufficientAuthentication, .att(.insufficientAuthentication)), (.unlikelyError, .att(.unlikelyError)),
    ]

    @Test("each ATT and ANCS error on each command", arguments: Command.allCases)
    func errorOnEachCommand(_ command: Command) async throws {
        for (code, expected) in Self.errors {
            let (rig, uid) = try Self.setup()
            rig.link.failNextControlPointWrite(with: .attError(code))
            let request = rig.request { client throws(ConsumerError) in
                switch command {
                case .notificationAttributes: _ = try await client.fetchAttributes([.init(.title)], for: uid)
                case .appAttributes: _ = try await client.fetchAppAttributes("com.apple.MobileSMS")
                case .action: try await client.performAction(.negative, on: uid)
                }
            }
            rig.simulation.runUntilIdle()
            #expect(request.error == expected, "\(command) with 0x\(String(code.rawValue, radix: 16))")
            #expect(await rig.notifications()[uid] != nil, "a failed command changes nothing")
            #expect(await rig.pendingRequestCount() == 0)
            Self.expectWorkingFetch(rig, uid, "after \(code) on \(command)")
        }
        // And the transport failing a write without an ATT answer.
        let (rig, uid) = try Self.setup()
        rig.link.failNextControlPointWrite(with: .transportFailure)
        #expect(rig.fetch(uid) == .failure(.transportFailure))
        Self.expectWorkingFetch(rig, uid, "after a transport failure")
    }

    @Test("a provider that sends an extra fragment after a response")
    func extraFragment() throws {
        let (rig, uid) = try Self.setup()
        #expect(try rig.fetch(uid)?.get() != nil)
        rig.link.injectNotification(.dataSource, [0x03, 0x02, 0x00, 0x41, 0x42])
        rig.simulation.runUntilIdle()
        #expect(rig.consumerEvents.contains { $0.isProtocolError }, "the stray bytes are reported")
        Self.expectWorkingFetch(rig, uid, "after an extra fragment")
    }

    @Test("a provider that answers for the wrong UID")
    func wrongUID() throws {
        let (rig, uid) = try Self.setup()
        var first = true
        rig.link.rewriteNotification = { characteristic, bytes in
            guard characteristic == .dataSource, first else { return [bytes] }
            first = false
            var wrong = bytes
            wrong[1] ^= 0x55
            return [wrong]
        }
        guard case .failure(.invalidResponse(let error))? = rig.fetch(uid), case .wrongNotificationUID = error.reason else {
            Issue.record("expected a wrong-UID failure")
            return
        }
        rig.link.rewriteNotification = nil
        Self.expectWorkingFetch(rig, uid, "after a wrong-UID response")
    }

    @Test("a provider that sends fewer tuples than asked")
    func fewerTuples() throws {
        let (rig, uid) = try Self.setup()
        // Only the header and the title tuple (5 + 3 + 5 bytes) get through.
        var budget = 5 + 3 + 5
        rig.link.rewriteNotification = { characteristic, bytes in
            guard characteristic == .dataSource else { return [bytes] }
            let kept = Array(bytes.prefix(max(budget, 0)))
            budget -= bytes.count
            return kept.isEmpty ? [] : [kept]
        }
        #expect(rig.fetch(uid) == .failure(.timedOut), "the incomplete response ends its request")
        rig.link.rewriteNotification = nil
        Self.expectWorkingFetch(rig, uid, "after a response with fewer tuples")
        // And a new session after it works too.
        rig.link.disconnect()
        rig.connect()
        Self.expectWorkingFetch(rig, uid, "in the next session")
    }

    @Test("a response that cannot be framed does not fail the next request")
    func unframeable() throws {
        let (rig, uid) = try Self.setup()
        rig.link.injectNotification(.dataSource, [0x7F, 0x01, 0x02, 0x03, 0x04, 0x05])
        rig.simulation.runUntilIdle()
        #expect(rig.consumerEvents.contains { $0.isProtocolError })
        Self.expectWorkingFetch(rig, uid, "after bytes that cannot be framed")
    }

    @Test("Notification Source silent for a long time, then a burst")
    func silenceThenBurst() async throws {
        let (rig, uid) = try Self.setup()
        rig.simulation.run(for: .seconds(12 * 3600))
        var uids: [NotificationUID] = []
        for index in 0..<20 {
            uids.append(try rig.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "n\(index)")))
        }
        let model = await rig.notifications()
        for uid in uids { #expect(model[uid] != nil) }
        Self.expectWorkingFetch(rig, uid, "after a long silence")
    }

    @Test("the phone's stack dies mid-response: the consumer's session ends, nothing hangs")
    func providerDiesMidResponse() throws {
        let (rig, uid) = try Self.setup()
        let request = rig.request { client throws(ConsumerError) in try await client.fetchAttributes([.init(.message, maxLength: 64)], for: uid) }
        rig.simulation.run(for: .milliseconds(45))
        rig.server.fail(TransportError(.stackEnded, "the phone's stack died"))
        rig.simulation.runUntilIdle()
        #expect(request.error == .sessionEnded)
        #expect(rig.consumerEvents.last == .sessionEnded(.linkDown))
    }

    @Test("the link dropping at every byte offset of a response, one byte per fragment")
    func dropAtEveryOffset() throws {
        // Feed the consumer directly: a response cut after each byte, then the link drops.
        let command = GetNotificationAttributes(notificationUID: NotificationUID(7), attributes: [.init(.title, maxLength: 16), .init(.date)])
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: NotificationUID(7), attributes: [.init(.title, "Ünïcödé"), .init(.date, "20261122T093102")])).encode()
        for cut in 0...response.count {
            var consumer = Consumer()
            var ended: [ConsumerRequestID: ConsumerResult] = [:]
            func absorb(_ actions: [ConsumerAction]) -> WriteToken? {
                var token: WriteToken?
                for action in actions {
                    if case .emit(.completed(let id, let result)) = action { #expect(ended.updateValue(result, forKey: id) == nil) }
                    if case .writeControlPoint(_, let t) = action { token = t }
                }
                return token
            }
            _ = absorb(consumer.linkUp(mtu: 23, at: .zero))
            _ = absorb(consumer.subscriptionCompleted(.dataSource, .success, at: .zero))
            _ = absorb(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero))
            _ = absorb(consumer.received(notificationSource: NotificationSourceEvent(eventID: .added, eventFlags: [], categoryID: .social, categoryCount: 1, notificationUID: NotificationUID(7)).encode(), at: .zero))
            var actions: [ConsumerAction] = []
            let id = consumer.fetchAttributes(command.attributes, for: NotificationUID(7), at: .zero, into: &actions)
            let token = try #require(absorb(actions))
            _ = absorb(consumer.writeCompleted(token, .success, at: .zero))
            for byte in response[0..<cut] { _ = absorb(consumer.received(dataSource: [byte], at: .zero)) }
            _ = absorb(consumer.linkDown(at: .zero))
            if cut == response.count {
                #expect(ended[id]?.error == nil, "complete response at cut \(cut)")
            } else {
                #expect(ended[id] == .failure(.sessionEnded), "cut at \(cut)")
            }
            #expect(consumer.notifications.isEmpty)
            #expect(consumer.pendingRequestCount == 0)
        }
    }
}

/// 100 000 notifications with attribute fetches on the virtual clock. What
/// the run holds is checked here; its resident memory in a process of its
/// own (`ancs bench --memory-only`, CLISoakTests): this process runs other
/// tests at the same time, and memory they free stays resident.
@Suite struct SoakTests {
    @Test("soak: 100 000 notifications through the actors, every one shown, nothing held but the live ones")
    func soak() async {
        let run = DemoRun(link: .init(mtu: 185, connectionInterval: .milliseconds(30)), repetitions: 10_001)
        run.recordsReadiness = false
        var modelSizes: [Int] = []
        while !run.scriptFinished {
            run.run(until: run.simulation.now + .seconds(150))
            modelSizes.append(await run.consumer.notifications.count)
        }
        run.runToEnd()
        #expect(run.summary.notifications >= 100_000)
        #expect(run.summary.shown == run.summary.notifications)
        #expect(run.summary.failedRequests == 0)
        #expect(run.summary.unsettled == 0)
        #expect(modelSizes.max()! <= 12, "the model holds only live notifications")
        #expect(await run.consumer.pendingRequestCount == 0)
        #expect(await run.consumer.appAttributes.count <= 12)
        #expect(await run.consumer.droppedEventCount == 0)
        #expect(run.summary.removedBeforeShown.isEmpty)
    }
}
