import ANCS
import ANCSRuntime
import Synchronization

/// A GATT link in memory: a client end (for a `ConsumerClient`) and a server
/// end (for a `ProviderServer`) joined without timing. A Control Point write
/// reaches the server as soon as it is made and returns when the server
/// replies; notifications reach the client in the order they were sent;
/// CCCD writes are answered by the link itself, as a stack does.
///
/// Faults, for tests: fail the next write with an ATT result, never answer
/// it, hold it until released, drop the link.
public final class LoopbackLink: Sendable {
    /// The end a `ConsumerClient` uses.
    public let client: Client
    /// The end a `ProviderServer` uses.
    public let server: Server
    private let core: Core

    public init() {
        core = Core()
        client = Client(core: core)
        server = Server(core: core)
    }

    /// The link's connection while it is up.
    public var connection: ConnectionID? { core.state.withLock { $0.connection } }

    /// Connects: the server hears `connected`, then the client `linkUp`. Each
    /// connection gets a new ConnectionID (1, 2, …); a link already up is
    /// dropped first.
    public func connect(mtu: Int = 185) {
        core.connect(mtu: mtu)
    }

    /// Drops the link: the client hears `linkDown`, the server
    /// `disconnected`; writes waiting for an answer return `.transportFailure`.
    public func drop() {
        core.drop()
    }

    /// Both ends see an MTU exchange.
    public func changeMTU(_ mtu: Int) {
        core.state.withLock { state in
            guard let connection = state.connection else { return }
            core.clientSink.yield(.mtuChanged(mtu))
            core.serverSink.yield(.mtuChanged(connection, mtu))
        }
    }

    /// Drops the link if it is up, then ends both event streams (so a
    /// `run()` on either end returns).
    public func close() {
        core.drop()
        core.state.withLock { $0.closed = true }
        core.clientSink.finish()
        core.serverSink.finish()
    }

    /// The stack dies: the link drops, then both event streams end throwing
    /// `error` (so a `run()` on either end throws it).
    public func fail(_ error: TransportError) {
        core.drop()
        core.state.withLock { $0.closed = true }
        core.clientSink.finish(throwing: error)
        core.serverSink.finish(throwing: error)
    }

    // MARK: - Faults

    /// The next Control Point write never reaches the server and is answered
    /// with `result` at once.
    public func failNextWrite(with result: ATTResult) {
        core.state.withLock { $0.hooks.append(.fail(result)) }
    }

    /// The next Control Point write is lost: the server never sees it and it
    /// is never answered (until the link drops or the writer is cancelled).
    public func neverAnswerNextWrite() {
        core.state.withLock { $0.hooks.append(.neverAnswer) }
    }

    /// The link drops the moment the server answers the next Control Point
    /// write: the writer gets the answer, and the link's end is told first.
    public func dropAfterNextAnswer() {
        core.state.withLock { $0.hooks.append(.dropAfterAnswer) }
    }

    /// The next Control Point write is held back from the server until
    /// `release()`; meanwhile its writer waits, as for a slow NP.
    public func holdNextWrite() -> HeldWrite {
        let id = core.state.withLock { state in
            state.nextHold += 1
            state.holds[state.nextHold] = Core.Hold()
            state.hooks.append(.hold(state.nextHold))
            return state.nextHold
        }
        return HeldWrite(core: core, id: id)
    }

    /// A Control Point write kept from the server by `holdNextWrite()`.
    public struct HeldWrite: Sendable {
        fileprivate let core: Core
        fileprivate let id: UInt64

        /// Returns the written bytes once the write has been made.
        public func arrived() async -> [UInt8] {
            await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8], Never>) in
                let value = core.state.withLock { state -> [UInt8]? in
                    if let write = state.holds[id]?.write { return write.value }
                    state.holds[id]?.waiters.append(continuation)
                    return nil
                }
                if let value { continuation.resume(returning: value) }
            }
        }

        /// Lets the write through to the server (now, or when it is made).
        /// Nothing happens if its writer has already given up.
        public func release() {
            core.state.withLock { state in
                guard let hold = state.holds[id], !hold.released else { return }
                state.holds[id]?.released = true
                if let write = hold.write { core.deliver(write.id, write.value, in: &state) }
            }
        }
    }

    // MARK: - Ends

    public struct Client: GATTClientTransport {
        fileprivate let core: Core

        public var events: AsyncThrowingStream<GATTClientEvent, any Error> { core.clientEvents }

        public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
            core.setSubscription(characteristic, true)
        }

        public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
            core.setSubscription(characteristic, false)
        }

        public func writeControlPoint(_ value: [UInt8]) async -> ATTResult {
            let id = core.state.withLock { state in
                state.nextWrite += 1
                return state.nextWrite
            }
            return await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<ATTResult, Never>) in
                    core.startWrite(id, value, continuation)
                }
            } onCancel: {
                core.answer(id, .transportFailure)
            }
        }
    }

    public struct Server: GATTServerTransport {
        fileprivate let core: Core

        public var events: AsyncThrowingStream<GATTServerEvent, any Error> { core.serverEvents }

        public func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
            let sent = core.state.withLock { state -> Bool in
                // A stack sends nothing on a gone link or to a client that did not subscribe.
                guard state.connection == connection, state.subscriptions.contains(characteristic) else { return false }
                core.clientSink.yield(.notification(characteristic, value))
                return true
            }
            guard sent else { throw TransportError(.notSent, "connection \(connection) is gone or not subscribed to \(characteristic)") }
        }
    }

    // MARK: - Shared state

    fileprivate final class Core: Sendable {
        enum WriteHook {
            case fail(ATTResult)
            case neverAnswer
            case hold(UInt64)
            case dropAfterAnswer
        }

        struct Hold {
            /// The write once made (kept, so `arrived()` answers at any time).
            var write: (id: UInt64, value: [UInt8])?
            var released = false
            var waiters: [CheckedContinuation<[UInt8], Never>] = []
        }

        struct State {
            var connection: ConnectionID?
            var connections: UInt32 = 0
            var subscriptions: Set<ANCSCharacteristic> = []
            var hooks: [WriteHook] = []
            var holds: [UInt64: Hold] = [:]
            var nextHold: UInt64 = 0
            /// Writes waiting for their answer, by write number.
            var pending: [UInt64: CheckedContinuation<ATTResult, Never>] = [:]
            /// Writes whose answer comes with the link's end (`dropAfterNextAnswer`).
            var dropAfterAnswer: Set<UInt64> = []
            var nextWrite: UInt64 = 0
            var closed = false
        }

        // Events are yielded under the lock, so both streams see one order.
        let state = Mutex(State())
        let clientEvents: AsyncThrowingStream<GATTClientEvent, any Error>
        let clientSink: AsyncThrowingStream<GATTClientEvent, any Error>.Continuation
        let serverEvents: AsyncThrowingStream<GATTServerEvent, any Error>
        let serverSink: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation

        init() {
            (clientEvents, clientSink) = AsyncThrowingStream.makeStream()
            (serverEvents, serverSink) = AsyncThrowingStream.makeStream()
        }

        func connect(mtu: Int) {
            drop()
            state.withLock { state in
                guard !state.closed else { return }
                state.connections += 1
                let connection = ConnectionID(state.connections)
                state.connection = connection
                let info = LinkInfo(mtu: mtu, peer: "loopback", isEncrypted: true, isBonded: true)
                serverSink.yield(.linkUp(connection, info))
                clientSink.yield(.linkUp(info))
            }
        }

        func drop() {
            let stranded = state.withLock { state -> [CheckedContinuation<ATTResult, Never>] in
                guard let connection = state.connection else { return [] }
                state.connection = nil
                state.subscriptions.removeAll()
                let stranded = Array(state.pending.values)
                state.pending.removeAll()
                clientSink.yield(.linkDown)
                serverSink.yield(.linkDown(connection))
                return stranded
            }
            for continuation in stranded { continuation.resume(returning: .transportFailure) }
        }

        func setSubscription(_ characteristic: ANCSCharacteristic, _ enabled: Bool) -> ATTResult {
            state.withLock { state in
                guard let connection = state.connection else { return .transportFailure }
                if enabled { state.subscriptions.insert(characteristic) } else { state.subscriptions.remove(characteristic) }
                serverSink.yield(.subscriptionChanged(connection, characteristic, enabled: enabled))
                return .success
            }
        }

        func startWrite(_ id: UInt64, _ value: [UInt8], _ continuation: CheckedContinuation<ATTResult, Never>) {
            enum Start { case answer(ATTResult), wait([CheckedContinuation<[UInt8], Never>]) }
            let start = state.withLock { state -> Start in
                // Checked under the lock: a cancellation handler that ran
                // before the write was registered found nothing to answer.
                guard state.connection != nil, !Task.isCancelled else { return .answer(.transportFailure) }
                let hook = state.hooks.isEmpty ? nil : state.hooks.removeFirst()
                switch hook {
                case .fail(let result):
                    return .answer(result)
                case .neverAnswer:
                    state.pending[id] = continuation
                    return .wait([])
                case .dropAfterAnswer:
                    state.pending[id] = continuation
                    state.dropAfterAnswer.insert(id)
                    deliver(id, value, in: &state)
                    return .wait([])
                case .hold(let holdID):
                    state.pending[id] = continuation
                    guard var hold = state.holds[holdID] else { return .wait([]) }
                    let waiters = hold.waiters
                    hold.write = (id, value)
                    hold.waiters = []
                    state.holds[holdID] = hold
                    if hold.released { deliver(id, value, in: &state) }
                    return .wait(waiters)
                case nil:
                    state.pending[id] = continuation
                    deliver(id, value, in: &state)
                    return .wait([])
                }
            }
            switch start {
            case .answer(let result):
                continuation.resume(returning: result)
            case .wait(let waiters):
                for waiter in waiters { waiter.resume(returning: value) }
            }
        }

        /// Hands a write to the server, if its writer still waits.
        func deliver(_ id: UInt64, _ value: [UInt8], in state: inout State) {
            guard state.pending[id] != nil, let connection = state.connection else { return }
            let reply = ATTResponder { [weak self] result in self?.answer(id, result) }
            serverSink.yield(.controlPointWrite(connection, value, reply: reply))
        }

        /// Ends a write once; later answers (after a drop, a cancellation) are ignored.
        func answer(_ id: UInt64, _ result: ATTResult) {
            let (continuation, dropsLink) = state.withLock { state in
                (state.pending.removeValue(forKey: id), state.dropAfterAnswer.remove(id) != nil)
            }
            // The answer is the writer's; the link's end is told before the writer resumes, as a stack may.
            if dropsLink && continuation != nil { drop() }
            continuation?.resume(returning: result)
        }
    }
}
