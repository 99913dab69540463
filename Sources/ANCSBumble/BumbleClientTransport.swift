import ANCS
import ANCSRuntime
import Foundation
import Synchronization

/// The NC's GATT client on a Bumble host: the host scans for an advertiser
/// soliciting ANCS (or connects to `peer`), pairs with LE Secure Connections
/// (or re-encrypts with a stored bond), exchanges the MTU, discovers ANCS and
/// reports `linkUp`; subscriptions and Control Point writes are request lines
/// answered with the ATT result. The host subscribes to Service Changed and,
/// when it tells of ANCS's handles, discovers ANCS again: `serviceChanged`.
///
/// With `BumbleHostOptions.media` the host also discovers AMS and CTS on each
/// link, and the transport is a `MediaClientTransport` too: `mediaEvents`
/// tells the same links, with the media services found, to a `MediaClient`
/// running beside the `ConsumerClient`. Both share the host's one ATT bearer.
public final class BumbleClientTransport: GATTClientTransport, MediaClientTransport, Sendable {
    public let events: AsyncThrowingStream<GATTClientEvent, any Error>
    /// AMS's and CTS's events; with `media` off it tells nothing and finishes with `events`.
    public let mediaEvents: AsyncThrowingStream<MediaClientEvent, any Error>
    public let ready: BumbleHostReady

    private let host: HostProcess
    /// Writes' and reads' results alike, in one id space (a write's `ok` has no value).
    private let operations: PendingTable<ATTReadResult>
    /// An operation not answered within this time ends with `.transportFailure`
    /// (the host's own ATT timeout is 30 s).
    static let operationTimeout: Duration = .seconds(35)

    private init(host: HostProcess, ready: BumbleHostReady, events: AsyncThrowingStream<GATTClientEvent, any Error>,
                 mediaEvents: AsyncThrowingStream<MediaClientEvent, any Error>, operations: PendingTable<ATTReadResult>) {
        self.host = host
        self.ready = ready
        self.events = events
        self.mediaEvents = mediaEvents
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
        let (mediaEvents, mediaSink) = AsyncThrowingStream<MediaClientEvent, any Error>.makeStream()
        let operations = PendingTable<ATTReadResult>()
        let (host, ready) = try await HostProcess.launch(
            role: "consume", options: options, environment: environment, progress: progress, sink: sink,
            onExit: { error in
                operations.close(with: .transportFailure)
                if let error { mediaSink.finish(throwing: error) } else { mediaSink.finish() }
            }
        ) { line, fields, _ in
            if let notice = BumbleHostNotice(fields) { return notices(notice) }
            guard let parsed = BumbleHostLine(fields, line: line) else { return malformed(line) }
            switch parsed {
            case .linkUp(let link, let media):
                sink.yield(.linkUp(link))
                if options.media { mediaSink.yield(.linkUp(link, ams: media?.ams ?? false, cts: media?.cts ?? false)) }
            case .linkDown:
                // Operations in flight end with a failure before the event.
                sink.yield(.linkDown)
                if options.media { mediaSink.yield(.linkDown) }
            case .notification(let characteristic, let value): sink.yield(.notification(characteristic, value))
            case .mediaNotification(let characteristic, let value):
                if options.media { mediaSink.yield(.notification(characteristic, value)) } else { malformed(line) }
            case .mtu(let mtu): sink.yield(.mtuChanged(mtu))
            case .serviceChanged(let published): sink.yield(.serviceChanged(published: published))
            case .mediaChanged(let media):
                if options.media { mediaSink.yield(.servicesChanged(ams: media.ams, cts: media.cts)) } else { malformed(line) }
            case .result(let id, let result): operations.resolve(id, result)
            case .finished:
                sink.finish()
                mediaSink.finish()
            case .failed(let reason):
                let error = TransportError(.connectionFailed, "connection failed: \(reason)")
                sink.finish(throwing: error)
                mediaSink.finish(throwing: error)
            case .fatal: break  // the host exits; its exit reports the reason
            case .error(let text): FileHandle.standardError.write(Data("bumble host: \(text)\n".utf8))
            case .notice: break  // handled before
            case .connected, .disconnected, .connectionMTU, .subscription, .write, .notified, .serviceChange, .bondsForgotten,
                 .mediaSubscription, .mediaWrite, .mediaRead:
                malformed(line)  // the serve role's
            }
        }
        if options.media {
            // The host closes when both streams end, not with the consumer's alone: a media client
            // still leaving (AMS's and CTS's notifications off) keeps it, as `close()` does not.
            let open = Mutex(2)
            let ended: @Sendable () -> Void = { if open.withLock({ $0 -= 1; return $0 == 0 }) { host.close() } }
            sink.onTermination = { _ in ended() }
            mediaSink.onTermination = { _ in ended() }
        }
        return BumbleClientTransport(host: host, ready: ready, events: events, mediaEvents: mediaEvents, operations: operations)
    }

    /// Sends `verb id argument` and waits for its result line.
    private func perform(_ verb: String, _ argument: String) async -> ATTResult {
        switch await performRead(verb, argument) {
        case .value: .success
        case .attError(let code): .attError(code)
        case .transportFailure: .transportFailure
        }
    }

    /// Sends `verb id argument` and waits for its result line, with a read's value.
    private func performRead(_ verb: String, _ argument: String) async -> ATTReadResult {
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

    // MARK: MediaClientTransport (with `BumbleHostOptions.media`)

    public func subscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        await perform("subscribe", characteristic.bumbleName)
    }

    public func unsubscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        await perform("unsubscribe", characteristic.bumbleName)
    }

    public func write(_ characteristic: AMSCharacteristic, _ value: [UInt8]) async -> ATTResult {
        await perform("write-to", "\(MediaCharacteristic.ams(characteristic).bumbleName) \(hexString(value))")
    }

    public func read(_ characteristic: MediaCharacteristic) async -> ATTReadResult {
        await performRead("read", characteristic.bumbleName)
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
