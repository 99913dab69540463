import ANCS
import Foundation
import Testing
import ANCSDemo
@testable import ANCSRuntime
@testable import ANCSSimulation

/// Faults over the simulated link. After each: the consumer's model is
/// consistent, nothing of an ended session survives, pending requests failed
/// with the right error, and the next request or session works.
@Suite struct FaultMatrixTests {
    /// How a misbehaving phone rewrites its own outputs.
    typealias Mangle = (SimulatedLink.ServerInput, [SimulatedLink.ServerOutput]) -> [SimulatedLink.ServerOutput]

    final class Setup {
        let host = ProviderHost()
        var mangle: Mangle?
        var link: SimulatedLink!
        var uid = NotificationUID(0)

        init(mtu: Int = 23) {
            host.registerApp("com.apple.MobileSMS", displayName: "Messages")
            link = SimulatedLink(configuration: .init(mtu: mtu)) { [unowned self] input, now in
                let outputs = self.host.serve(ConnectionID(1), input, at: now)
                return self.mangle?(input, outputs) ?? outputs
            }
            host.attach(link, as: ConnectionID(1))
            link.connect()
            link.runUntilIdle()
            uid = host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .incomingCall, flags: [.positiveAction, .negativeAction],
                                                title: "Alice", message: "On my way — 5 min 🚲", positiveActionLabel: "Answer", negativeActionLabel: "Decline"), at: link.now)!
            link.runUntilIdle()
        }

        func result(_ id: ConsumerRequestID) -> ConsumerResult? {
            var found: ConsumerResult?
            for (_, event) in link.events {
                if case .completed(id, let result) = event {
                    #expect(found == nil, "request \(id) ended twice")
                    found = result
                }
            }
            return found
        }

        func fetch() -> ConsumerRequestID {
            link.request { consumer, now in consumer.fetchAttributes([.init(.title, maxLength: 32), .init(.message, maxLength: 64)], for: uid, at: now) }
        }

        /// A fetch that must succeed with the provider's values.
        func expectWorkingFetch(_ context: String) {
            let id = fetch()
            link.runUntilIdle()
            guard case .success(.notificationAttributes(let response))? = result(id) else {
                Issue.record("\(context): the next fetch did not succeed: \(String(describing: result(id)))")
                return
            }
            #expect(response[.title]?.string == "Alice", "\(context)")
            #expect(response[.message]?.string == "On my way — 5 min 🚲", "\(context)")
        }
    }

    enum Command: String, CaseIterable, CustomTestStringConvertible {
        case notificationAttributes, appAttributes, action
        var testDescription: String { rawValue }
    }

    static let errors: [(ANCSErrorCode, ConsumerError)] = [
        (.unknownCommand, .unknownCommand), (.invalidCommand, .invalidCommand), (.invalidParameter, .invalidParameter),
        (.actionFailed, .actionFailed), (ANCSErrorCode(rawValue: 0x05), .att(0x05)), (ANCSErrorCode(rawValue: 0x0E), .att(0x0E)),
    ]

    @Test("each ATT and ANCS error on each command", arguments: Command.allCases)
    func errorOnEachCommand(_ command: Command) {
        for (code, expected) in Self.errors {
            let setup = Setup()
            setup.link.failNextControlPointWrite(with: .attError(code))
            let id = setup.link.request { consumer, now in
                switch command {
                case .notificationAttributes: consumer.fetchAttributes([.init(.title)], for: setup.uid, at: now)
                case .appAttributes: consumer.fetchAppAttributes("com.apple.MobileSMS", at: now)
                case .action: consumer.performAction(.negative, on: setup.uid, at: now)
                }
            }
            setup.link.runUntilIdle()
            #expect(setup.result(id) == .failure(expected), "\(command) with 0x\(String(code.rawValue, radix: 16))")
            #expect(setup.link.consumer.notifications[setup.uid] != nil, "a failed command changes nothing")
            #expect(setup.link.consumer.pendingRequestCount == 0)
            setup.expectWorkingFetch("after \(code) on \(command)")
        }
        // And the transport failing a write without an ATT answer.
        let setup = Setup()
        setup.link.failNextControlPointWrite(with: .transportFailure)
        let id = setup.fetch()
        setup.link.runUntilIdle()
        #expect(setup.result(id) == .failure(.transportFailure))
        setup.expectWorkingFetch("after a transport failure")
    }

    @Test("a provider that sends an extra fragment after a response")
    func extraFragment() {
        let setup = Setup()
        setup.mangle = { input, outputs in
            guard case .controlPointWrite = input, outputs.contains(where: { if case .notify(.dataSource, _) = $0 { true } else { false } }) else { return outputs }
            return outputs + [.notify(.dataSource, [0x03, 0x02, 0x00, 0x41, 0x42])]
        }
        let id = setup.fetch()
        setup.link.runUntilIdle()
        #expect(setup.result(id)?.error == nil)
        #expect(setup.link.events.contains { if case .protocolError = $0.1 { true } else { false } }, "the stray bytes are reported")
        setup.mangle = nil
        setup.expectWorkingFetch("after an extra fragment")
    }

    @Test("a provider that answers for the wrong UID")
    func wrongUID() {
        let setup = Setup()
        setup.mangle = { input, outputs in
            guard case .controlPointWrite = input else { return outputs }
            var first = true
            return outputs.map { output in
                guard case .notify(.dataSource, var bytes) = output, first else { return output }
                first = false
                bytes[1] ^= 0x55
                return .notify(.dataSource, bytes)
            }
        }
        let id = setup.fetch()
        setup.link.runUntilIdle()
        guard case .failure(.invalidResponse(let error))? = setup.result(id), case .wrongNotificationUID = error.reason else {
            Issue.record("expected a wrong-UID failure, got \(String(describing: setup.result(id)))")
            return
        }
        setup.mangle = nil
        setup.expectWorkingFetch("after a wrong-UID response")
    }

    @Test("a provider that sends fewer tuples than asked")
    func fewerTuples() {
        let setup = Setup()
        setup.mangle = { input, outputs in
            guard case .controlPointWrite = input else { return outputs }
            // Re-encode the response without its last tuple, fragmented as before.
            var bytes: [UInt8] = []
            for case .notify(.dataSource, let fragment) in outputs { bytes += fragment }
            guard bytes.count > 8 else { return outputs }
            let titleLength = Int(bytes[6]) | Int(bytes[7]) << 8
            let shortened = Array(bytes[0..<(8 + titleLength)])
            var result = outputs.filter { if case .notify(.dataSource, _) = $0 { false } else { true } }
            for fragment in DataSourceResponse.fragment(shortened, mtu: 23) { result.append(.notify(.dataSource, fragment)) }
            return result
        }
        let id = setup.fetch()
        setup.link.runUntilIdle()
        #expect(setup.result(id) == .failure(.timedOut), "the incomplete response ends its request")
        setup.mangle = nil
        setup.expectWorkingFetch("after a response with fewer tuples")
        // And a new session after it works too.
        setup.link.disconnect()
        setup.link.connect()
        setup.link.runUntilIdle()
        setup.expectWorkingFetch("in the next session")
    }

    @Test("Notification Source silent for a long time, then a burst")
    func silenceThenBurst() {
        let setup = Setup()
        setup.link.run(until: setup.link.now + .seconds(12 * 3600))
        var uids: [NotificationUID] = []
        for index in 0..<20 {
            if let uid = setup.host.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "n\(index)"), at: setup.link.now) { uids.append(uid) }
        }
        setup.link.runUntilIdle()
        for uid in uids { #expect(setup.link.consumer.notifications[uid] != nil) }
        setup.expectWorkingFetch("after a long silence")
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
            let (id, actions) = consumer.fetchAttributes(command.attributes, for: NotificationUID(7), at: .zero)
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

/// 100 000 notifications with attribute fetches on the virtual clock.
@Suite struct SoakTests {
    func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test("soak: 100 000 notifications, the consumer's memory stays flat")
    func soak() {
        let run = DemoRun(link: .init(mtu: 185, connectionInterval: .milliseconds(30)), repetitions: 10_001)
        run.recordsReadiness = false
        run.host.recordsEvents = false
        run.start()
        var rssAt10k = 0
        var modelSizes: [Int] = []
        while !run.isFinished {
            run.run(until: run.link.now + .seconds(150))
            modelSizes.append(run.link.consumer.notifications.count)
            if rssAt10k == 0 && run.summary.notifications >= 10_000 { rssAt10k = residentKiB() }
        }
        let rssAtEnd = residentKiB()
        #expect(run.summary.notifications >= 100_000)
        #expect(run.summary.shown == run.summary.notifications)
        #expect(run.summary.failedRequests == 0)
        #expect(modelSizes.max()! <= 12, "the model holds only live notifications")
        #expect(run.link.consumer.pendingRequestCount == 0)
        #expect(run.link.consumer.appAttributes.count <= 12)
        // Flat: no growth with history beyond allocator noise.
        #expect(rssAtEnd - rssAt10k < 8 * 1024, "resident memory grew from \(rssAt10k) KiB to \(rssAtEnd) KiB")
        print("soak: \(run.summary.notifications) notifications, resident \(rssAt10k / 1024) MiB at 10 000 and \(rssAtEnd / 1024) MiB at the end")
    }
}
