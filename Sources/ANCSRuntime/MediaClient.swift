import ANCS

// The runtime of the accessory's AMS and CTS clients: a transport seam of
// its own (the services are found and lost apart from ANCS), and an actor
// that drives both engines over it, as `ConsumerClient` drives the consumer.

/// What a transport of AMS and CTS reports, in the order it happened.
public enum MediaClientEvent: Hashable, Sendable {
    /// Connected and encrypted; which of the two services discovery found.
    case linkUp(LinkInfo, ams: Bool, cts: Bool)
    /// The link is gone. Every operation in progress has returned or will
    /// return `.transportFailure`.
    case linkDown
    /// Service Changed: the services as discovery now finds them.
    case servicesChanged(ams: Bool, cts: Bool)
    /// A GATT notification of an AMS or CTS characteristic.
    case notification(MediaCharacteristic, [UInt8])
}

/// The accessory's view of a GATT client for AMS and CTS, one link at a time.
///
/// The rules of `GATTClientTransport` hold: `mediaEvents` is iterated by
/// one task, once, in arrival order, finishing when the transport is closed
/// and throwing when the stack dies; the runtime issues one operation at a
/// time; each returns exactly once, with `.transportFailure` on link loss
/// or cancellation. A read is a long read: the whole value.
public protocol MediaClientTransport: Sendable {
    var mediaEvents: AsyncThrowingStream<MediaClientEvent, any Error> { get }
    /// Enables notifications (writes the CCCD).
    func subscribe(_ characteristic: MediaCharacteristic) async -> ATTResult
    /// Disables notifications.
    func unsubscribe(_ characteristic: MediaCharacteristic) async -> ATTResult
    /// Write with response.
    func write(_ characteristic: AMSCharacteristic, _ value: [UInt8]) async -> ATTResult
    /// Reads the whole value.
    func read(_ characteristic: MediaCharacteristic) async -> ATTReadResult
}

/// What `MediaClient` tells the application.
public enum MediaClientOutput: Hashable, Sendable {
    case ams(AMSClientEvent)
    case cts(CTSClientEvent)
}

/// The AMS and CTS clients as an actor over a `MediaClientTransport` and a
/// clock: now playing, remote commands, the phone's clock and zone.
///
/// How it runs (as `ConsumerClient`):
/// - Transport events go to the engines in arrival order; their actions are
///   performed in order: events to `events`, ATT operations to one worker
///   that issues them one at a time (AMS's and CTS's alike: one ATT bearer)
///   and feeds each result back.
/// - A timer sleeps until the engines' earliest deadline, then ticks them.
/// - Every command ends exactly once, with its result returned to its
///   caller: the engine's timeout, the session's end, or `run()` ending see
///   to it.
/// - An operation of a session that ended before the worker reached it is
///   not issued (a command pressed before the link dropped must not reach
///   the phone on the next link); its engine hears `.transportFailure`.
/// - An answer and the link's end that come together reach the engines in
///   the transport's order: a link-down waits until the operation on the
///   air has been given its result, which the transport's contract makes
///   prompt (at most 2 s, `LinkDownSettling.limit`, for a transport that breaks it). Else
///   the two tasks raced to the actor, and a command the phone performed
///   could end `.sessionEnded`. A transport failure that the link's end
///   caused is given after it: such commands end `.sessionEnded`.
///   Results of operations of an ended session are ignored by the engines
///   (each operation has its own token).
public actor MediaClient {
    /// Everything the clients tell, in order; finishes when `run()` returns.
    /// Bounded: the newest `eventBufferLimit` kept.
    public nonisolated let events: AsyncStream<MediaClientOutput>
    private let eventSink: AsyncStream<MediaClientOutput>.Continuation
    private let transport: any MediaClientTransport
    private let time: TimeSource
    private let executor: (any TaskExecutor)?
    private var ams: AMSClient
    private var cts: CTSClient
    private var waiters: [AMSRequestID: CheckedContinuation<AMSClientError?, Never>] = [:]
    private let operations: AsyncStream<Queued>
    private let operationSink: AsyncStream<Queued>.Continuation
    /// Moves on with each link up or down, and (AMS's) with AMS found or lost:
    /// an operation queued under an older one is not issued.
    private var linkGeneration: UInt64 = 0
    private var amsGeneration: UInt64 = 0
    private var timer: Task<Void, Never>?
    private var timerDeadline: Timestamp?
    private var phase: RunPhase = .notStarted
    /// The worker has issued an operation whose result the engines have not had yet.
    private var operationOnAir = false
    /// A link-down waiting for that result.
    private var settling = LinkDownSettling<(Operation, OperationResult)>()
    /// The link as the transport last reported it.
    public private(set) var link: LinkInfo?
    private var amsPublished = false

    private enum RunPhase { case notStarted, running, stopping, finished }

    enum Operation: Sendable {
        case ams(AMSClientAction)
        case cts(CTSClientAction)
    }

    struct Queued: Sendable {
        var operation: Operation
        var link: UInt64
        var ams: UInt64
    }

    public init<C: Clock<Duration>>(
        transport: any MediaClientTransport,
        ams: AMSClientConfiguration = AMSClientConfiguration(),
        clock: C = ContinuousClock(),
        executor: (any TaskExecutor)? = nil,
        eventBufferLimit: Int = 1024
    ) {
        self.transport = transport
        self.ams = AMSClient(configuration: ams)
        cts = CTSClient(requestTimeout: ams.requestTimeout)
        time = TimeSource(clock)
        self.executor = executor
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(max(1, eventBufferLimit)))
        (operations, operationSink) = AsyncStream.makeStream()
    }

    // MARK: - Snapshots

    /// What is playing, as the phone last told it.
    public var nowPlaying: NowPlaying { ams.nowPlaying }
    /// The seconds into the track now (the elapsed time told, run at its rate).
    public var elapsed: Double? { ams.nowPlaying.elapsed(at: time.now()) }
    /// The commands the player supports now; nil until the phone says.
    public var supportedCommands: [RemoteCommandID]? { ams.supportedCommands }
    /// AMS is subscribed and registered.
    public var isReady: Bool { ams.isReady }
    /// The phone's local time now (its last told time, run since).
    public var phoneTime: CurrentTime? { cts.phoneTime(at: time.now()) }
    /// The phone's time zone.
    public var localTimeInformation: LocalTimeInformation? { cts.localTimeInformation }

    // MARK: - Commands

    /// Asks the player to perform `command`; returns nil when the phone
    /// accepted it, else why not (`.unsupported` without writing anything).
    public func perform(_ command: RemoteCommandID) async -> AMSClientError? {
        await withCheckedContinuation { continuation in
            let request = ams.perform(command, at: time.now())
            waiters[request.id] = continuation
            perform(request.actions.map { .ams($0) })
        }
    }

    /// Leaves the phone's AMS and CTS as an accessory should: their
    /// notifications turned off (after any operation already on the air),
    /// commands waiting ended with `.sessionEnded`; `run()` then returns.
    /// Cancel the task running `run()` to leave at once.
    public func stop() {
        guard phase == .running else { return }
        let now = time.now()
        perform(ams.stop(at: now).map { .ams($0) } + cts.stop(at: now).map { .cts($0) })
        phase = .stopping
        operationSink.finish()  // what was queued is still issued, then the worker ends
    }

    // MARK: - Running

    /// Consumes the transport's events until its stream finishes, `stop()`
    /// has done its work, or the calling task is cancelled; then the sessions end (commands waiting
    /// end with `.sessionEnded`) and `events` finishes. Throws what ended the
    /// transport's stream, if it failed. Runs once.
    public func run() async throws {
        guard phase == .notStarted else { return }
        phase = .running
        let transport = self.transport
        let operations = self.operations
        let failure = await runSideBySide {
            for try await event in transport.mediaEvents {
                if case .linkDown = event { await self.settle() }
                await self.handle(event)
            }
        } worker: {
            for await queued in operations {
                let operation = queued.operation
                guard await self.isCurrent(queued) else {
                    await self.notIssued(operation)
                    continue
                }
                let result: OperationResult
                switch operation {
                case .ams(.subscribe(let characteristic)): result = .att(await transport.subscribe(.ams(characteristic)))
                case .ams(.unsubscribe(let characteristic)): result = .att(await transport.unsubscribe(.ams(characteristic)))
                case .ams(.write(let characteristic, let bytes, _)): result = .att(await transport.write(characteristic, bytes))
                case .ams(.read(let characteristic, _)): result = .read(await transport.read(.ams(characteristic)))
                case .cts(.subscribe(let characteristic)): result = .att(await transport.subscribe(.cts(characteristic)))
                case .cts(.unsubscribe(let characteristic)): result = .att(await transport.unsubscribe(.cts(characteristic)))
                case .cts(.read(let characteristic, _)): result = .read(await transport.read(.cts(characteristic)))
                case .ams(.emit), .cts(.emit): continue  // not operations: told where they are made
                }
                await self.operationEnded(operation, result)
            }
        }
        finishRun()
        if let failure { throw failure }
    }

    // MARK: - Inside

    private func isCurrent(_ queued: Queued) -> Bool {
        guard queued.link == linkGeneration else { return false }
        if case .ams = queued.operation, queued.ams != amsGeneration { return false }
        operationOnAir = true
        return true
    }

    /// Returns once the operation on the air (if any) has been given its
    /// result, or after `LinkDownSettling.limit`.
    private func settle() async {
        guard operationOnAir else { return }
        let bound = LinkDownSettling<Never>.bound(time: time, executor: executor) { [weak self] in await self?.settled() }
        await withCheckedContinuation { settling.waiters.append($0) }
        bound.cancel()
    }

    private func settled() {
        operationOnAir = false
        settling.release()
    }

    private func handle(_ event: MediaClientEvent) {
        let now = time.now()
        var actions: [Operation] = []
        switch event {
        case .linkUp, .linkDown: linkGeneration &+= 1
        case .servicesChanged(let hasAMS, _) where hasAMS != amsPublished: amsGeneration &+= 1
        default: break
        }
        switch event {
        case .linkUp(let info, let hasAMS, let hasCTS):
            link = info
            amsPublished = hasAMS
            actions += ams.serviceChanged(published: hasAMS, at: now).map { .ams($0) }
            actions += ams.linkUp(at: now).map { .ams($0) }
            if hasCTS { actions += cts.linkUp(at: now).map { .cts($0) } }
        case .linkDown:
            link = nil
            actions += ams.linkDown(at: now).map { .ams($0) }
            actions += cts.linkDown(at: now).map { .cts($0) }
        case .servicesChanged(let hasAMS, let hasCTS):
            amsPublished = hasAMS
            actions += ams.serviceChanged(published: hasAMS, at: now).map { .ams($0) }
            if !hasCTS { actions += cts.linkDown(at: now).map { .cts($0) } }
            else if cts.currentTime == nil, link != nil { actions += cts.linkUp(at: now).map { .cts($0) } }
        case .notification(.ams(.remoteCommand), let bytes):
            actions += ams.received(remoteCommand: bytes, at: now).map { .ams($0) }
        case .notification(.ams(.entityUpdate), let bytes):
            actions += ams.received(entityUpdate: bytes, at: now).map { .ams($0) }
        case .notification(.cts(.currentTime), let bytes):
            actions += cts.received(currentTime: bytes, at: now).map { .cts($0) }
        case .notification:
            break  // Entity Attribute and Local Time Information do not notify
        }
        perform(actions)
        if let (operation, result) = settling.endedWithTheLink {
            settling.endedWithTheLink = nil
            operationEnded(operation, result)
        }
    }

    enum OperationResult: Hashable, Sendable {
        case att(ATTResult)
        case read(ATTReadResult)
    }

    /// An operation not issued, its session gone: its engine hears a transport failure.
    private func notIssued(_ operation: Operation) {
        switch operation {
        case .ams(.read), .cts(.read): operationEnded(operation, .read(.transportFailure))
        default: operationEnded(operation, .att(.transportFailure))
        }
    }

    /// An operation's result, given to the engine that asked for it.
    private func operationEnded(_ operation: Operation, _ result: OperationResult) {
        if settling.isWaiting, result == .att(.transportFailure) || result == .read(.transportFailure) {
            // The link's end made this failure: the engines hear the end first
            // (commands end `.sessionEnded`), then this (`handle`).
            settling.endedWithTheLink = (operation, result)
            settled()
            return
        }
        defer { settled() }
        let now = time.now()
        switch (operation, result) {
        case (.ams(.subscribe(let characteristic)), .att(let result)):
            perform(ams.subscriptionCompleted(characteristic, result, at: now).map { .ams($0) })
        case (.ams(.write(_, _, let token)), .att(let result)):
            perform(ams.writeCompleted(token, result, at: now).map { .ams($0) })
        case (.ams(.read(_, let token)), .read(let result)):
            perform(ams.readCompleted(token, result, at: now).map { .ams($0) })
        case (.cts(.read(_, let token)), .read(let result)):
            perform(cts.readCompleted(token, result, at: now).map { .cts($0) })
        default:
            break  // unsubscriptions and CTS's subscription: no answer needed
        }
    }

    private func perform(_ actions: [Operation]) {
        for action in actions {
            switch action {
            case .ams(.emit(let event)):
                if case .commandCompleted(let id, let error) = event { waiters.removeValue(forKey: id)?.resume(returning: error) }
                eventSink.yield(.ams(event))
            case .cts(.emit(let event)):
                eventSink.yield(.cts(event))
            default:
                if phase == .running { operationSink.yield(Queued(operation: action, link: linkGeneration, ams: amsGeneration)) }
            }
        }
        rearmTimer()
    }

    private var nextDeadline: Timestamp? {
        switch (ams.nextDeadline, cts.nextDeadline) {
        case (let a?, let c?): min(a, c)
        case (let a, let c): a ?? c
        }
    }

    private func rearmTimer() {
        let deadline = phase == .finished ? nil : nextDeadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline else { return }
        let time = self.time
        timer = Task(executorPreference: executor) { [weak self] in
            do { try await time.sleep(until: deadline) } catch { return }
            await self?.timerFired(deadline)
        }
    }

    private func timerFired(_ deadline: Timestamp) {
        guard timerDeadline == deadline else { return }
        timer = nil
        timerDeadline = nil
        let now = time.now()
        perform(ams.tick(at: now).map { .ams($0) } + cts.tick(at: now).map { .cts($0) })
    }

    private func finishRun() {
        operationSink.finish()
        let now = time.now()
        phase = .finished
        // The runtime no longer hears the link: the sessions end as on a link loss.
        perform(ams.linkDown(at: now).map { .ams($0) } + cts.linkDown(at: now).map { .cts($0) })
        for (_, waiter) in waiters { waiter.resume(returning: .sessionEnded) }
        waiters = [:]
        link = nil
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        eventSink.finish()
    }
}
