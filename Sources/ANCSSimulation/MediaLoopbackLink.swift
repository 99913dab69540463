import ANCS
import ANCSRuntime
import Synchronization

/// An iPhone's AMS and CTS in memory, behind a `MediaClientTransport`: the
/// phone's side is an `AMSServer` (a scripted media player) and a
/// `CTSServer` (a clock and a zone). Each operation takes `delay` on the
/// given clock before the phone sees it, as a real stack's writes and reads
/// take connection events; a link that drops meanwhile fails it.
///
/// Faults, for tests: AMS unpublished and back (Service Changed), a write
/// never answered, the link dropped.
public final class MediaLoopbackLink: MediaClientTransport, Sendable {
    struct State {
        var ams: AMSServer
        var cts: CTSServer
        var connection: ConnectionID?
        var nextConnection: UInt32 = 0
        var amsPublished = true
        var mtu = 185
        var neverAnswerNextWrite = false
        var dropAfterNextAnswer = false
        var inFlight = 0
        var mostInFlight = 0
        var commands: [RemoteCommandID] = []
        /// The characteristics whose notifications the link's client turned on.
        var subscribed: Set<MediaCharacteristic> = []
        var closed = false
    }

    private let state: Mutex<State>
    private let sink: AsyncThrowingStream<MediaClientEvent, any Error>.Continuation
    public let mediaEvents: AsyncThrowingStream<MediaClientEvent, any Error>
    private let delay: Duration
    private let now: @Sendable () -> Timestamp
    private let sleep: @Sendable (Duration) async throws -> Void

    public init<C: Clock<Duration>>(player: MediaPlayer, time: CurrentTime, zone: LocalTimeInformation,
                                    clock: C, delay: Duration = .zero) {
        let origin = clock.now
        now = { Timestamp(origin.duration(to: clock.now)) }
        sleep = { duration in try await clock.sleep(for: duration) }
        self.delay = delay
        state = Mutex(State(ams: AMSServer(player: player), cts: CTSServer(time: time, at: .zero, localTimeInformation: zone)))
        (mediaEvents, sink) = AsyncThrowingStream.makeStream()
    }

    // MARK: - The phone

    /// Connects (a new ConnectionID each time); a link already up is dropped first.
    public func connect(mtu: Int = 185) {
        state.withLock { state in
            if state.connection != nil { drop(&state) }
            state.nextConnection += 1
            let connection = ConnectionID(state.nextConnection)
            state.connection = connection
            state.mtu = mtu
            state.ams.linkUp(connection, mtu: mtu)
            sink.yield(.linkUp(LinkInfo(mtu: mtu, peer: "Simulated iPhone", isEncrypted: true, isBonded: true),
                               ams: state.amsPublished, cts: true))
        }
    }

    public func drop() { state.withLock { drop(&$0) } }

    private func drop(_ state: inout State) {
        guard let connection = state.connection else { return }
        state.ams.linkDown(connection)
        state.cts.linkDown(connection)
        state.connection = nil
        state.subscribed = []
        sink.yield(.linkDown)
    }

    /// Ends the event stream (the client's `run()` returns).
    public func close() {
        state.withLock { state in
            drop(&state)
            state.closed = true
        }
        sink.finish()
    }

    /// The player changes (a track, play or pause, the volume): the accessory is notified of what it registered for.
    public func updatePlayer(_ change: (inout MediaPlayer) -> Void) {
        state.withLock { state in
            let now = self.now()
            deliver(state.ams.update(at: now, change), &state)
        }
    }

    /// The person presses a button of the player on the phone itself.
    public func performOnPhone(_ command: RemoteCommandID) {
        state.withLock { state in
            let now = self.now()
            deliver(state.ams.update(at: now) { _ = $0.perform(command, at: now) }, &state)
        }
    }

    /// The phone's clock is set (and its zone, when given).
    public func setTime(_ time: CurrentTime, zone: LocalTimeInformation? = nil) {
        state.withLock { state in
            for case .notify(_, let characteristic, let bytes) in state.cts.set(time, zone: zone, at: now()) {
                sink.yield(.notification(.cts(characteristic), bytes))
            }
        }
    }

    /// AMS goes (Service Changed) or comes back; CTS stays.
    public func setAMSPublished(_ published: Bool) {
        state.withLock { state in
            state.amsPublished = published
            if let connection = state.connection {
                state.ams.linkDown(connection)
                if published { state.ams.linkUp(connection, mtu: state.mtu) }
                sink.yield(.servicesChanged(ams: published, cts: true))
            }
        }
    }

    /// The next write is never answered (until the link drops).
    public func neverAnswerNextWrite() { state.withLock { $0.neverAnswerNextWrite = true } }
    /// The link drops the moment the next write is answered: the answer, then the link's end.
    public func dropAfterNextAnswer() { state.withLock { $0.dropAfterNextAnswer = true } }

    /// The player as the phone holds it.
    public var player: MediaPlayer { state.withLock { $0.ams.player } }
    /// The commands the accessory sent, in order.
    public var commands: [RemoteCommandID] { state.withLock { $0.commands } }
    /// What the link's client has subscribed to now (the CCCDs it turned on and not off).
    public var subscriptions: Set<MediaCharacteristic> { state.withLock { $0.subscribed } }
    /// The most operations the client had outstanding at once (1 if it keeps ATT's rule).
    public var mostOperationsInFlight: Int { state.withLock { $0.mostInFlight } }

    private func deliver(_ actions: [AMSServerAction], _ state: inout State) {
        for action in actions {
            switch action {
            case .notify(_, let characteristic, let bytes): sink.yield(.notification(.ams(characteristic), bytes))
            case .emit(.command(_, let command, _)): state.commands.append(command)
            default: break
            }
        }
    }

    // MARK: - The transport

    /// Waits the link's delay; nil if the link dropped meanwhile (or was down), else its connection.
    private func arrive() async -> ConnectionID? {
        guard let connection = state.withLock({ state -> ConnectionID? in
            state.inFlight += 1
            state.mostInFlight = max(state.mostInFlight, state.inFlight)
            return state.connection
        }) else {
            state.withLock { $0.inFlight -= 1 }
            return nil
        }
        do { if delay > .zero { try await sleep(delay) } } catch {
            state.withLock { $0.inFlight -= 1 }
            return nil
        }
        return state.withLock { state -> ConnectionID? in
            if state.connection == connection { return connection }
            state.inFlight -= 1
            return nil
        }
    }

    private func leave() { state.withLock { $0.inFlight -= 1 } }

    public func subscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        guard let connection = await arrive() else { return .transportFailure }
        defer { leave() }
        return state.withLock { state in
            switch characteristic {
            case .ams(let ams):
                guard state.amsPublished else { return .attError(.invalidHandle) }
                deliver(state.ams.setSubscription(connection, ams, enabled: true), &state)
            case .cts: state.cts.setSubscription(connection, enabled: true)
            }
            state.subscribed.insert(characteristic)
            return .success
        }
    }

    public func unsubscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        guard let connection = await arrive() else { return .transportFailure }
        defer { leave() }
        return state.withLock { state in
            switch characteristic {
            case .ams(let ams): _ = state.ams.setSubscription(connection, ams, enabled: false)
            case .cts: state.cts.setSubscription(connection, enabled: false)
            }
            state.subscribed.remove(characteristic)
            return .success
        }
    }

    public func write(_ characteristic: AMSCharacteristic, _ value: [UInt8]) async -> ATTResult {
        guard let connection = await arrive() else { return .transportFailure }
        let swallowed = state.withLock { state in
            defer { state.neverAnswerNextWrite = false }
            return state.neverAnswerNextWrite
        }
        if swallowed {
            // Held until the link drops (as an unanswered ATT request is).
            while state.withLock({ $0.connection == connection }) {
                do { try await sleep(.seconds(1)) } catch { break }
            }
            leave()
            return .transportFailure
        }
        defer { leave() }
        let (result, dropped) = state.withLock { state -> (ATTResult, Bool) in
            guard state.amsPublished else { return (.attError(.invalidHandle), false) }
            let actions = state.ams.receivedWrite(connection, characteristic, value, at: now())
            deliver(actions, &state)
            var result = ATTResult.attError(.unlikelyError)
            for case .respond(_, let answer) in actions { result = answer }
            guard state.dropAfterNextAnswer else { return (result, false) }
            state.dropAfterNextAnswer = false
            drop(&state)
            return (result, true)
        }
        // The answer is the writer's, but the link's end is told first and the writer resumes
        // a moment after it, as when a stack's answer and disconnection come in one read.
        if dropped { try? await sleep(.milliseconds(1)) }
        return result
    }

    public func read(_ characteristic: MediaCharacteristic) async -> ATTReadResult {
        guard let connection = await arrive() else { return .transportFailure }
        defer { leave() }
        return state.withLock { state in
            switch characteristic {
            case .ams(let ams):
                guard state.amsPublished else { return .attError(.invalidHandle) }
                return state.ams.read(connection, ams, at: now())
            case .cts(let cts): return state.cts.read(cts, at: now())
            }
        }
    }
}
