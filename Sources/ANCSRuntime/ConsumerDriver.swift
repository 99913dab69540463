import ANCS

/// The Notification Consumer's runtime without concurrency: a `Consumer`
/// engine, the table of requests waiting for their end, the queue of ATT
/// operations (one in flight, as ATT allows), and the generation that makes
/// the results of an ended session's operations stale; it forwards the
/// engine's deadline (`nextDeadline`) and keeps none of its own.
/// `ConsumerClient` is this driver inside an actor; it is a value so tests
/// and other hosts can drive it step by step.
///
/// Every input returns the outputs the host performs, in order:
///
///   transport event ──► handle(_:at:)        ──┐
///   operation result ──► operationEnded(_:_:at:) ├──► [Output]: event / start operation / resume waiter
///   application     ──► submit / cancel / stop  │
///   the clock       ──► tick(at:)             ──┘    then re-arm the timer at `nextDeadline`
///
/// Operations: `.startOperation` is produced for at most one operation at a
/// time; the host reports its result with `operationEnded`, which starts the
/// next. When a session ends (link down, ANCS unpublished, stop) the
/// generation moves on: operations still queued are dropped, and the result
/// of one still in flight is never taken for an answer in the next session.
/// A subscription's is dropped; a Control Point write's goes to the engine
/// by its token (`Consumer.writeCompleted`), which waits for it before the
/// next session's first write, as ATT allows one write at a time (on a link
/// that stays up; a link that drops takes the write with it). The driver
/// itself starts the next session's operations at once: a transport
/// serializes its ATT requests itself.
public struct ConsumerDriver<Waiter> {
    /// One ATT operation for the transport.
    public struct Operation: Hashable, Sendable {
        public enum Kind: Hashable, Sendable {
            case subscribe(ANCSCharacteristic)
            case unsubscribe(ANCSCharacteristic)
            case writeControlPoint([UInt8])
        }
        public let kind: Kind
        let token: WriteToken?
        let generation: UInt64
        let serial: UInt64
    }

    public enum Output {
        /// Tell the application (never a request's completion: those resume waiters).
        case event(ConsumerClientEvent)
        /// Hand this operation to the transport; report its result with `operationEnded`.
        case startOperation(Operation)
        /// A request ended: resume its waiter with the result.
        case resume(Waiter, ConsumerResult)
    }

    public private(set) var engine: Consumer
    /// What each notification is fetched for before `.ready`: the
    /// configuration's (`ConsumerConfiguration.display`).
    public var display: DisplayPolicy? { engine.configuration.display }
    var generation: UInt64 = 0
    var serial: UInt64 = 0
    var queue: [Operation] = []
    var inFlight: Operation?
    var waiters: [ConsumerRequestID: Waiter] = [:]
    var finished = false

    public init(configuration: ConsumerConfiguration = .default) {
        engine = Consumer(configuration: configuration)
    }

    /// The engine's next deadline (a request's, a retry's, the probe's): call `tick` then.
    public var nextDeadline: Timestamp? { engine.nextDeadline }
    /// The host's requests whose waiter has not been resumed yet.
    public var waitingRequestCount: Int { waiters.count }
    /// The operation the transport is working on, if any.
    public var operationInFlight: Operation? { inFlight }

    // MARK: - Inputs

    public mutating func handle(_ event: GATTClientEvent, at now: Timestamp) -> [Output] {
        guard !finished else { return [] }
        switch event {
        case .linkUp(let link):
            newGeneration()
            return perform(engine.linkUp(mtu: link.mtu, at: now), at: now)
        case .linkDown:
            newGeneration()
            return perform(engine.linkDown(at: now), at: now)
        case .bondLost:
            return perform(engine.bondLost(at: now), at: now)
        case .notification(.notificationSource, let bytes):
            return perform(engine.received(notificationSource: bytes, at: now), at: now)
        case .notification(.dataSource, let bytes):
            return perform(engine.received(dataSource: bytes, at: now), at: now)
        case .notification(.controlPoint, _):
            return []  // the Control Point does not notify
        case .serviceChanged(let published):
            if !published { newGeneration() }
            return perform(engine.serviceChanged(published: published, at: now), at: now)
        case .mtuChanged(let mtu):
            engine.mtuChanged(mtu)
            return []
        }
    }

    /// The transport's result for an operation this driver started.
    public mutating func operationEnded(_ operation: Operation, _ result: ATTResult, at now: Timestamp) -> [Output] {
        var outputs: [Output] = []
        if inFlight?.serial == operation.serial { inFlight = nil }
        if operation.generation != generation, !finished, case .writeControlPoint = operation.kind, let token = operation.token {
            // A write of a session that ended while the link stayed up: it
            // answers nothing now, but the engine waits for it before the
            // next write (ATT allows one at a time). Its token is unique.
            outputs += perform(engine.writeCompleted(token, result, at: now), at: now, startNext: false)
        } else if operation.generation == generation && !finished {
            switch operation.kind {
            case .subscribe(let characteristic):
                outputs += perform(engine.subscriptionCompleted(characteristic, result, at: now), at: now, startNext: false)
            case .unsubscribe:
                break
            case .writeControlPoint:
                if let token = operation.token {
                    outputs += perform(engine.writeCompleted(token, result, at: now), at: now, startNext: false)
                }
            }
        }
        startNext(into: &outputs)
        return outputs
    }

    /// Submits an application request; `waiter` is resumed exactly once
    /// with its result (perhaps in the outputs returned here). The id names
    /// the request for `cancel`; nil once the driver has finished.
    public mutating func submit(
        _ waiter: Waiter, at now: Timestamp,
        _ request: (inout Consumer, Timestamp) -> ConsumerRequest
    ) -> Submission {
        guard !finished else { return Submission(id: nil, outputs: [.resume(waiter, .failure(.notConnected))]) }
        let request = request(&engine, now)
        waiters[request.id] = waiter
        return Submission(id: request.id, outputs: perform(request.actions, at: now))
    }

    /// A request as the driver took it: its id (nil once the driver has
    /// finished) and the outputs to perform now.
    public struct Submission {
        public var id: ConsumerRequestID?
        public var outputs: [Output]
    }

    /// The waiter of `id` gave up: the request ends with `.cancelled`.
    public mutating func cancel(_ id: ConsumerRequestID, at now: Timestamp) -> [Output] {
        guard waiters[id] != nil else { return [] }
        return perform(engine.cancel(id, at: now), at: now)
    }

    /// Ends the session the way an NC leaves: unsubscribes, fails pending requests.
    public mutating func stop(at now: Timestamp) -> [Output] {
        guard !finished else { return [] }
        newGeneration()
        return perform(engine.stop(at: now), at: now)
    }

    public mutating func tick(at now: Timestamp) -> [Output] {
        guard !finished else { return [] }
        return perform(engine.tick(at: now), at: now)
    }

    /// The host stops listening to the transport: the session ends as a link
    /// loss and every waiter is resumed; later inputs do nothing.
    public mutating func finish(at now: Timestamp) -> [Output] {
        guard !finished else { return [] }
        newGeneration()
        var outputs = perform(engine.linkDown(at: now), at: now, startNext: false)
        finished = true
        queue.removeAll()
        // The engine has ended every request it knew; nothing may be left
        // waiting even if it had not.
        for (_, waiter) in waiters.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            outputs.append(.resume(waiter, .failure(.sessionEnded)))
        }
        waiters.removeAll()
        return outputs
    }

    // MARK: - Internals

    mutating func newGeneration() {
        generation &+= 1
        queue.removeAll()
        // The operation in flight belongs to the ended session: its result
        // will be ignored, and the next session does not wait for it.
        inFlight = nil
    }

    mutating func perform(_ actions: [ConsumerAction], at now: Timestamp, startNext shouldStart: Bool = true) -> [Output] {
        var outputs: [Output] = []
        for action in actions {
            switch action {
            case .subscribe(let characteristic):
                enqueue(.subscribe(characteristic), token: nil)
            case .unsubscribe(let characteristic):
                enqueue(.unsubscribe(characteristic), token: nil)
            case .writeControlPoint(let bytes, let token):
                enqueue(.writeControlPoint(bytes), token: token)
            case .emit(.completed(let id, let result)):
                if let waiter = waiters.removeValue(forKey: id) { outputs.append(.resume(waiter, result)) }
            case .emit(let event):
                if let event = ConsumerClientEvent(event) { outputs.append(.event(event)) }
            }
        }
        if shouldStart { startNext(into: &outputs) }
        return outputs
    }

    mutating func enqueue(_ kind: Operation.Kind, token: WriteToken?) {
        serial &+= 1
        queue.append(Operation(kind: kind, token: token, generation: generation, serial: serial))
    }

    mutating func startNext(into outputs: inout [Output]) {
        guard inFlight == nil, !finished, !queue.isEmpty else { return }
        let next = queue.removeFirst()
        inFlight = next
        outputs.append(.startOperation(next))
    }
}
