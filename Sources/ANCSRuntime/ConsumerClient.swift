import ANCS
import Synchronization

/// The Notification Consumer as an actor: a `ConsumerDriver` (the `Consumer`
/// engine and its runtime bookkeeping) over a `GATTClientTransport` and a clock.
///
/// ```swift
/// try await ConsumerClient.withRunning(transport: transport, configuration: .displaying(.standard)) { client in
///     for await event in client.events {
///         if case .ready(let shown) = event { print(shown.appLabel, shown.title ?? "") }
///     }
/// }
/// ```
///
/// How it runs:
/// - Transport events go to the driver in arrival order; the outputs it
///   returns are performed in order: events are yielded to `events`, ATT
///   operations go to one worker that issues them one at a time and feeds
///   each result back, requests' waiters are resumed.
/// - A timer task sleeps on the clock until the driver's deadline and then
///   ticks it; it is re-armed after every input.
/// - Every request ends exactly once, with its result returned to its
///   caller (never through `events`). Cancelling the task that awaits one
///   ends it with `.cancelled`; the engine still consumes its response if
///   the NP sends it, so the next response is matched correctly.
/// - Results of ATT operations issued in an earlier session are dropped.
/// - An answer and the link's end that come together reach the driver in
///   the transport's order: a link-down waits until the operation on the
///   air has been given its result (prompt by the transport's contract; at
///   most 2 s, `LinkDownSettling.limit`). A transport failure the link's end caused is
///   given after it, so its request ends `.sessionEnded`. Without this the
///   two tasks raced to the actor, and an action the phone performed could
///   end `.sessionEnded`.
/// - The client's own tasks (the timer, cancellations) prefer `executor`
///   when one is given; a simulation passes its own, so a whole run is
///   deterministic.
public actor ConsumerClient {
    /// Everything the client tells the application, in order. Finishes when
    /// `run()` returns. One reader.
    ///
    /// Bounded: at most `eventBufferLimit` events wait for a reader. An
    /// application that stops reading loses the oldest ones beyond that
    /// (counted in `droppedEventCount`), never its memory; the session's
    /// model (`notifications`) stays complete either way.
    public nonisolated let events: AsyncStream<ConsumerClientEvent>
    /// Events not yet read that `events` holds at most.
    public nonisolated let eventBufferLimit: Int
    /// Events dropped because the application did not read `events` in time.
    public private(set) var droppedEventCount = 0
    /// A bound for a display of a phone full of notifications (about 10
    /// events each), a few megabytes at most.
    public static let defaultEventBufferLimit = 8192
    private let eventSink: AsyncStream<ConsumerClientEvent>.Continuation

    private let transport: any GATTClientTransport
    private let time: TimeSource
    private let executor: (any TaskExecutor)?
    private var driver: ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>

    private let operations: AsyncStream<ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>.Operation>
    private let operationSink: AsyncStream<ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>.Operation>.Continuation

    private var timer: Task<Void, Never>?
    private var timerDeadline: Timestamp?
    private var phase: RunPhase = .notStarted
    /// The link as the transport last reported it.
    public private(set) var link: LinkInfo?

    private enum RunPhase { case notStarted, running, stopping, finished }
    /// A link-down waiting for the result of the operation on the air.
    private var settling = LinkDownSettling<(ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>.Operation, ATTResult)>()

    /// - Parameters:
    ///   - configuration: the engine's; its `display` policy fetches what
    ///     each notification needs to be shown and tells `.ready`
    ///     (`.displaying(.standard)`); without one, fetching is left to the
    ///     application (lazy).
    ///   - clock: the source of time for request timeouts; tests pass a `ManualClock`.
    ///   - executor: the executor the client's own tasks prefer (nil: the default).
    public init<C: Clock<Duration>>(
        transport: any GATTClientTransport,
        configuration: ConsumerConfiguration = .default,
        clock: C = ContinuousClock(),
        executor: (any TaskExecutor)? = nil,
        eventBufferLimit: Int = ConsumerClient.defaultEventBufferLimit
    ) {
        self.transport = transport
        self.eventBufferLimit = max(1, eventBufferLimit)
        self.time = TimeSource(clock)
        self.executor = executor
        self.driver = ConsumerDriver(configuration: configuration)
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(max(1, eventBufferLimit)))
        (operations, operationSink) = AsyncStream.makeStream()
    }

    /// Runs a client while `body` runs: `body` gets the running client; when
    /// it returns, the client stops (unsubscribes) and its run ends. If the
    /// transport ends first, `body` is cancelled; if the transport failed,
    /// its error is thrown.
    public static func withRunning<C: Clock<Duration>, R: Sendable>(
        transport: any GATTClientTransport,
        configuration: ConsumerConfiguration = .default,
        clock: C = ContinuousClock(),
        executor: (any TaskExecutor)? = nil,
        _ body: @escaping @Sendable (ConsumerClient) async throws -> R
    ) async throws -> R {
        let client = ConsumerClient(transport: transport, configuration: configuration, clock: clock, executor: executor)
        return try await withThrowingTaskGroup(of: RunningPart<R>.self) { group in
            group.addTask {
                try await client.run()
                return .run
            }
            group.addTask { .body(try await body(client)) }
            var result: R?
            while let finished = try await group.next() {
                switch finished {
                case .body(let value):
                    result = value
                    await client.stop()
                case .run:
                    if result == nil { group.cancelAll() }
                }
            }
            guard let result else { throw CancellationError() }
            return result
        }
    }

    // MARK: - Snapshots

    /// The session's live notifications by UID (empty outside a session).
    public var notifications: [NotificationUID: ConsumerNotification] { driver.engine.notifications }
    /// One live notification of the session.
    public func notification(_ uid: NotificationUID) -> ConsumerNotification? { driver.engine.notification(uid) }
    /// App attributes fetched in this session, by AppIdentifier.
    public var appAttributes: [String: AppAttributesResponse] { driver.engine.appAttributes }
    public var isInSession: Bool { driver.engine.isInSession }
    /// Whether notifications reach the accessory (told as `.health(_)` on each change).
    public var health: ConsumerHealth { driver.engine.health }
    /// Requests not yet ended.
    public var pendingRequestCount: Int { driver.engine.pendingRequestCount }
    /// An app's DisplayName, if fetched in this session.
    public func displayName(of appIdentifier: String) -> AttributeValue? { driver.engine.displayName(of: appIdentifier) }

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
        // Whichever ends first (the transport's stream, or the operation
        // queue after `stop`) ends the other.
        let failure = await runSideBySide {
            for try await event in transport.events {
                if case .linkDown = event { await self.settle() }
                await self.handle(event)
            }
        } worker: {
            for await operation in operations {
                let result: ATTResult
                switch operation.kind {
                case .subscribe(let characteristic): result = await transport.subscribe(characteristic)
                case .unsubscribe(let characteristic): result = await transport.unsubscribe(characteristic)
                case .writeControlPoint(let bytes): result = await transport.writeControlPoint(bytes)
                }
                await self.operationEnded(operation, result)
            }
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
        perform(driver.stop(at: time.now()))
        phase = .stopping
        if driver.operationInFlight == nil { operationSink.finish() }
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

    /// Tells the request its caller gave up, from any thread, at most once.
    private final class Cancellation: Sendable {
        struct State { var id: ConsumerRequestID?; var cancelled = false }
        let state = Mutex(State())
    }

    private func request(_ submit: @escaping (inout Consumer, Timestamp) -> ConsumerRequest) async throws(ConsumerError) -> ConsumerResponse {
        if Task.isCancelled { throw .cancelled }
        let cancellation = Cancellation()
        let executor = self.executor
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ConsumerResult, Never>) in
                let submission = driver.submit(continuation, at: time.now(), submit)
                let id = submission.id
                let cancelledEarly = cancellation.state.withLock { state in
                    state.id = id
                    return state.cancelled
                }
                perform(submission.outputs)
                if cancelledEarly, let id { perform(driver.cancel(id, at: time.now())) }
            }
        } onCancel: {
            let id = cancellation.state.withLock { state -> ConsumerRequestID? in
                state.cancelled = true
                return state.id
            }
            if let id { Task(executorPreference: executor) { await self.cancel(id) } }
        }
        switch result {
        case .success(let response): return response
        case .failure(let error): throw error
        }
    }

    private func cancel(_ id: ConsumerRequestID) {
        perform(driver.cancel(id, at: time.now()))
    }

    private func mismatched(_ expected: CommandID) -> ConsumerError {
        // The engine answers each command with its own kind of response; kept
        // as an error rather than a trap so a request still ends.
        .invalidResponse(DecodingError(.wrongCommandID(expected: expected, actual: expected), at: 0))
    }

    // MARK: - Driver I/O

    /// Returns once the operation on the air (if any) has been given its
    /// result, or after `LinkDownSettling.limit`: an answer and the link's
    /// end that come together reach the driver in the transport's order (two
    /// tasks would race to the actor, and an action the phone performed
    /// could end `.sessionEnded`).
    private func settle() async {
        guard driver.operationInFlight != nil else { return }
        let bound = LinkDownSettling<Never>.bound(time: time, executor: executor) { [weak self] in await self?.settled() }
        await withCheckedContinuation { settling.waiters.append($0) }
        bound.cancel()
    }

    private func settled() { settling.release() }

    private func handle(_ event: GATTClientEvent) {
        switch event {
        case .linkUp(let info): link = info
        case .linkDown: link = nil
        case .mtuChanged(let mtu): link?.mtu = mtu
        default: break
        }
        perform(driver.handle(event, at: time.now()))
        if let (operation, result) = settling.endedWithTheLink {
            settling.endedWithTheLink = nil
            operationEnded(operation, result)
        }
    }

    private func operationEnded(_ operation: ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>.Operation, _ result: ATTResult) {
        if settling.isWaiting && result == .transportFailure {
            // The link's end made this failure: the driver hears the end first
            // (requests end `.sessionEnded`), then this (`handle`).
            settling.endedWithTheLink = (operation, result)
            settled()
            return
        }
        defer { settled() }
        perform(driver.operationEnded(operation, result, at: time.now()))
        // After stop(): the run ends once the unsubscriptions are written.
        if phase == .stopping && driver.operationInFlight == nil { operationSink.finish() }
    }

    /// Performs the driver's outputs in order, then re-arms the timer.
    private func perform(_ outputs: [ConsumerDriver<CheckedContinuation<ConsumerResult, Never>>.Output]) {
        for output in outputs {
            switch output {
            case .event(let event): tell(event)
            case .startOperation(let operation): operationSink.yield(operation)
            case .resume(let continuation, let result): continuation.resume(returning: result)
            }
        }
        rearmTimer()
    }

    private func rearmTimer() {
        let deadline = phase == .finished ? nil : driver.nextDeadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline else { return }
        let time = self.time
        timer = Task(executorPreference: executor) { [weak self] in
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
        perform(driver.tick(at: time.now()))
    }

    private func finishRun() {
        operationSink.finish()
        // The runtime no longer hears the link: end the session as a link loss.
        perform(driver.finish(at: time.now()))
        phase = .finished
        link = nil
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        eventSink.finish()
    }

    /// Yields one event; one the bounded buffer has no room for drops the oldest.
    private func tell(_ event: ConsumerClientEvent) {
        if case .dropped = eventSink.yield(event) { droppedEventCount += 1 }
    }
}

/// Which part of `ConsumerClient.withRunning` ended.
private enum RunningPart<R: Sendable>: Sendable { case run, body(R) }

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
