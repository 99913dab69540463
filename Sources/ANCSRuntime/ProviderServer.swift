import ANCS

/// The Notification Provider as an actor: a `Provider` engine (the iPhone's
/// notification center) served to consumers through a `GATTServerTransport`.
///
/// The application changes the notification center with `add`, `modify`
/// and `remove`; consumers' connections, subscriptions and Control Point
/// writes come from the transport. What the engine answers is performed in
/// order by one worker: a write's response goes out before the Data Source
/// or Notification Source notifications it causes, and notifications keep
/// the order the engine produced them in.
public actor ProviderServer {
    /// Everything the engine tells the application, in order. Finishes when
    /// `run()` returns. One reader. Bounded: at most `eventBufferLimit`
    /// events wait for a reader; beyond that the oldest are dropped and
    /// counted in `droppedEventCount` (a phone that nobody watches keeps
    /// serving, in bounded memory).
    public nonisolated let events: AsyncStream<ProviderEvent>
    /// Events not yet read that `events` holds at most.
    public nonisolated let eventBufferLimit: Int
    /// Events dropped because the application did not read `events` in time.
    public private(set) var droppedEventCount = 0
    private let eventSink: AsyncStream<ProviderEvent>.Continuation

    private let transport: any GATTServerTransport
    private var driver: ProviderDriver
    private var engine: Provider { driver.engine }

    private let outputs: AsyncStream<Output>
    private let outputSink: AsyncStream<Output>.Continuation
    private var started = false

    enum Output: Sendable {
        /// A notification for the connection's session `epoch`.
        case notify(ConnectionID, ANCSCharacteristic, [UInt8], epoch: UInt64)
        case reply(ATTResponder, ATTResult)
    }
    /// Each connection's current session, moved on when it connects and
    /// when it disconnects: output queued for a session that ended is
    /// dropped, never sent to a later connection that reuses its
    /// `ConnectionID` (BlueZ names a connection by its device, and
    /// controllers reuse handles).
    private var epochs: [ConnectionID: UInt64] = [:]
    private var nextEpoch: UInt64 = 0

    public init(transport: any GATTServerTransport, configuration: ProviderConfiguration = .default,
                eventBufferLimit: Int = ConsumerClient.defaultEventBufferLimit) {
        self.transport = transport
        self.eventBufferLimit = max(1, eventBufferLimit)
        driver = ProviderDriver(configuration: configuration)
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(max(1, eventBufferLimit)))
        (outputs, outputSink) = AsyncStream.makeStream()
    }

    // MARK: - Snapshots

    /// The active iOS notifications and the known apps.
    public var notificationCenter: ProviderNotificationCenter { engine.notificationCenter }
    /// The connected consumers, in the order they connected.
    public var connections: [ConnectionID] { engine.connections }

    public func isSubscribed(_ connection: ConnectionID, to characteristic: ANCSCharacteristic) -> Bool {
        engine.isSubscribed(connection, to: characteristic)
    }

    // MARK: - Running

    /// Serves the transport's events until its stream finishes (then what
    /// is queued is still sent) or the calling task is cancelled; then
    /// `events` finishes. Throws what ended the transport's stream, if it
    /// failed. Runs once; later calls return at once.
    public func run() async throws {
        guard !started else { return }
        started = true
        let transport = self.transport
        let outputs = self.outputs
        let failure = await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask {
                var failure: (any Error)?
                do {
                    for try await event in transport.events {
                        await self.handle(event)
                    }
                } catch {
                    failure = error
                }
                await self.transportEnded()
                return failure
            }
            group.addTask {
                for await output in outputs {
                    switch output {
                    case .notify(let connection, let characteristic, let value, let epoch):
                        // A notification for a connection that is gone is
                        // dropped, as on the air: checked before each one,
                        // since a blocked `notify` lets the link drop and
                        // come back under the same ID meanwhile.
                        guard await self.isCurrent(connection, epoch) else { continue }
                        try? await transport.notify(connection, characteristic, value)
                    case .reply(let responder, let result):
                        responder(result)
                    }
                }
                return nil
            }
            var failure: (any Error)?
            for await result in group where failure == nil { failure = result }
            return failure
        }
        outputSink.finish()
        eventSink.finish()
        if let failure { throw failure }
    }

    // MARK: - The notification center

    /// Registers an app's DisplayName, answered to Get App Attributes.
    public func registerApp(identifier: String, displayName: String) {
        driver.registerApp(identifier: identifier, displayName: displayName)
    }

    /// Adds an iOS notification and announces it to every consumer in a session.
    @discardableResult
    public func add(_ notification: ProviderNotification) throws(ProviderError) -> NotificationUID {
        let added = try driver.add(notification)
        perform(added.outputs)
        return added.uid
    }

    /// Replaces a notification's content and announces it (Modified).
    public func modify(_ uid: NotificationUID, to notification: ProviderNotification) throws(ProviderError) {
        perform(try driver.modify(uid, to: notification))
    }

    /// Removes a notification and announces it (Removed).
    public func remove(_ uid: NotificationUID) throws(ProviderError) {
        perform(try driver.remove(uid))
    }

    // MARK: - Faults of real iPhones (for testing accessories)

    /// "Share System Notifications" off (Control Point writes answered 0x03,
    /// no Notification Source event) or on again (the subscribed consumers
    /// are announced every notification, PreExisting).
    public func setSharing(_ sharing: Bool) {
        perform(driver.setSharing(sharing))
    }

    /// Notification Source goes quiet while the Control Point still answers (or speaks again).
    public func setNotificationSourceQuiet(_ quiet: Bool) {
        driver.setNotificationSourceQuiet(quiet)
    }

    /// Forgets every consumer's subscriptions without telling it (iOS resetting its GATT state).
    public func forgetSubscriptions() {
        perform(driver.forgetSubscriptions())
    }

    /// One subscription of every consumer lost in silence, the other kept
    /// (`Provider.loseSubscription`): Notification Source announces nothing
    /// more, or Data Source delivers no response while the Control Point
    /// still takes writes.
    public func loseSubscription(_ characteristic: ANCSCharacteristic) {
        perform(driver.loseSubscription(characteristic))
    }

    /// Whether sharing is on and Notification Source speaks.
    public var sharing: Bool { engine.sharing }
    public var notificationSourceQuiet: Bool { engine.notificationSourceQuiet }

    // MARK: - Driver I/O

    private func handle(_ event: GATTServerEvent) {
        switch event {
        case .linkUp(let connection, _), .linkDown(let connection):
            nextEpoch &+= 1
            epochs[connection] = nextEpoch
        default:
            break
        }
        perform(driver.handle(event))
    }

    private func isCurrent(_ connection: ConnectionID, _ epoch: UInt64) -> Bool {
        epochs[connection] == epoch
    }

    private func transportEnded() {
        outputSink.finish()
    }

    /// Performs the driver's outputs in order: replies and notifications
    /// through the one worker, events at once.
    private func perform(_ outputs: [ProviderDriver.Output]) {
        for output in outputs {
            switch output {
            case .notify(let connection, let characteristic, let value):
                outputSink.yield(.notify(connection, characteristic, value, epoch: epochs[connection] ?? 0))
            case .reply(let responder, let result): outputSink.yield(.reply(responder, result))
            case .event(let event):
                if case .dropped = eventSink.yield(event) { droppedEventCount += 1 }
            }
        }
    }
}
