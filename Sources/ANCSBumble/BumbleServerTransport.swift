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
///
/// With `BumbleHostOptions.media` the host also publishes AMS and CTS (before
/// ANCS, which stays the last service), and the transport is a
/// `MediaServerTransport` too: `mediaServerEvents` tells the same links,
/// with AMS's and CTS's subscriptions, writes and reads, to a `MediaServer`.
public final class BumbleServerTransport: GATTServerTransport, MediaServerTransport, Sendable {
    public let events: AsyncThrowingStream<GATTServerEvent, any Error>
    /// AMS's and CTS's events; with `media` off it tells nothing and finishes with `events`.
    public let mediaServerEvents: AsyncThrowingStream<MediaServerEvent, any Error>
    /// This device's address and the ANCS value handles, as the host reported them.
    public let ready: BumbleHostReady

    private let host: HostProcess
    private let notifications: PendingTable<String>
    private let serviceChanges: PendingTable<String>
    /// A notification not confirmed within this time is reported as not sent.
    static let notifyTimeout: Duration = .seconds(10)
    /// Unpublishing or publishing ANCS, Service Changed confirmed (the host
    /// gives each indication 10 s) within this time.
    static let serviceChangeTimeout: Duration = .seconds(20)

    private init(host: HostProcess, ready: BumbleHostReady, events: AsyncThrowingStream<GATTServerEvent, any Error>,
                 mediaServerEvents: AsyncThrowingStream<MediaServerEvent, any Error>,
                 notifications: PendingTable<String>, serviceChanges: PendingTable<String>) {
        self.host = host
        self.mediaServerEvents = mediaServerEvents
        self.notifications = notifications
        self.serviceChanges = serviceChanges
        self.ready = ready
        self.events = events
    }

    /// Starts the host (`serve`) and waits until it advertises.
    /// `notices`: what the host is doing and how pairings go, as they happen.
    public static func start(_ options: BumbleHostOptions, environment: BumbleEnvironment? = nil,
                             progress: @Sendable (String) -> Void = { _ in },
                             notices: @escaping @Sendable (BumbleHostNotice) -> Void = { _ in }) async throws(TransportError) -> BumbleServerTransport {
        let (events, sink) = AsyncThrowingStream<GATTServerEvent, any Error>.makeStream()
        let (mediaEvents, mediaSink) = AsyncThrowingStream<MediaServerEvent, any Error>.makeStream()
        let notifications = PendingTable<String>()
        let serviceChanges = PendingTable<String>()
        let (host, ready) = try await HostProcess.launch(
            role: "serve", options: options, environment: environment, progress: progress, sink: sink,
            onExit: { error in
                notifications.close(with: "failed host-gone")
                serviceChanges.close(with: "failed host-gone")
                if let error { mediaSink.finish(throwing: error) } else { mediaSink.finish() }
            }
        ) { line, fields, host in
            if let notice = BumbleHostNotice(fields) { return notices(notice) }
            BumbleServerTransport.handle(fields, line: line, sink: sink, mediaSink: options.media ? mediaSink : nil,
                                         notifications: notifications, serviceChanges: serviceChanges, host: host)
        }
        return BumbleServerTransport(host: host, ready: ready, events: events, mediaServerEvents: mediaEvents,
                                     notifications: notifications, serviceChanges: serviceChanges)
    }

    /// The answer to a held write or read, as the host's `reply` line.
    private static func reply(_ host: HostProcess, _ id: Int, _ result: ATTResult) {
        switch result {
        case .success: host.send("reply \(id) ok")
        case .attError(let code): host.send("reply \(id) att 0x\(Hex.string(code.rawValue, uppercase: true))")
        case .transportFailure: host.send("reply \(id) failed")
        }
    }

    private static func handle(_ fields: [Substring], line: String, sink: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation,
                               mediaSink: AsyncThrowingStream<MediaServerEvent, any Error>.Continuation?,
                               notifications: PendingTable<String>, serviceChanges: PendingTable<String>, host: HostProcess) {
        guard let parsed = BumbleHostLine(fields, line: line) else { return malformed(line) }
        switch parsed {
        case .connected(let connection, let link):
            sink.yield(.linkUp(connection, link))
            mediaSink?.yield(.linkUp(connection, link))
        case .disconnected(let connection):
            sink.yield(.linkDown(connection))
            mediaSink?.yield(.linkDown(connection))
        case .connectionMTU(let connection, let mtu):
            sink.yield(.mtuChanged(connection, mtu))
            mediaSink?.yield(.mtuChanged(connection, mtu))
        case .subscription(let connection, let characteristic, let enabled):
            sink.yield(.subscriptionChanged(connection, characteristic, enabled: enabled))
        case .write(let connection, let id, let value):
            sink.yield(.controlPointWrite(connection, value, reply: ATTResponder { reply(host, id, $0) }))
        case .mediaSubscription(let connection, let characteristic, let enabled):
            guard let mediaSink else { return malformed(line) }
            mediaSink.yield(.subscriptionChanged(connection, characteristic, enabled: enabled))
        case .mediaWrite(let connection, let id, let characteristic, let value):
            guard let mediaSink else { return reply(host, id, .transportFailure) }
            mediaSink.yield(.write(connection, characteristic, value, reply: ATTResponder { reply(host, id, $0) }))
        case .mediaRead(let connection, let id, let characteristic):
            guard let mediaSink else { return reply(host, id, .transportFailure) }
            mediaSink.yield(.read(connection, characteristic, reply: ATTReadResponder { result in
                switch result {
                case .value(let bytes): host.send("reply-read \(id) \(hexString(bytes))")
                case .attError(let code): reply(host, id, .attError(code))
                case .transportFailure: reply(host, id, .transportFailure)
                }
            }))
        case .notified(let id, let outcome): notifications.resolve(id, outcome)
        case .serviceChange(let id, _, let outcome), .bondsForgotten(let id, let outcome): serviceChanges.resolve(id, outcome)
        case .fatal: break  // the host exits; its exit reports the reason
        case .error(let text): FileHandle.standardError.write(Data("bumble host: \(text)\n".utf8))
        case .notice: break  // handled before
        case .linkUp, .linkDown, .notification, .mediaNotification, .mtu, .result, .finished, .failed, .serviceChanged, .mediaChanged:
            malformed(line)  // the consume role's
        }
    }

    /// Sends one notification, in call order; throws when the host could
    /// not send it (no connection, not subscribed, longer than MTU − 3, host gone).
    public func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        try await notify(connection, characteristic.shortName, value, what: "\(characteristic)")
    }

    /// Sends one AMS or CTS notification, in call order with ANCS's (with `media`).
    public func notify(_ connection: ConnectionID, _ characteristic: MediaCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        try await notify(connection, characteristic.bumbleName, value, what: "\(characteristic)")
    }

    /// A `notify` line for the characteristic of that short name, and its `notified` answer.
    private func notify(_ connection: ConnectionID, _ name: String, _ value: [UInt8], what: String) async throws(TransportError) {
        let host = self.host
        let line = "\(connection.rawValue) \(name) \(hexString(value))"
        let result = await notifications.perform(
            timeout: Self.notifyTimeout, expired: "failed timed-out", { id in host.send("notify \(id) \(line)") },
            failed: "failed host-gone")
        guard result == "ok" else {
            throw TransportError(.notSent, "\(what) notification to \(connection) not sent: \(result.dropFirst(7))")
        }
    }

    /// Removes ANCS from the GATT database, as iOS does when it unpublishes
    /// it: every consumer's subscriptions go with it (their sessions end,
    /// reported as `subscriptionChanged … enabled: false`), and Service
    /// Changed is indicated with ANCS's handle range to the consumers that
    /// subscribed to it. Throws when ANCS is not published or the host is gone.
    /// `serviceChanged: false` changes the database without indicating it,
    /// as a phone that resets its GATT state may.
    public func unpublishANCS(serviceChanged: Bool = true) async throws(TransportError) -> BumbleServiceChange {
        try await changeService("unpublish", published: false, indicated: serviceChanged)
    }

    /// Adds ANCS back and indicates Service Changed with its new handle
    /// range (unless `serviceChanged` is false); consumers that subscribe
    /// again start new sessions.
    public func publishANCS(serviceChanged: Bool = true) async throws(TransportError) -> BumbleServiceChange {
        try await changeService("publish", published: true, indicated: serviceChanged)
    }

    /// Forgets every bond ("Forget This Device" on an iPhone) and drops the
    /// links; returns how many bonds were forgotten. An accessory that comes
    /// back with its old keys cannot encrypt and must pair again.
    public func forgetBonds() async throws(TransportError) -> Int {
        let host = self.host
        let outcome = await serviceChanges.perform(
            timeout: Self.serviceChangeTimeout, expired: "failed timed-out", { id in host.send("forget-bonds \(id)") },
            failed: "failed host-gone")
        guard let count = Int(outcome) else { throw TransportError(.notSent, "bonds not forgotten: \(outcome.dropFirst(7))") }
        return count
    }

    private func changeService(_ verb: String, published: Bool, indicated: Bool) async throws(TransportError) -> BumbleServiceChange {
        let host = self.host
        let outcome = await serviceChanges.perform(
            timeout: Self.serviceChangeTimeout, expired: "failed timed-out",
            { id in host.send(indicated ? "\(verb) \(id)" : "\(verb) \(id) silent") }, failed: "failed host-gone")
        let fields = outcome.split(separator: " ").compactMap { Int($0) }
        guard fields.count == 3 else {
            throw TransportError(.notSent, "ANCS not \(published ? "published" : "unpublished"): \(outcome.dropFirst(7))")
        }
        return BumbleServiceChange(published: published, startHandle: fields[0], endHandle: fields[1], indicatedConsumers: fields[2],
                                   serviceChanged: indicated)
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

/// ANCS removed from or added to the GATT database, and whom Service Changed reached.
public struct BumbleServiceChange: Sendable, Hashable {
    /// Added (true) or removed (false).
    public var published: Bool
    /// The handle range Service Changed told of: ANCS's.
    public var startHandle: Int
    public var endHandle: Int
    /// The consumers subscribed to Service Changed that confirmed the indication.
    public var indicatedConsumers: Int
    /// Service Changed was indicated (false: the database changed in silence).
    public var serviceChanged: Bool

    public init(published: Bool, startHandle: Int, endHandle: Int, indicatedConsumers: Int, serviceChanged: Bool = true) {
        self.published = published
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.indicatedConsumers = indicatedConsumers
        self.serviceChanged = serviceChanged
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
