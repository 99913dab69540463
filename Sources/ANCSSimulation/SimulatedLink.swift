import ANCS
import ANCSRuntime

// SimulatedLink — one BLE connection between a consumer (NC, GATT client)
// and a provider (NP, GATT server) on a `Simulation`'s virtual clock. Its
// `client` end is a `GATTClientTransport` for a `ConsumerClient`; the
// provider side is a `SimulatedServer` (a `GATTServerTransport` for a
// `ProviderServer`), which several links can share.
//
// Timing model (all parameters in `Configuration`):
// - Connection events every `connectionInterval`, from the moment of connect.
//   In each event each direction may send up to `packetsPerEvent` link-layer
//   packets. An ATT PDU of n bytes takes ⌈(n + 4) / dataLength⌉ packets (4 for
//   the L2CAP header); it is delivered when its last packet is sent.
// - What a side produces while handling a PDU goes out from the next event on.
// - One outstanding ATT request (ATT: "a client shall not send a request
//   until the response to the previous one"): Control Point and CCCD writes
//   wait their turn in the client's queue.
// - The server's write response precedes the notifications it causes.
// - A notification longer than MTU − 3 is cut to MTU − 3, as a stack does for
//   a sender that ignores the MTU.
// - Bytes on air count each LL packet as its payload plus 2 (LL header) and
//   4 (MIC of an encrypted link); events count those with any data.
// - ATT's transaction timeout: a request unanswered for 30 s drops the link.
//
// Fault hooks: drop the link after N ATT bytes, answer the next Control
// Point write with an ATT error, never answer the next one, delay server
// replies, rewrite what the provider notifies, unpublish/republish ANCS,
// kill the stack (both ends' event streams fail).

public final class SimulatedLink: @unchecked Sendable {
    public struct Configuration: Hashable, Sendable {
        /// ATT MTU, 23…517.
        public var mtu: Int
        /// 7.5 ms…4 s.
        public var connectionInterval: Duration
        /// LL packets per connection event, each direction.
        public var packetsPerEvent: Int
        /// LL payload bytes per packet (27 without, 251 with Data Length Extension).
        public var dataLength: Int

        public init(mtu: Int = 185, connectionInterval: Duration = .milliseconds(30), packetsPerEvent: Int = 6, dataLength: Int = 251) {
            self.mtu = min(max(mtu, 23), 517)
            let interval = max(connectionInterval, .microseconds(7500))
            self.connectionInterval = min(interval, .seconds(4))
            self.packetsPerEvent = max(1, packetsPerEvent)
            self.dataLength = min(max(dataLength, 27), 251)
        }
    }

    /// Traffic on the link so far.
    public struct Counters: Hashable, Sendable {
        /// Connection events in which at least one packet moved.
        public var connectionEvents = 0
        public var packetsToConsumer = 0
        public var packetsToProvider = 0
        /// ATT PDU bytes.
        public var attBytesToConsumer = 0
        public var attBytesToProvider = 0
        /// LL packet bytes including LL header and MIC.
        public var bytesOnAirToConsumer = 0
        public var bytesOnAirToProvider = 0
        public var notifications = 0
        /// Control Point writes that reached the provider's side.
        public var writes = 0
        /// CCCD writes (subscribe or unsubscribe) that reached the provider's side.
        public var cccdWrites = 0

        public var bytesOnAir: Int { bytesOnAirToConsumer + bytesOnAirToProvider }
        public var packets: Int { packetsToConsumer + packetsToProvider }
        public init() {}
    }

    enum PDU: Hashable {
        case writeCCCD(ANCSCharacteristic, enable: Bool)
        case writeControlPoint([UInt8])
        case writeResponse(ATTResult)
        case notification(ANCSCharacteristic, [UInt8])

        var attLength: Int {
            switch self {
            case .writeCCCD: 5                               // opcode, handle, 2-byte value
            case .writeControlPoint(let bytes): 3 + bytes.count
            case .writeResponse(let result): result == .success ? 1 : 5  // Write Response or Error Response
            case .notification(_, let bytes): 3 + bytes.count
            }
        }
    }

    struct Outgoing {
        var pdu: PDU
        var packetsLeft: Int
        /// Not before this time (replies wait for the next event, or a configured delay).
        var notBefore: Timestamp
    }

    /// A client request waiting to go out or for its response.
    struct Request {
        var pdu: PDU
        /// nil once its caller gave up; the response is then dropped.
        var continuation: CheckedContinuation<ATTResult, Never>?
        var id: UInt64
    }

    public let configuration: Configuration
    /// The provider side's name for this link.
    public let connection: ConnectionID
    /// The consumer's end.
    public private(set) var client: Client!
    let simulation: Simulation
    let server: SimulatedServer
    public private(set) var counters = Counters()
    public private(set) var isConnected = false
    public private(set) var isPublished = true
    var now: Timestamp { simulation.now }

    var connectedAt: Timestamp = .zero
    var lastEventTime: Timestamp?
    var toProvider: [Outgoing] = []
    var toConsumer: [Outgoing] = []
    /// The client's outstanding ATT request, if any (CCCD or Control Point).
    var outstanding: Request?
    var outstandingSince: Timestamp?
    var waiting: [Request] = []
    var nextRequestID: UInt64 = 0
    /// Bumped on every connect and drop: a server reply for an earlier link goes nowhere.
    var epoch: UInt64 = 0
    var subscriptions: Set<ANCSCharacteristic> = []
    /// ATT: a request not answered within 30 s ends the transaction and the link.
    public static let attTransactionTimeout: Duration = .seconds(30)

    let clientEvents: AsyncThrowingStream<GATTClientEvent, any Error>
    let clientSink: AsyncThrowingStream<GATTClientEvent, any Error>.Continuation

    // Faults
    var dropAfterBytes: Int?
    var failNextWrite: ATTResult?
    var swallowNextWrite = false
    var dropPending = false
    /// Extra time before the server's replies may go out.
    public var serverDelay: Duration = .zero
    /// Extra time before each Data Source notification may go out, on top
    /// of `serverDelay`: a phone slow to answer (its write responses come at
    /// once; what is queued behind a late notification waits, as on the air).
    public var dataSourceDelay: Duration = .zero
    /// Rewrites each notification the provider sends on this link into the
    /// notifications that go on the air instead (none, one, several).
    public var rewriteNotification: ((ANCSCharacteristic, [UInt8]) -> [[UInt8]])?

    /// A link in `simulation` to the provider side `server`, not yet connected.
    public init(in simulation: Simulation, to server: SimulatedServer, configuration: Configuration = Configuration()) {
        self.simulation = simulation
        self.server = server
        self.configuration = configuration
        (clientEvents, clientSink) = AsyncThrowingStream.makeStream()
        connection = server.attach()
        client = Client(link: self)
        server.links[connection] = self
        simulation.links.append(self)
    }

    // MARK: - Driving

    /// Connects (encrypted, bonded, ANCS discovered): the provider hears
    /// `connected`, then the consumer `linkUp`.
    public func connect() {
        guard !isConnected else { return }
        isConnected = true
        epoch &+= 1
        lastEventTime = nil
        connectedAt = nextEventTime(atOrAfter: now)
        let info = LinkInfo(mtu: configuration.mtu, peer: "simulated \(connection)", isEncrypted: true, isBonded: true)
        server.sink.yield(.linkUp(connection, info))
        // Discovery found no ANCS: said before the link is up, as a host does.
        if !isPublished { clientSink.yield(.serviceChanged(published: false)) }
        clientSink.yield(.linkUp(info))
    }

    /// Drops the link: both sides are told; everything in flight is lost and
    /// requests waiting for a response fail with `.transportFailure`.
    public func disconnect() {
        guard isConnected else { return }
        isConnected = false
        epoch &+= 1
        toProvider.removeAll()
        toConsumer.removeAll()
        subscriptions.removeAll()
        let stranded = (outstanding.map { [$0] } ?? []) + waiting
        outstanding = nil
        outstandingSince = nil
        waiting.removeAll()
        server.sink.yield(.linkDown(connection))
        clientSink.yield(.linkDown)
        for request in stranded { request.continuation?.resume(returning: .transportFailure) }
    }

    /// The host finds that the phone forgot the bond (its reconnection could
    /// not encrypt, or it asks to pair again) and tells the consumer, as
    /// the BlueZ transport and the NimBLE adapter do: `.bondLost`.
    public func reportBondLost() {
        clientSink.yield(.bondLost)
    }

    /// The consumer's stack dies: the link drops and the client's event
    /// stream ends throwing `error`.
    public func failClient(_ error: TransportError) {
        disconnect()
        clientSink.finish(throwing: error)
    }

    /// Ends the client's event stream normally (the stack was closed).
    public func closeClient() {
        disconnect()
        clientSink.finish()
    }

    /// What one Control Point round trip costs on the air.
    public struct RoundTrip: Hashable, Sendable {
        public var events: Int
        public var bytesOnAir: Int

        public init(events: Int, bytesOnAir: Int) {
            self.events = events
            self.bytesOnAir = bytesOnAir
        }
    }

    /// The fewest connection events and bytes on air one Control Point round
    /// trip can take on this link: the write in one event, then the write
    /// response and ⌈response / (MTU − 3)⌉ notifications packed
    /// `packetsPerEvent` to an event.
    public func minimumRoundTrip(commandLength: Int, responseLength: Int) -> RoundTrip {
        let write = PDU.writeControlPoint(Array(repeating: 0, count: commandLength))
        var replies: [PDU] = [.writeResponse(.success)]
        var left = responseLength
        while left > 0 {
            let size = min(left, configuration.mtu - 3)
            replies.append(.notification(.dataSource, Array(repeating: 0, count: size)))
            left -= size
        }
        func air(_ pdu: PDU) -> Int { pdu.attLength + 4 + 6 * packets(for: pdu) }
        let writePackets = packets(for: write)
        let replyPackets = replies.reduce(0) { $0 + packets(for: $1) }
        let per = configuration.packetsPerEvent
        let events = (writePackets + per - 1) / per + (replyPackets + per - 1) / per
        return RoundTrip(events: events, bytesOnAir: air(write) + replies.reduce(0) { $0 + air($1) })
    }

    // MARK: - Fault hooks

    /// Drops the link once this many more ATT bytes have been delivered (either way).
    public func dropLink(afterBytes bytes: Int) { dropAfterBytes = bytes }
    /// The next Control Point write is answered with this result instead of reaching the provider.
    public func failNextControlPointWrite(with result: ATTResult) { failNextWrite = result }
    /// The next Control Point write is never answered (the request times out).
    public func neverAnswerNextControlPointWrite() { swallowNextWrite = true }

    /// ANCS disappears from the provider's database: its subscriptions go
    /// with it, and Service Changed is indicated (unless `serviceChanged` is
    /// false: a phone that changes its database without saying so, and the
    /// consumer's requests fail until ANCS is back).
    public func unpublishANCS(serviceChanged: Bool = true) {
        guard isPublished else { return }
        isPublished = false
        if isConnected {
            for characteristic in [ANCSCharacteristic.notificationSource, .dataSource] where subscriptions.contains(characteristic) {
                server.sink.yield(.subscriptionChanged(connection, characteristic, enabled: false))
            }
            subscriptions.removeAll()
            if serviceChanged { clientSink.yield(.serviceChanged(published: false)) }
        }
    }

    /// ANCS is back; told by Service Changed, the consumer re-discovers and
    /// subscribes again (not told, it holds no subscription any more).
    public func publishANCS(serviceChanged: Bool = true) {
        guard !isPublished else { return }
        isPublished = true
        if isConnected && serviceChanged { clientSink.yield(.serviceChanged(published: true)) }
    }

    // MARK: - The client end

    /// The consumer's end of the link.
    public final class Client: GATTClientTransport, @unchecked Sendable {
        unowned let link: SimulatedLink
        init(link: SimulatedLink) { self.link = link }

        public var events: AsyncThrowingStream<GATTClientEvent, any Error> { link.clientEvents }

        public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
            await link.clientRequest(.writeCCCD(characteristic, enable: true))
        }

        public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
            await link.clientRequest(.writeCCCD(characteristic, enable: false))
        }

        public func writeControlPoint(_ value: [UInt8]) async -> ATTResult {
            await link.clientRequest(.writeControlPoint(value))
        }
    }

    func clientRequest(_ pdu: PDU) async -> ATTResult {
        guard isConnected, isPublished else { return .transportFailure }
        nextRequestID &+= 1
        let id = nextRequestID
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ATTResult, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: .transportFailure)
                    return
                }
                waiting.append(Request(pdu: pdu, continuation: continuation, id: id))
                sendNextRequest()
            }
        } onCancel: {
            // Runs on the simulation's thread (the only one that cancels its tasks).
            self.abandon(id)
        }
    }

    /// The caller of request `id` gave up: it returns now; on the air the
    /// request goes on and its response is dropped.
    func abandon(_ id: UInt64) {
        if outstanding?.id == id, let continuation = outstanding?.continuation {
            outstanding?.continuation = nil
            continuation.resume(returning: .transportFailure)
        } else if let index = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: index).continuation?.resume(returning: .transportFailure)
        }
    }

    // MARK: - The provider side

    /// A notification from the provider: queued for the air, or an error if
    /// the link is gone or the consumer did not subscribe.
    func providerNotify(_ characteristic: ANCSCharacteristic, _ value: [UInt8]) throws(TransportError) {
        guard isConnected else { throw TransportError(.notSent, "\(connection) is not connected") }
        guard subscriptions.contains(characteristic) else { throw TransportError(.notSent, "\(connection) has not subscribed to \(characteristic)") }
        let values = rewriteNotification?(characteristic, value) ?? [value]
        for var bytes in values {
            if bytes.count > configuration.mtu - 3 { bytes.removeLast(bytes.count - (configuration.mtu - 3)) }
            enqueueToConsumer(.notification(characteristic, bytes), after: characteristic == .dataSource ? dataSourceDelay : .zero)
        }
    }

    /// Sends a notification as if the provider had, bypassing it (a stray fragment, say).
    public func injectNotification(_ characteristic: ANCSCharacteristic, _ value: [UInt8]) {
        enqueueToConsumer(.notification(characteristic, value))
    }

    func providerReplied(_ result: ATTResult, epoch: UInt64) {
        guard epoch == self.epoch else { return }
        enqueueToConsumer(.writeResponse(result))
    }

    // MARK: - The simulation's clock

    /// Nothing queued either way and no request outstanding.
    public var isIdle: Bool { toProvider.isEmpty && toConsumer.isEmpty && outstanding == nil && waiting.isEmpty }

    /// The next virtual time this link has something to do.
    func nextActivity() -> Timestamp? {
        guard isConnected else { return nil }
        var next: Timestamp?
        if let earliest = (toProvider + toConsumer).map(\.notBefore).min() {
            // One event per interval: the next one after the last that ran.
            let after = lastEventTime.map { max($0 + .nanoseconds(1), earliest) } ?? earliest
            next = nextEventTime(atOrAfter: max(after, now))
        }
        if let since = outstandingSince {
            let timeout = max(since + Self.attTransactionTimeout, now)
            if next == nil || timeout < next! { next = timeout }
        }
        return next
    }

    /// Does what is due at `time` (the clock is there).
    func act(at time: Timestamp) {
        guard isConnected else { return }
        if let since = outstandingSince, since + Self.attTransactionTimeout <= time {
            disconnect()
            return
        }
        let hasTraffic = !toProvider.isEmpty || !toConsumer.isEmpty
        if hasTraffic && (time - connectedAt).isMultiple(of: configuration.connectionInterval) && lastEventTime != time {
            lastEventTime = time
            connectionEvent()
        }
    }

    // MARK: - Internals

    func nextEventTime(atOrAfter time: Timestamp) -> Timestamp {
        let interval = configuration.connectionInterval
        if time <= connectedAt { return connectedAt }
        let elapsed = time - connectedAt
        let events = elapsed.dividedRoundingUp(by: interval)
        return connectedAt + interval * events
    }

    private func packets(for pdu: PDU) -> Int {
        (pdu.attLength + 4 + configuration.dataLength - 1) / configuration.dataLength
    }

    /// One connection event: each side sends what it may, then handles what arrived.
    private func connectionEvent() {
        var arrivedAtProvider: [PDU] = []
        var arrivedAtConsumer: [PDU] = []
        var moved = false
        send(&toProvider, into: &arrivedAtProvider, moved: &moved, towardConsumer: false)
        if !dropPending { send(&toConsumer, into: &arrivedAtConsumer, moved: &moved, towardConsumer: true) }
        if moved { counters.connectionEvents += 1 }
        if dropPending {
            dropPending = false
            disconnect()
            return
        }
        for pdu in arrivedAtProvider where isConnected { deliverToProvider(pdu) }
        for pdu in arrivedAtConsumer where isConnected { deliverToConsumer(pdu) }
    }

    private func send(_ queue: inout [Outgoing], into arrived: inout [PDU], moved: inout Bool, towardConsumer: Bool) {
        var budget = configuration.packetsPerEvent
        while budget > 0, let head = queue.first, head.notBefore <= now {
            let sent = min(budget, head.packetsLeft)
            budget -= sent
            moved = true
            let payload = head.pdu.attLength + 4
            // Bytes of the packets sent now: full packets, the last one partial.
            let sentBefore = packets(for: head.pdu) - head.packetsLeft
            let start = sentBefore * configuration.dataLength
            let end = min(payload, start + sent * configuration.dataLength)
            let air = (end - start) + sent * 6
            if towardConsumer {
                counters.packetsToConsumer += sent
                counters.bytesOnAirToConsumer += air
            } else {
                counters.packetsToProvider += sent
                counters.bytesOnAirToProvider += air
            }
            if sent == head.packetsLeft {
                queue.removeFirst()
                if towardConsumer { counters.attBytesToConsumer += head.pdu.attLength } else { counters.attBytesToProvider += head.pdu.attLength }
                if let limit = dropAfterBytes {
                    if head.pdu.attLength > limit {
                        dropAfterBytes = nil
                        dropPending = true
                        return
                    }
                    dropAfterBytes = limit - head.pdu.attLength
                }
                arrived.append(head.pdu)
            } else {
                queue[0].packetsLeft -= sent
            }
        }
    }

    private func deliverToProvider(_ pdu: PDU) {
        switch pdu {
        case .writeCCCD(let characteristic, let enable):
            // The stack answers a CCCD write itself, then tells the application.
            counters.cccdWrites += 1
            enqueueToConsumer(.writeResponse(.success))
            if enable { subscriptions.insert(characteristic) } else { subscriptions.remove(characteristic) }
            server.sink.yield(.subscriptionChanged(connection, characteristic, enabled: enable))
        case .writeControlPoint(let bytes):
            counters.writes += 1
            if let result = failNextWrite {
                failNextWrite = nil
                enqueueToConsumer(.writeResponse(result))
            } else if swallowNextWrite {
                swallowNextWrite = false
            } else {
                let epoch = self.epoch
                let reply = ATTResponder { [weak self] result in self?.providerReplied(result, epoch: epoch) }
                server.sink.yield(.controlPointWrite(connection, bytes, reply: reply))
            }
        case .writeResponse, .notification:
            break  // a server does not receive these
        }
    }

    private func deliverToConsumer(_ pdu: PDU) {
        switch pdu {
        case .writeResponse(let result):
            let request = outstanding
            outstanding = nil
            outstandingSince = nil
            request?.continuation?.resume(returning: result)
            sendNextRequest()
        case .notification(let characteristic, let bytes):
            counters.notifications += 1
            clientSink.yield(.notification(characteristic, bytes))
        case .writeCCCD, .writeControlPoint:
            break
        }
    }

    private func enqueueToConsumer(_ pdu: PDU, after delay: Duration = .zero) {
        guard isConnected else { return }
        // Produced now: on the air from the next event, after any configured delay.
        toConsumer.append(Outgoing(pdu: pdu, packetsLeft: packets(for: pdu), notBefore: now + .nanoseconds(1) + serverDelay + delay))
    }

    private func sendNextRequest() {
        guard outstanding == nil, !waiting.isEmpty, isConnected else { return }
        let request = waiting.removeFirst()
        outstanding = request
        outstandingSince = now
        toProvider.append(Outgoing(pdu: request.pdu, packetsLeft: packets(for: request.pdu), notBefore: now + .nanoseconds(1)))
    }
}

/// The provider's side of one or more simulated links: a `GATTServerTransport`
/// for a `ProviderServer`. Each link attached to it is one connection.
public final class SimulatedServer: GATTServerTransport, @unchecked Sendable {
    public let events: AsyncThrowingStream<GATTServerEvent, any Error>
    let sink: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation
    var links: [ConnectionID: SimulatedLink] = [:]
    var connections: UInt32 = 0

    public init() {
        (events, sink) = AsyncThrowingStream.makeStream()
    }

    func attach() -> ConnectionID {
        connections += 1
        return ConnectionID(connections)
    }

    public func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        guard let link = links[connection] else { throw TransportError(.notSent, "no link \(connection)") }
        try link.providerNotify(characteristic, value)
    }

    /// Ends the event stream normally (the phone's stack was closed).
    public func close() {
        for link in links.values { link.disconnect() }
        sink.finish()
    }

    /// The phone's stack dies: every link drops and the event stream ends throwing `error`.
    public func fail(_ error: TransportError) {
        for link in links.values { link.disconnect() }
        sink.finish(throwing: error)
    }
}

extension Duration {
    /// Whether this is a whole number of `interval`s (any duration is, of zero).
    func isMultiple(of interval: Duration) -> Bool {
        interval == .zero || attoseconds % interval.attoseconds == 0
    }

    /// How many `interval`s it takes to cover this duration.
    func dividedRoundingUp(by interval: Duration) -> Int {
        Int((attoseconds + interval.attoseconds - 1) / interval.attoseconds)
    }
}
