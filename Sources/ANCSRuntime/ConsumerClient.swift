import ANCS

/// The Notification Consumer as an actor: a `Consumer` engine driven by a
/// `GATTClientTransport` and a clock.
///
/// ```swift
/// let client = ConsumerClient(transport: transport)
/// Task { await client.run() }
/// for await event in client.events {
///     if case .added(let notification) = event {
///         let attributes = try await client.fetchAttributes(
///             ConsumerConfiguration.displayAttributes, for: notification.uid)
///     }
/// }
/// ```
///
/// How it runs:
/// - Transport events go to the engine in arrival order; the actions it
///   returns are performed in order: events are yielded to `events`, ATT
///   operations are queued for one worker that issues them one at a time
///   (ATT allows one request in flight) and feeds each result back.
/// - A timer task sleeps on the clock until the engine's `nextDeadline` and
///   then calls `tick`; it is re-armed after every input.
/// - Every request ends exactly once. Cancelling the task that awaits one
///   ends it with `.cancelled`; the engine still consumes its response if
///   the NP sends it, so the next response is matched correctly.
/// - Results of ATT operations issued before the link went down (or the
///   session was stopped or unpublished) are dropped, so they cannot be
///   taken for answers in the next session.
public actor ConsumerClient {
    /// Everything the engine tells the application, in order, request
    /// completions included. Finishes when `run()` returns. One reader.
    public nonisolated let events: AsyncStream<ConsumerEvent>
    private let eventSink: AsyncStream<ConsumerEvent>.Continuation

    private let transport: any GATTClientTransport
    private let time: TimeSource
    private var engine: Consumer

    /// ATT operations waiting for the worker in `run()`.
    private let operations: AsyncStream<Operation>
    private let operationSink: AsyncStream<Operation>.Continuation
    /// Bumped whenever the engine's session is torn down: results of older
    /// operations belong to nothing.
    private var generation: UInt64 = 0

    private var requests: [ConsumerRequestID: RequestSlot] = [:]
    private var timer: Task<Void, Never>?
    private var timerDeadline: Timestamp?
    private var phase: RunPhase = .notStarted

    private enum RunPhase { case notStarted, running, stopping, finished }

    /// One request between submission and its end.
    private enum RequestSlot {
        /// Submitted; the caller has not suspended yet.
        case submitted
        case awaiting(CheckedContinuation<ConsumerResult, Never>)
        /// Ended before the caller suspended.
        case ended(ConsumerResult)
    }

    struct Operation: Sendable {
        enum Kind: Sendable {
            case subscribe(ANCSCharacteristic)
            case unsubscribe(ANCSCharacteristic)
            case write([UInt8], WriteToken)
        }
        var kind: Kind
        var generation: UInt64
    }

    /// - Parameters:
    ///   - clock: the source of time for request timeouts; tests pass a `ManualClock`.
    public init<C: Clock<Duration>>(
        transport: any GATTClientTransport,
        configuration: ConsumerConfiguration = .default,
        clock: C = ContinuousClock()
    ) {
        self.transport = transport
        self.time = TimeSource(clock)
        self.engine = Consumer(configuration: configuration)
        (events, eventSink) = AsyncStream.makeStream()
        (operations, operationSink) = AsyncStream.makeStream()
    }

    // MARK: - Snapshots

    /// The session's live notifications by UID (empty outside a session).
    public var notifications: [NotificationUID: ConsumerNotification] { engine.notifications }
    /// App attributes fetched in this session, by AppIdentifier.
    public var appAttributes: [String: AppAttributesResponse] { engine.appAttributes }
    public var isInSession: Bool { engine.isInSession }
    /// Requests not yet ended.
    public var pendingRequestCount: Int { engine.pendingRequestCount }
    /// An app's DisplayName, if fetched in this session.
    public func displayName(of appIdentifier: String) -> AttributeValue? { engine.displayName(of: appIdentifier) }

    // MARK: - Running

    /// Consumes the transport's events until its stream finishes, `stop()`
    /// has done its work, or the calling task is cancelled. Then any session
    /// ends (pending requests fail with `.sessionEnded`) and `events`
    /// finishes. Throws what ended the transport's stream, if it failed (the
    /// stack or its host process died). Runs once; later calls return at once.
    public func run() async throws {
        guard phase == .notStarted else { return }
        phase = .running
        let transport = self.transport
        let operations = self.operations
        var failure: (any Error)?
        await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask {
                do {
                    for try await event in transport.events {
                        await self.handle(event)
                    }
                    return nil
                } catch {
                    return error
                }
            }
            group.addTask {
                for await operation in operations {
                    guard await self.isCurrent(operation) else { continue }
                    let result: ATTResult
                    switch operation.kind {
                    case .subscribe(let characteristic): result = await transport.subscribe(characteristic)
                    case .unsubscribe(let characteristic): result = await transport.unsubscribe(characteristic)
                    case .write(let bytes, _): result = await transport.writeControlPoint(bytes)
                    }
                    await self.operationEnded(operation, result)
                }
                return nil
            }
            // Whichever ends first (the transport's stream, or the operation
            // queue after `stop`) ends the other.
            failure = await group.next() ?? nil
            group.cancelAll()
        }
        finishRun()
        if let failure { throw failure }
    }

    /// Ends the session the way an NC leaves: unsubscribes from Notification
    /// Source and Data Source, fails pending requests with `.sessionEnded`.
    /// `run()` returns once the unsubscriptions have been written (after any
    /// ATT request already in progress: cancel the task running `run()` to
    /// leave at once).
    public func stop() {
        guard phase == .running else { return }
        generation &+= 1
        apply(engine.stop(at: time.now()))
        phase = .stopping
        operationSink.finish()
    }

    // MARK: - Requests

    /// Get Notification Attributes for a notification of this session.
    public func fetchAttributes(_ attributes: [NotificationAttributeRequest], for uid: NotificationUID) async throws(ConsumerError) -> NotificationAttributesResponse {
        let response = try await request { engine, now in engine.fetchAttributes(attributes, for: uid, at: now) }
        guard case .notificationAttributes(let value) = response else { throw mismatched(.getNotificationAttributes) }
        return value
    }

    /// Get App Attributes; answered from the session's cache when it can be.
    public func fetchAppAttributes(_ appIdentifier: String, _ attributes: [AppAttributeID] = [.displayName]) async throws(ConsumerError) -> AppAttributesResponse {
        let response = try await request { engine, now in engine.fetchAppAttributes(appIdentifier, attributes, at: now) }
        guard case .appAttributes(let value) = response else { throw mismatched(.getAppAttributes) }
        return value
    }

    /// Perform Notification Action; returns when the NP accepted the write.
    public func performAction(_ action: ActionID, on uid: NotificationUID) async throws(ConsumerError) {
        let response = try await request { engine, now in engine.performAction(action, on: uid, at: now) }
        guard case .actionPerformed = response else { throw mismatched(.performNotificationAction) }
    }

    private func request(_ submit: (inout Consumer, Timestamp) -> (ConsumerRequestID, [ConsumerAction])) async throws(ConsumerError) -> ConsumerResponse {
        if Task.isCancelled { throw .cancelled }
        let (id, actions) = submit(&engine, time.now())
        requests[id] = .submitted
        apply(actions)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ConsumerResult, Never>) in
                suspend(id, continuation)
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
        switch result {
        case .success(let response): return response
        case .failure(let error): throw error
        }
    }

    private func suspend(_ id: ConsumerRequestID, _ continuation: CheckedContinuation<ConsumerResult, Never>) {
        switch requests[id] {
        case .submitted:
            requests[id] = .awaiting(continuation)
        case .ended(let result):
            requests[id] = nil
            continuation.resume(returning: result)
        case .awaiting, nil:
            // Not reachable: one suspension per submission. Never hang.
            assertionFailure("request \(id) suspended twice")
            continuation.resume(returning: .failure(.sessionEnded))
        }
    }

    /// Ends a request exactly once; completions of requests this actor did
    /// not submit, or already ended, are ignored.
    private func complete(_ id: ConsumerRequestID, _ result: ConsumerResult) {
        switch requests[id] {
        case .submitted:
            requests[id] = .ended(result)
        case .awaiting(let continuation):
            requests[id] = nil
            continuation.resume(returning: result)
        case .ended, nil:
            break
        }
    }

    private func cancel(_ id: ConsumerRequestID) {
        guard let slot = requests[id] else { return }
        if case .ended = slot { return }
        apply(engine.cancel(id, at: time.now()))
    }

    private func mismatched(_ expected: CommandID) -> ConsumerError {
        // The engine answers each command with its own kind of response; kept
        // as an error rather than a trap so a request still ends.
        .invalidResponse(DecodingError(.wrongCommandID(expected: expected, actual: expected), at: 0))
    }

    // MARK: - Engine I/O

    private func handle(_ event: GATTClientEvent) {
        let now = time.now()
        switch event {
        case .linkUp(let link):
            generation &+= 1
            apply(engine.linkUp(mtu: link.mtu, at: now))
        case .linkDown:
            generation &+= 1
            apply(engine.linkDown(at: now))
        case .notification(.notificationSource, let bytes):
            apply(engine.received(notificationSource: bytes, at: now))
        case .notification(.dataSource, let bytes):
            apply(engine.received(dataSource: bytes, at: now))
        case .notification(.controlPoint, _):
            break  // the Control Point does not notify
        case .serviceChanged(let published):
            if !published { generation &+= 1 }
            apply(engine.serviceChanged(published: published, at: now))
        case .mtuChanged(let mtu):
            engine.mtuChanged(mtu)
        }
    }

    private func isCurrent(_ operation: Operation) -> Bool { operation.generation == generation }

    private func operationEnded(_ operation: Operation, _ result: ATTResult) {
        guard operation.generation == generation else { return }
        switch operation.kind {
        case .subscribe(let characteristic):
            apply(engine.subscriptionCompleted(characteristic, result, at: time.now()))
        case .unsubscribe:
            break
        case .write(_, let token):
            apply(engine.writeCompleted(token, result, at: time.now()))
        }
    }

    /// Performs the engine's actions in order, then re-arms the timer.
    private func apply(_ actions: [ConsumerAction]) {
        for action in actions {
            switch action {
            case .subscribe(let characteristic):
                operationSink.yield(Operation(kind: .subscribe(characteristic), generation: generation))
            case .unsubscribe(let characteristic):
                operationSink.yield(Operation(kind: .unsubscribe(characteristic), generation: generation))
            case .writeControlPoint(let bytes, let token):
                operationSink.yield(Operation(kind: .write(bytes, token), generation: generation))
            case .emit(let event):
                eventSink.yield(event)
                if case .completed(let id, let result) = event { complete(id, result) }
            }
        }
        rearmTimer()
    }

    private func rearmTimer() {
        let deadline = engine.nextDeadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline, phase != .finished else { return }
        let time = self.time
        timer = Task { [weak self] in
            do {
                try await time.sleep(until: deadline)
            } catch {
                return  // re-armed or finished
            }
            await self?.timerFired(deadline)
        }
    }

    private func timerFired(_ deadline: Timestamp) {
        guard timerDeadline == deadline else { return }
        timer = nil
        timerDeadline = nil
        apply(engine.tick(time.now()))
    }

    private func finishRun() {
        phase = .finished
        generation &+= 1
        operationSink.finish()
        // The runtime no longer hears the link: end the session as a link loss.
        apply(engine.linkDown(at: time.now()))
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        // The engine has ended every request it knew; nothing may be left
        // waiting even if it had not.
        for (id, slot) in requests {
            switch slot {
            case .awaiting(let continuation):
                requests[id] = nil
                continuation.resume(returning: .failure(.sessionEnded))
            case .submitted:
                requests[id] = .ended(.failure(.sessionEnded))
            case .ended:
                break
            }
        }
        eventSink.finish()
    }
}

/// A clock reduced to what the runtime needs, measured from the moment the
/// runtime was created, so any `Clock<Duration>` fits without existentials.
struct TimeSource: Sendable {
    let now: @Sendable () -> Timestamp
    private let sleepUntil: @Sendable (Timestamp) async throws -> Void

    init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        now = { Timestamp(origin.duration(to: clock.now)) }
        sleepUntil = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.sinceOrigin), tolerance: nil) }
    }

    func sleep(until deadline: Timestamp) async throws { try await sleepUntil(deadline) }
}
