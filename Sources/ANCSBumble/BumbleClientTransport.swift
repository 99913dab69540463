import ANCS
import ANCSRuntime
import Foundation

/// The NC's GATT client on a Bumble host: the host scans for an advertiser
/// soliciting ANCS (or connects to `peer`), pairs with LE Secure Connections
/// (or re-encrypts with a stored bond), exchanges the MTU, discovers ANCS and
/// reports `linkUp`; subscriptions and Control Point writes are request lines
/// answered with the ATT result. The host subscribes to Service Changed and,
/// when it tells of ANCS's handles, discovers ANCS again: `serviceChanged`.
public final class BumbleClientTransport: GATTClientTransport, Sendable {
    public let events: AsyncThrowingStream<GATTClientEvent, any Error>
    public let ready: BumbleHostReady

    private let host: HostProcess
    private let operations: PendingTable<ATTResult>
    /// An operation not answered within this time ends with `.transportFailure`
    /// (the host's own ATT timeout is 30 s).
    static let operationTimeout: Duration = .seconds(35)

    private init(host: HostProcess, ready: BumbleHostReady, events: AsyncThrowingStream<GATTClientEvent, any Error>,
                 operations: PendingTable<ATTResult>) {
        self.host = host
        self.ready = ready
        self.events = events
        self.operations = operations
    }

    /// Starts the host (`consume`); it then looks for the NP on its own.
    /// `notices`: what the host is doing (scanning, connecting, pairing) and
    /// how pairings go, as they happen. When the link cannot be made and no
    /// other attempt follows (no `reconnect`), `events` finishes throwing the reason.
    public static func start(_ options: BumbleHostOptions, environment: BumbleEnvironment? = nil,
                             progress: @Sendable (String) -> Void = { _ in },
                             notices: @escaping @Sendable (BumbleHostNotice) -> Void = { _ in }) async throws(TransportError) -> BumbleClientTransport {
        let (events, sink) = AsyncThrowingStream<GATTClientEvent, any Error>.makeStream()
        let operations = PendingTable<ATTResult>()
        let (host, ready) = try await HostProcess.launch(
            role: "consume", options: options, environment: environment, progress: progress, sink: sink,
            onExit: { operations.close(with: .transportFailure) }
        ) { line, fields, _ in
            if let notice = BumbleHostNotice(fields) { return notices(notice) }
            guard let parsed = BumbleHostLine(fields, line: line) else { return malformed(line) }
            switch parsed {
            case .linkUp(let link): sink.yield(.linkUp(link))
            case .linkDown:
                // Operations in flight end with a failure before the event.
                sink.yield(.linkDown)
            case .notification(let characteristic, let value): sink.yield(.notification(characteristic, value))
            case .mtu(let mtu): sink.yield(.mtuChanged(mtu))
            case .serviceChanged(let published): sink.yield(.serviceChanged(published: published))
            case .result(let id, let result): operations.resolve(id, result)
            case .finished: sink.finish()
            case .failed(let reason): sink.finish(throwing: TransportError(.connectionFailed, "connection failed: \(reason)"))
            case .fatal: break  // the host exits; its exit reports the reason
            case .error(let text): FileHandle.standardError.write(Data("bumble host: \(text)\n".utf8))
            case .notice: break  // handled before
            case .connected, .disconnected, .connectionMTU, .subscription, .write, .notified, .serviceChange, .bondsForgotten:
                malformed(line)  // the serve role's
            }
        }
        return BumbleClientTransport(host: host, ready: ready, events: events, operations: operations)
    }

    /// Sends `verb id argument` and waits for its result line.
    private func perform(_ verb: String, _ argument: String) async -> ATTResult {
        let host = self.host
        let operations = self.operations
        let id = operations.makeID()
        let result = await withTaskCancellationHandler {
            await operations.perform(id: id, timeout: Self.operationTimeout, expired: .transportFailure,
                                     { id in host.send("\(verb) \(id) \(argument)") }, failed: .transportFailure)
        } onCancel: {
            // The host still completes the ATT operation; its result line is then ignored.
            operations.resolve(id, .transportFailure)
        }
        return result
    }

    public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        await perform("subscribe", characteristic.shortName)
    }

    public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        await perform("unsubscribe", characteristic.shortName)
    }

    public func writeControlPoint(_ value: [UInt8]) async -> ATTResult {
        await perform("write", hexString(value))
    }

    /// Answers a numeric comparison the host asked about (`askPairing`).
    public func confirmPairing(_ connection: Int, _ accept: Bool) {
        host.send("confirm \(connection) \(accept ? "yes" : "no")")
    }

    /// Disconnects the link (the host reconnects only with `reconnect`).
    public func disconnect() {
        host.send("disconnect")
    }

    /// The host process's id.
    public var hostProcessIdentifier: Int32 { host.processIdentifier }

    /// Stops the host: it disconnects and exits; `events` then finishes.
    public func close() {
        host.close()
    }
}
