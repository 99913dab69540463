import ANCS
import ANCSRuntime
import Foundation

/// The NP's GATT server on a Bumble host: the host publishes the ANCS
/// service, advertises with the ANCS solicitation, pairs with LE Secure
/// Connections, requires encryption, and hands every Control Point write to
/// this process, holding it until it is answered, so the exact ANCS error
/// codes (0xA0–0xA3) reach the consumer.
///
/// ```swift
/// let transport = try await BumbleServerTransport.start(BumbleHostOptions(transport: "usb:0"))
/// let server = ProviderServer(transport: transport)
/// try await server.run()
/// ```
public final class BumbleServerTransport: GATTServerTransport, Sendable {
    public let events: AsyncThrowingStream<GATTServerEvent, any Error>
    /// This device's address and the ANCS value handles, as the host reported them.
    public let ready: BumbleHostReady

    private let host: HostProcess
    private let notifications: PendingTable<String>
    /// A notification not confirmed within this time is reported as not sent.
    static let notifyTimeout: Duration = .seconds(10)

    private init(host: HostProcess, ready: BumbleHostReady, events: AsyncThrowingStream<GATTServerEvent, any Error>,
                 notifications: PendingTable<String>) {
        self.host = host
        self.notifications = notifications
        self.ready = ready
        self.events = events
    }

    /// Starts the host (`serve`) and waits until it advertises.
    /// `notices`: what the host is doing and how pairings go, as they happen.
    public static func start(_ options: BumbleHostOptions, environment: BumbleEnvironment? = nil,
                             progress: @Sendable (String) -> Void = { _ in },
                             notices: @escaping @Sendable (BumbleHostNotice) -> Void = { _ in }) async throws(TransportError) -> BumbleServerTransport {
        let (events, sink) = AsyncThrowingStream<GATTServerEvent, any Error>.makeStream()
        let notifications = PendingTable<String>()
        let (host, ready) = try await HostProcess.launch(
            role: "serve", options: options, environment: environment, progress: progress, sink: sink,
            onExit: { notifications.close(with: "failed host-gone") }
        ) { line, fields, host in
            if let notice = BumbleHostNotice(fields) { return notices(notice) }
            BumbleServerTransport.handle(fields, line: line, sink: sink, notifications: notifications, host: host)
        }
        return BumbleServerTransport(host: host, ready: ready, events: events, notifications: notifications)
    }

    private static func handle(_ fields: [Substring], line: String, sink: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation,
                               notifications: PendingTable<String>, host: HostProcess) {
        guard let parsed = BumbleHostLine(fields, line: line) else { return malformed(line) }
        switch parsed {
        case .connected(let connection, let link): sink.yield(.connected(connection, link))
        case .disconnected(let connection): sink.yield(.disconnected(connection))
        case .connectionMTU(let connection, let mtu): sink.yield(.mtuChanged(connection, mtu))
        case .subscription(let connection, let characteristic, let enabled):
            sink.yield(.subscriptionChanged(connection, characteristic, enabled: enabled))
        case .write(let connection, let id, let value):
            let reply = ATTResponder { result in
                switch result {
                case .success: host.send("reply \(id) ok")
                case .attError(let code): host.send("reply \(id) att 0x\(Hex.string(code.rawValue, uppercase: true))")
                case .transportFailure: host.send("reply \(id) failed")
                }
            }
            sink.yield(.controlPointWrite(connection, value, reply: reply))
        case .notified(let id, let outcome): notifications.resolve(id, outcome)
        case .fatal: break  // the host exits; its exit reports the reason
        case .error(let text): FileHandle.standardError.write(Data("bumble host: \(text)\n".utf8))
        case .notice: break  // handled before
        case .linkUp, .linkDown, .notification, .mtu, .result, .finished, .failed: malformed(line)  // the consume role's
        }
    }

    /// Sends one notification, in call order; throws when the host could
    /// not send it (no connection, not subscribed, longer than MTU − 3, host gone).
    public func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        let host = self.host
        let line = "\(connection.rawValue) \(characteristic.shortName) \(hexString(value))"
        let result = await notifications.perform(
            timeout: Self.notifyTimeout, expired: "failed timed-out", { id in host.send("notify \(id) \(line)") },
            failed: "failed host-gone")
        guard result == "ok" else {
            throw TransportError(.notSent, "\(characteristic) notification to \(connection) not sent: \(result.dropFirst(7))")
        }
    }

    /// Answers a numeric comparison the host asked about (`askPairing`).
    public func confirmPairing(_ connection: Int, _ accept: Bool) {
        host.send("confirm \(connection) \(accept ? "yes" : "no")")
    }

    /// Disconnects a consumer.
    public func disconnect(_ connection: ConnectionID) {
        host.send("disconnect \(connection.rawValue)")
    }

    /// The host process's id.
    public var hostProcessIdentifier: Int32 { host.processIdentifier }

    /// Stops the host: it disconnects and exits; `events` then finishes.
    public func close() {
        host.close()
    }
}

func malformed(_ line: String) {
    FileHandle.standardError.write(Data("bumble host: unexpected line `\(line)`\n".utf8))
}

/// Holds lines that arrive before the handler is set (the process starts
/// before the transport exists), then hands every line over in order.
final class LineRouter: @unchecked Sendable {
    private let lock = NSLock()
    private var buffered: [String] = []
    private var started = false
    var handler: (@Sendable (String) -> Void)?

    func route(_ line: String) {
        lock.lock()
        if !started {
            buffered.append(line)
            lock.unlock()
            return
        }
        lock.unlock()
        handler?(line)
    }

    func start() {
        lock.lock()
        let lines = buffered
        buffered = []
        // Lines routed while the buffer drains wait for the lock, so order holds.
        for line in lines { handler?(line) }
        started = true
        lock.unlock()
    }
}
