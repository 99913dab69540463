import ANCS

/// What a GATT server publishing AMS and CTS tells the phone's side, in order.
public enum MediaServerEvent: Sendable {
    /// An accessory connected (and the link is encrypted).
    case linkUp(ConnectionID, LinkInfo)
    case linkDown(ConnectionID)
    case mtuChanged(ConnectionID, Int)
    /// The accessory wrote a CCCD of an AMS or CTS characteristic; the stack
    /// has already answered that write.
    case subscriptionChanged(ConnectionID, MediaCharacteristic, enabled: Bool)
    /// A write with response to an AMS characteristic, answered through `reply` (once).
    case write(ConnectionID, AMSCharacteristic, [UInt8], reply: ATTResponder)
    /// A read of an AMS or CTS characteristic (the whole value: the stack
    /// serves a long read's blobs from it), answered through `reply` (once).
    case read(ConnectionID, MediaCharacteristic, reply: ATTReadResponder)
}

/// The phone's view of a GATT server publishing AMS and CTS. The rules of
/// `GATTServerTransport` hold: `mediaServerEvents` is iterated by one task,
/// once; every write and read is answered; notifications go out in call order.
public protocol MediaServerTransport: Sendable {
    var mediaServerEvents: AsyncThrowingStream<MediaServerEvent, any Error> { get }
    /// Sends one GATT notification (a value of at most MTU − 3 bytes).
    func notify(_ connection: ConnectionID, _ characteristic: MediaCharacteristic, _ value: [UInt8]) async throws(TransportError)
}

/// Answers one ATT read request, once: the first call sends the response,
/// later calls do nothing.
public struct ATTReadResponder: Sendable {
    private let once: ATTOnce<ATTReadResult>

    public init(_ respond: @escaping @Sendable (ATTReadResult) -> Void) { once = ATTOnce(respond) }

    public func callAsFunction(_ result: ATTReadResult) { once(result) }
}

/// An iPhone's AMS and CTS as an actor over a `MediaServerTransport`: a
/// media player (`AMSServer`) and a running clock with a zone (`CTSServer`).
/// Writes and reads are answered by the engines; what changes (a scenario's
/// step, a command) is notified to each accessory that registered for it,
/// in order, cut to its MTU.
public actor MediaServer {
    /// What the accessories did: commands, registrations, refusals.
    /// Bounded: the newest `eventBufferLimit` kept. Finishes when `run()` returns.
    public nonisolated let events: AsyncStream<AMSServerEvent>
    private let eventSink: AsyncStream<AMSServerEvent>.Continuation
    private let transport: any MediaServerTransport
    private let time: TimeSource
    private var ams: AMSServer
    private var cts: CTSServer
    private let outgoing: AsyncStream<(ConnectionID, MediaCharacteristic, [UInt8])>
    private let outgoingSink: AsyncStream<(ConnectionID, MediaCharacteristic, [UInt8])>.Continuation
    private var started = false

    public init<C: Clock<Duration>>(transport: any MediaServerTransport, player: MediaPlayer, time: CurrentTime,
                                    zone: LocalTimeInformation, clock: C = ContinuousClock(), eventBufferLimit: Int = 1024) {
        self.transport = transport
        self.time = TimeSource(clock)
        ams = AMSServer(player: player)
        cts = CTSServer(time: time, at: self.time.now(), localTimeInformation: zone)
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(max(1, eventBufferLimit)))
        (outgoing, outgoingSink) = AsyncStream.makeStream()
    }

    /// The player now.
    public var player: MediaPlayer { ams.player }

    /// Changes the player (a track, the state, the volume), as the phone's
    /// user does; the accessories hear what changed.
    public func updatePlayer(_ change: @Sendable (inout MediaPlayer) -> Void) {
        perform(ams.update(at: time.now(), change))
    }

    /// A button of the player pressed on the phone itself.
    public func performOnPhone(_ command: RemoteCommandID) {
        let now = time.now()
        perform(ams.update(at: now) { _ = $0.perform(command, at: now) })
    }

    /// Sets the clock (and the zone); subscribed accessories are notified.
    public func setTime(_ time: CurrentTime, zone: LocalTimeInformation? = nil) {
        for case .notify(let connection, let characteristic, let bytes) in cts.set(time, zone: zone, at: self.time.now()) {
            outgoingSink.yield((connection, .cts(characteristic), bytes))
        }
    }

    /// Serves the transport's events until its stream finishes (or throws);
    /// notifications go out in order meanwhile. Runs once.
    public func run() async throws {
        guard !started else { return }
        started = true
        defer {
            outgoingSink.finish()
            eventSink.finish()
        }
        let transport = self.transport
        let outgoing = self.outgoing
        let sender = Task {
            for await (connection, characteristic, bytes) in outgoing {
                // A notification the stack could not send (the link went, the
                // CCCD was turned off) is lost, as it is on a phone.
                try? await transport.notify(connection, characteristic, bytes)
            }
        }
        defer { sender.cancel() }
        for try await event in transport.mediaServerEvents {
            handle(event)
        }
    }

    private func handle(_ event: MediaServerEvent) {
        let now = time.now()
        switch event {
        case .linkUp(let connection, let link):
            ams.linkUp(connection, mtu: link.mtu)
        case .linkDown(let connection):
            ams.linkDown(connection)
            cts.linkDown(connection)
        case .mtuChanged(let connection, let mtu):
            ams.mtuChanged(connection, mtu)
        case .subscriptionChanged(let connection, .ams(let characteristic), let enabled):
            perform(ams.setSubscription(connection, characteristic, enabled: enabled))
        case .subscriptionChanged(let connection, .cts, let enabled):
            cts.setSubscription(connection, enabled: enabled)
        case .write(let connection, let characteristic, let bytes, let reply):
            let actions = ams.receivedWrite(connection, characteristic, bytes, at: now)
            // The write's response first, then what it changed, as an iPhone answers.
            for case .respond(_, let result) in actions { reply(result) }
            perform(actions)
        case .read(let connection, .ams(let characteristic), let reply):
            reply(ams.read(connection, characteristic, at: now))
        case .read(_, .cts(let characteristic), let reply):
            reply(cts.read(characteristic, at: now))
        }
    }

    private func perform(_ actions: [AMSServerAction]) {
        for action in actions {
            switch action {
            case .notify(let connection, let characteristic, let bytes): outgoingSink.yield((connection, .ams(characteristic), bytes))
            case .respond: break  // answered by the write's responder
            case .emit(let event): eventSink.yield(event)
            }
        }
    }
}
