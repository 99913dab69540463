import ANCS
import ANCSRuntime

// SimulatedLink — one BLE connection between a consumer (NC, GATT client)
// and a provider (NP, GATT server), simulated deterministically on a virtual
// clock. It hosts the Consumer engine and talks to the provider side through
// `SimulatedLink.Server`, so several links can share one Provider.
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
//
// - ATT's transaction timeout: a request unanswered for 30 s drops the link.
//
// Fault hooks: drop the link after N ATT bytes, answer the next Control
// Point write with an ATT error, never answer the next one, delay server
// replies, unpublish/republish ANCS.

public final class SimulatedLink {
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
        public var writes = 0

        public var bytesOnAir: Int { bytesOnAirToConsumer + bytesOnAirToProvider }
        public var packets: Int { packetsToConsumer + packetsToProvider }
        public init() {}
    }

    /// What the server side (a provider) is told, and what it answers.
    public enum ServerInput: Hashable, Sendable {
        case connected(mtu: Int)
        case disconnected
        case subscription(ANCSCharacteristic, enabled: Bool)
        case controlPointWrite([UInt8])
    }
    public enum ServerOutput: Hashable, Sendable {
        /// The answer to the Control Point write just delivered.
        case respond(ATTResult)
        case notify(ANCSCharacteristic, [UInt8])
    }
    /// The provider side: handles one input at a virtual time, returns outputs in order.
    public typealias Server = (ServerInput, Timestamp) -> [ServerOutput]

    enum PDU: Hashable {
        case writeCCCD(ANCSCharacteristic, enable: Bool)
        case writeControlPoint([UInt8], WriteToken)
        case writeResponse(ATTResult)
        case notification(ANCSCharacteristic, [UInt8])

        var attLength: Int {
            switch self {
            case .writeCCCD: 5                               // opcode, handle, 2-byte value
            case .writeControlPoint(let bytes, _): 3 + bytes.count
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

    public let configuration: Configuration
    /// The consumer engine on the accessory side of this link.
    public private(set) var consumer: Consumer
    let server: Server
    public private(set) var counters = Counters()
    public private(set) var now: Timestamp = .zero
    public private(set) var isConnected = false
    public private(set) var isPublished = true
    /// Every event the consumer emitted, with its time, when `recordsEvents` is set.
    public var recordsEvents = true
    public private(set) var events: [(Timestamp, ConsumerEvent)] = []
    /// Called for each consumer event as it happens; may use the link (make requests).
    public var onConsumerEvent: ((ConsumerEvent, SimulatedLink) -> Void)?

    var connectedAt: Timestamp = .zero
    var lastEventTime: Timestamp?
    var toProvider: [Outgoing] = []
    var toConsumer: [Outgoing] = []
    /// The client's outstanding ATT request, if any (CCCD or Control Point).
    var outstandingRequest: PDU?
    var outstandingSince: Timestamp?
    /// ATT: a request not answered within 30 s ends the transaction and the link.
    public static let attTransactionTimeout: Duration = .seconds(30)
    var waitingRequests: [PDU] = []
    var scheduled: [(time: Timestamp, order: Int, body: (SimulatedLink) -> Void)] = []
    var scheduleOrder = 0

    // Faults
    var dropAfterBytes: Int?
    var failNextWrite: ATTResult?
    var swallowNextWrite = false
    var dropPending = false
    /// Extra time before the server's replies may go out.
    public var serverDelay: Duration = .zero

    public init(configuration: Configuration = Configuration(), consumer: Consumer = Consumer(), server: @escaping Server) {
        self.configuration = configuration
        self.consumer = consumer
        self.server = server
    }

    // MARK: - Driving the simulation

    /// Connects (encrypted, ANCS discovered): the provider learns the link, the consumer starts subscribing.
    public func connect() {
        guard !isConnected else { return }
        isConnected = true
        lastEventTime = nil
        connectedAt = nextEventTime(atOrAfter: now)
        handleServerOutputs(server(.connected(mtu: configuration.mtu), now))
        perform(consumer.linkUp(mtu: configuration.mtu, at: now))
    }

    /// Drops the link: both sides are told; everything in flight is lost.
    public func disconnect() {
        guard isConnected else { return }
        isConnected = false
        toProvider.removeAll()
        toConsumer.removeAll()
        waitingRequests.removeAll()
        outstandingRequest = nil
        outstandingSince = nil
        handleServerOutputs(server(.disconnected, now))
        perform(consumer.linkDown(at: now))
    }

    /// Runs `body` at virtual time `time` (or now, if earlier).
    public func schedule(at time: Timestamp, _ body: @escaping (SimulatedLink) -> Void) {
        scheduleOrder += 1
        scheduled.append((max(time, now), scheduleOrder, body))
    }

    /// Lets the application use the consumer: fetch, act, cancel.
    @discardableResult
    public func request(_ body: (inout Consumer, Timestamp) -> (ConsumerRequestID, [ConsumerAction])) -> ConsumerRequestID {
        let (id, actions) = body(&consumer, now)
        perform(actions)
        return id
    }

    /// Tells the consumer something outside a request (stop, say).
    public func consumerInput(_ body: (inout Consumer, Timestamp) -> [ConsumerAction]) {
        perform(body(&consumer, now))
    }

    /// Hands the provider side an input from its application (add, remove…) made elsewhere:
    /// the outputs for this link go on the air.
    public func deliverServerOutputs(_ outputs: [ServerOutput]) {
        handleServerOutputs(outputs)
    }

    /// Runs until nothing is queued, scheduled or pending (or `limit` passes).
    public func runUntilIdle(limit: Duration = .seconds(3600)) {
        run(until: now + limit, stopWhenIdle: true)
    }

    /// Runs the simulation up to `end`.
    public func run(until end: Timestamp, stopWhenIdle: Bool = false) {
        while true {
            let hasTraffic = isConnected && (toProvider.contains { $0.notBefore <= end } || toConsumer.contains { $0.notBefore <= end })
            var next: Timestamp?
            if hasTraffic {
                let earliest = (toProvider + toConsumer).map(\.notBefore).min()!
                // One event per interval: the next one after the last that ran.
                let after = lastEventTime.map { max($0 + .nanoseconds(1), earliest) } ?? earliest
                next = nextEventTime(atOrAfter: max(after, now))
            }
            if let first = scheduled.min(by: { ($0.time, $0.order) < ($1.time, $1.order) }), next == nil || first.time < next! {
                next = first.time
            }
            if let deadline = consumer.nextDeadline, next == nil || deadline < next! {
                next = max(deadline, now)
            }
            if isConnected, let since = outstandingSince, next == nil || since + Self.attTransactionTimeout < next! {
                next = max(since + Self.attTransactionTimeout, now)
            }
            guard let time = next, time <= end else {
                if !stopWhenIdle { now = max(now, end) }
                return
            }
            now = time
            if isConnected, let since = outstandingSince, since + Self.attTransactionTimeout <= now {
                disconnect()
                continue
            }
            runScheduled()
            if consumer.nextDeadline.map({ $0 <= now }) == true { perform(consumer.tick(now)) }
            if hasTraffic && isConnected && (now - connectedAt).isMultiple(of: configuration.connectionInterval) && lastEventTime != now {
                lastEventTime = now
                connectionEvent()
            }
        }
    }

    /// The fewest connection events and bytes on air one Control Point round
    /// trip can take on this link: the write in one event, then the write
    /// response and ⌈response / (MTU − 3)⌉ notifications packed
    /// `packetsPerEvent` to an event.
    public func minimumRoundTrip(commandLength: Int, responseLength: Int) -> (events: Int, bytesOnAir: Int) {
        let write = PDU.writeControlPoint(Array(repeating: 0, count: commandLength), WriteToken(rawValue: 0))
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
        return (events, air(write) + replies.reduce(0) { $0 + air($1) })
    }

    // MARK: - Fault hooks

    /// Drops the link once this many more ATT bytes have been delivered (either way).
    public func dropLink(afterBytes bytes: Int) { dropAfterBytes = bytes }
    /// The next Control Point write is answered with this result instead of reaching the provider.
    public func failNextControlPointWrite(with result: ATTResult) { failNextWrite = result }
    /// The next Control Point write is never answered (the request times out).
    public func neverAnswerNextControlPointWrite() { swallowNextWrite = true }

    /// ANCS disappears from the provider's database (Service Changed indicated).
    public func unpublishANCS() {
        guard isPublished else { return }
        isPublished = false
        if isConnected {
            handleServerOutputs(server(.subscription(.notificationSource, enabled: false), now))
            handleServerOutputs(server(.subscription(.dataSource, enabled: false), now))
        }
        perform(consumer.serviceChanged(published: false, at: now))
    }

    /// ANCS is back; the consumer re-discovers and subscribes again.
    public func publishANCS() {
        guard !isPublished else { return }
        isPublished = true
        perform(consumer.serviceChanged(published: true, at: now))
    }

    // MARK: - Internals

    func nextEventTime(atOrAfter time: Timestamp) -> Timestamp {
        let interval = configuration.connectionInterval
        if time <= connectedAt { return connectedAt }
        let elapsed = time - connectedAt
        let events = elapsed.dividedRoundingUp(by: interval)
        return connectedAt + interval * events
    }

    private func runScheduled() {
        while let index = scheduled.indices.filter({ scheduled[$0].time <= now })
            .min(by: { (scheduled[$0].time, scheduled[$0].order) < (scheduled[$1].time, scheduled[$1].order) }) {
            let job = scheduled.remove(at: index)
            job.body(self)
        }
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

    private func replyTime() -> Timestamp {
        // Produced during this event: on the air from the next one, after any configured delay.
        now + .nanoseconds(1) + serverDelay
    }

    private func deliverToProvider(_ pdu: PDU) {
        switch pdu {
        case .writeCCCD(let characteristic, let enable):
            enqueueToConsumer(.writeResponse(.success))
            handleServerOutputs(server(.subscription(characteristic, enabled: enable), now))
        case .writeControlPoint(let bytes, _):
            counters.writes += 1
            if let result = failNextWrite {
                failNextWrite = nil
                enqueueToConsumer(.writeResponse(result))
            } else if swallowNextWrite {
                swallowNextWrite = false
            } else {
                handleServerOutputs(server(.controlPointWrite(bytes), now))
            }
        case .writeResponse, .notification:
            break  // a server does not receive these
        }
    }

    private func deliverToConsumer(_ pdu: PDU) {
        switch pdu {
        case .writeResponse(let result):
            let request = outstandingRequest
            outstandingRequest = nil
            outstandingSince = nil
            switch request {
            case .writeCCCD(let characteristic, let enable)?:
                if enable { perform(consumer.subscriptionCompleted(characteristic, result, at: now)) }
            case .writeControlPoint(_, let token)?:
                perform(consumer.writeCompleted(token, result, at: now))
            default:
                break
            }
            sendNextRequest()
        case .notification(let characteristic, let bytes):
            counters.notifications += 1
            switch characteristic {
            case .notificationSource: perform(consumer.received(notificationSource: bytes, at: now))
            case .dataSource: perform(consumer.received(dataSource: bytes, at: now))
            case .controlPoint: break  // not a notifying characteristic: ignored
            }
        case .writeCCCD, .writeControlPoint:
            break
        }
    }

    private func enqueueToConsumer(_ pdu: PDU) {
        guard isConnected else { return }
        toConsumer.append(Outgoing(pdu: pdu, packetsLeft: packets(for: pdu), notBefore: replyTime()))
    }

    private func handleServerOutputs(_ outputs: [ServerOutput]) {
        for output in outputs {
            switch output {
            case .respond(let result):
                enqueueToConsumer(.writeResponse(result))
            case .notify(let characteristic, var bytes):
                if bytes.count > configuration.mtu - 3 { bytes.removeLast(bytes.count - (configuration.mtu - 3)) }
                enqueueToConsumer(.notification(characteristic, bytes))
            }
        }
    }

    private func perform(_ actions: [ConsumerAction]) {
        for action in actions {
            switch action {
            case .subscribe(let characteristic):
                request(.writeCCCD(characteristic, enable: true))
            case .unsubscribe(let characteristic):
                request(.writeCCCD(characteristic, enable: false))
            case .writeControlPoint(let bytes, let token):
                request(.writeControlPoint(bytes, token))
            case .emit(let event):
                if recordsEvents { events.append((now, event)) }
                onConsumerEvent?(event, self)
            }
        }
    }

    private func request(_ pdu: PDU) {
        guard isConnected else {
            if case .writeControlPoint(_, let token) = pdu {
                perform(consumer.writeCompleted(token, .transportFailure, at: now))
            }
            return
        }
        waitingRequests.append(pdu)
        sendNextRequest()
    }

    private func sendNextRequest() {
        guard outstandingRequest == nil, !waitingRequests.isEmpty, isConnected else { return }
        let pdu = waitingRequests.removeFirst()
        outstandingRequest = pdu
        outstandingSince = now
        toProvider.append(Outgoing(pdu: pdu, packetsLeft: packets(for: pdu), notBefore: now + .nanoseconds(1)))
    }
}

extension Duration {
    func isMultiple(of interval: Duration) -> Bool {
        let (s, a) = components
        let (is_, ia) = interval.components
        let total = Int128(s) * 1_000_000_000_000_000_000 + Int128(a)
        let step = Int128(is_) * 1_000_000_000_000_000_000 + Int128(ia)
        return step == 0 || total % step == 0
    }

    func dividedRoundingUp(by interval: Duration) -> Int {
        let (s, a) = components
        let (is_, ia) = interval.components
        let total = Int128(s) * 1_000_000_000_000_000_000 + Int128(a)
        let step = Int128(is_) * 1_000_000_000_000_000_000 + Int128(ia)
        return Int((total + step - 1) / step)
    }
}
