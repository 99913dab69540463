import ANCS
import ANCSRuntime
import Synchronization

/// What every transport adapter must do, checked end to end: a GATT client
/// transport and a GATT server transport joined by the stack under test
/// (a loopback, the simulated link, BlueZ and a phone, two Bumble hosts).
///
/// ```swift
/// let failures = await TransportContract.check(pair, clock: ContinuousClock())
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// Each step waits at most `timeout` on `clock`, so a broken adapter fails
/// the check instead of hanging it. The checks, in order:
/// 1. connecting: the server hears `connected` and the client `linkUp`,
///    on an encrypted link, agreeing on an MTU in 23…517 (the server may
///    learn it after `connected`, as `mtuChanged`);
/// 2. subscribing to Data Source, then Notification Source: each returns
///    success and the server hears each, in that order;
/// 3. notifications reach the client byte for byte and in order, both
///    characteristics interleaved (a Notification Source event, then a Data
///    Source response in MTU − 3 fragments);
/// 4. a Control Point write reaches the server byte for byte; the server's
///    success and ATT error answers come back as results (0xA0–0xA3 exactly
///    where the stack can send them, `supportsANCSErrors`);
/// 5. a notification to a characteristic the client did not subscribe to
///    throws;
/// 6. the link dropping: the client hears `linkDown`, the server
///    `disconnected`, a write in flight returns `.transportFailure`, a
///    notification to the gone connection throws.
public enum TransportContract {
    /// The two ends and how to drive the link between them.
    public struct Pair: Sendable {
        public var client: any GATTClientTransport
        public var server: any GATTServerTransport
        /// Brings the link up (the phone connects, or the accessory does).
        public var connect: @Sendable () async throws -> Void
        /// Drops the link from the phone's side.
        public var disconnect: @Sendable () async throws -> Void
        /// Whether the server can answer a write with ANCS errors 0xA0–0xA3
        /// (BlueZ's GATT server cannot: they arrive as 0x0E).
        public var supportsANCSErrors: Bool

        public init(client: any GATTClientTransport, server: any GATTServerTransport,
                    connect: @escaping @Sendable () async throws -> Void, disconnect: @escaping @Sendable () async throws -> Void,
                    supportsANCSErrors: Bool = true) {
            self.client = client
            self.server = server
            self.connect = connect
            self.disconnect = disconnect
            self.supportsANCSErrors = supportsANCSErrors
        }
    }

    /// Runs every check; returns what failed, in words (empty: the pair passes).
    public static func check<C: Clock<Duration>>(_ pair: Pair, clock: C, timeout: Duration = .seconds(10)) async -> [String] {
        let run = Run(pair: pair, clock: clock, timeout: timeout)
        await run.all()
        return await run.failures
    }

    /// Events a forwarding task has read, for a check to take in order.
    final class Inbox<Event: Sendable>: Sendable {
        struct State { var events: [Event] = []; var ended: String? }
        let state = Mutex(State())

        func read(_ stream: AsyncThrowingStream<Event, any Error>) async {
            do {
                for try await event in stream { state.withLock { $0.events.append(event) } }
                state.withLock { $0.ended = "ended" }
            } catch {
                state.withLock { $0.ended = "ended throwing \(error)" }
            }
        }

        func take() -> (Event?, String?) {
            state.withLock { state in
                if !state.events.isEmpty { return (state.events.removeFirst(), nil) }
                return (nil, state.ended)
            }
        }
    }

    actor Run<C: Clock<Duration>> {
        let pair: Pair
        let clock: C
        let timeout: Duration
        var failures: [String] = []
        let clientInbox = Inbox<GATTClientEvent>()
        let serverInbox = Inbox<GATTServerEvent>()

        init(pair: Pair, clock: C, timeout: Duration) {
            self.pair = pair
            self.clock = clock
            self.timeout = timeout
        }

        func fail(_ text: String) { failures.append(text) }

        /// `body`, or nil once `timeout` has passed.
        func within<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async -> T? {
            let clock = self.clock, timeout = self.timeout
            let outcome: Result<T, any Error>? = await withTaskGroup(of: Result<T, any Error>?.self) { group in
                group.addTask {
                    do { return .success(try await body()) } catch { return .failure(error) }
                }
                group.addTask {
                    try? await clock.sleep(for: timeout)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            switch outcome {
            case .success(let value)?: return value
            case .failure(let error)?: fail("\(what): \(error)"); return nil
            case nil: fail("\(what): nothing within \(timeout)"); return nil
            }
        }

        /// The next event in `inbox`, polled every millisecond for at most `timeout`.
        func next<Event: Sendable>(_ inbox: Inbox<Event>, _ what: String) async -> Event? {
            let deadline = clock.now.advanced(by: timeout)
            while true {
                let (event, ended) = inbox.take()
                if let event { return event }
                if let ended { fail("\(what): the event stream \(ended)"); return nil }
                if clock.now >= deadline { fail("\(what): nothing within \(timeout)"); return nil }
                try? await clock.sleep(for: .milliseconds(1))
            }
        }

        /// Writes `command` while `serve` handles its arrival at the server;
        /// the write's result, or nil (a failure recorded) if something did not come.
        func write(_ command: [UInt8], _ what: String, serve: @escaping (_ bytes: [UInt8], _ reply: ATTResponder) async -> Void) async -> ATTResult? {
            let client = pair.client, clock = self.clock, timeout = self.timeout
            return await withTaskGroup(of: ATTResult?.self) { group in
                group.addTask { await client.writeControlPoint(command) }
                guard case .controlPointWrite(_, let bytes, let reply)? = await nextServerEvent("server: \(what)") else {
                    fail("server: \(what) did not arrive")
                    group.cancelAll()
                    return nil
                }
                await serve(bytes, reply)
                group.addTask {
                    try? await clock.sleep(for: timeout)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                if first == nil { fail("client: \(what): no result within \(timeout)") }
                return first
            }
        }

        func nextClientEvent(_ what: String) async -> GATTClientEvent? { await next(clientInbox, what) }
        /// The server's MTU as last reported (`connected`, then `mtuChanged` after an exchange).
        var serverMTU: Int?

        /// The next server event other than an MTU change (which is recorded).
        func nextServerEvent(_ what: String) async -> GATTServerEvent? {
            while let event = await next(serverInbox, what) {
                if case .mtuChanged(_, let mtu) = event { serverMTU = mtu; continue }
                return event
            }
            return nil
        }

        func all() async {
            let clientInbox = self.clientInbox, serverInbox = self.serverInbox
            let clientEvents = pair.client.events, serverEvents = pair.server.events
            await withDiscardingTaskGroup { readers in
                readers.addTask { await clientInbox.read(clientEvents) }
                readers.addTask { await serverInbox.read(serverEvents) }
                await checks()
                readers.cancelAll()
            }
        }

        func checks() async {
            // 1. Connecting.
            guard await within("connect", pair.connect) != nil else { return }
            guard case .linkUp(let connection, let serverLink)? = await nextServerEvent("server: connected") else {
                return fail("server: the first event is not `connected`")
            }
            guard case .linkUp(let clientLink)? = await nextClientEvent("client: linkUp") else {
                return fail("client: the first event is not `linkUp`")
            }
            serverMTU = serverLink.mtu
            if !(23...517).contains(clientLink.mtu) { fail("client: MTU \(clientLink.mtu) is outside 23…517") }
            if !clientLink.isEncrypted { fail("client: the link is not encrypted") }

            // 2. Subscribing, Data Source first.
            let client = pair.client
            for characteristic in [ANCSCharacteristic.dataSource, .notificationSource] {
                let result = await within("subscribe \(characteristic)") { await client.subscribe(characteristic) }
                if let result, result != .success { fail("subscribe \(characteristic): \(result)") }
                guard case .subscriptionChanged(connection, characteristic, enabled: true)? = await nextServerEvent("server: \(characteristic) subscribed") else {
                    return fail("server: no subscription to \(characteristic)")
                }
            }

            // The MTU both sides use, once the exchange is over (a server may
            // hear of it after `connected`, as `mtuChanged`).
            if clientLink.mtu != serverMTU { fail("MTU: the client says \(clientLink.mtu), the server \(serverMTU.map(String.init) ?? "nothing")") }

            // 3. Notifications, byte for byte and in order.
            let event = NotificationSourceEvent(eventID: .added, eventFlags: [.negativeAction], categoryID: .social, categoryCount: 1, notificationUID: NotificationUID(42)).encode()
            let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
                notificationUID: NotificationUID(42),
                attributes: [NotificationAttribute(.title, AttributeValue(String(repeating: "Ünïcödé ", count: 60)))]))
            let fragments = response.fragments(mtu: clientLink.mtu)
            let sent: [(ANCSCharacteristic, [UInt8])] = [(.notificationSource, event)] + fragments.map { (.dataSource, $0) }
            let server = pair.server
            for (characteristic, value) in sent {
                _ = await within("notify \(characteristic)") { try await server.notify(connection, characteristic, value) }
            }
            for (index, (characteristic, value)) in sent.enumerated() {
                guard case .notification(let got, let bytes)? = await nextClientEvent("client: notification \(index + 1) of \(sent.count)") else {
                    return fail("client: notification \(index + 1) of \(sent.count) is missing")
                }
                if got != characteristic || bytes != value { fail("client: notification \(index + 1) differs from what was sent") }
            }

            // 4. Control Point writes and their answers.
            let answers: [ATTResult] = pair.supportsANCSErrors
                ? [.success, .attError(.invalidParameter), .attError(.unknownCommand), .attError(.actionFailed)]
                : [.success, .attError(ATTErrorCode(rawValue: 0x80))]
            for (index, answer) in answers.enumerated() {
                let command: [UInt8] = [0x00, 42, 0, 0, 0, 0x01, 0x20, 0x00, UInt8(index)]
                let result = await write(command, "write \(index + 1)") { bytes, reply in
                    if bytes != command { self.fail("server: write \(index + 1) arrived as other bytes") }
                    reply(answer)
                }
                if let result, result != answer { fail("client: write \(index + 1) returned \(result), the server answered \(answer)") }
            }

            // 5. Not subscribed: refused.
            let refused = await within("notify an unsubscribed characteristic") { () async -> Bool in
                do {
                    try await server.notify(connection, .controlPoint, [1])
                    return false
                } catch {
                    return true
                }
            }
            if refused == false { fail("server: a notification on a characteristic nobody subscribed to was not refused") }

            // 6. The link drops with a write in flight.
            let result = await write([0x02, 42, 0, 0, 0, 0x01], "the write in flight when the link drops") { _, _ in
                _ = await self.within("disconnect", self.pair.disconnect)
            }
            if let result, result != .transportFailure { fail("client: a write in flight when the link dropped returned \(result)") }
            var sawLinkDown = false
            while !sawLinkDown, let event = await nextClientEvent("client: linkDown") {
                if case .linkDown = event { sawLinkDown = true }
            }
            var sawDisconnected = false
            while !sawDisconnected, let event = await nextServerEvent("server: disconnected") {
                if case .linkDown(connection) = event { sawDisconnected = true }
            }
            let gone = await within("notify a gone connection") { () async -> Bool in
                do {
                    try await server.notify(connection, .notificationSource, event)
                    return false
                } catch {
                    return true
                }
            }
            if gone == false { fail("server: a notification to a gone connection was not refused") }
        }
    }
}
