// AMSClient — the accessory's side of the Apple Media Service: a sans-I/O
// engine, as `Consumer` is for ANCS. It subscribes, registers for the
// attributes its configuration names, keeps what is playing (`nowPlaying`),
// reads a value the phone cut in full, and performs remote commands.
//
// States (`phase`):
//
//   idle ──linkUp, serviceChanged(published: true)──► subscribing
//   subscribing ──Entity Update's CCCD written──► registering
//   registering ──every registration answered──► active (.ready)
//   subscribing, registering ──refused or unanswered──► waiting (.setupFailed)
//   waiting ──retry deadline (retryInterval, doubling to 16×)──► subscribing
//   any ──linkDown, serviceChanged(published: false), stop──► idle (.ended)
//
// One ATT operation at a time (`queue`, `inFlight`): registrations first,
// then commands and the reads of cut values in the order asked. An
// operation ends with its answer, at its timeout (requestTimeout), or with
// the session. One that timed out keeps the slot, unanswered, until its
// answer comes or ATT's own 30 s pass (3 × requestTimeout), so that two
// requests are never outstanding on the link. Every command asked ends
// exactly once, with `.commandCompleted`.
//
// Errors the phone may answer (Apple's AMS specification): 0xA0 Invalid
// State to a registration means the phone does not see Entity Update's
// notifications enabled; the client writes the CCCD again, once, then
// registers again. 0xA2 Absent Attribute to a read means an empty value.

/// How the AMS client behaves.
public struct AMSClientConfiguration: Hashable, Sendable {
    /// What to register for, one registration per entity (default: every attribute AMS defines).
    public var registrations: [EntityRegistration]
    /// Read a value the phone cut in full (Entity Attribute), after telling the cut one.
    public var readsTruncatedValues: Bool
    /// A value read in full is kept to this many bytes.
    public var maximumValueLength: Int
    /// Commands waiting for the link at most; more fail `.busy`.
    public var maximumQueuedCommands: Int
    var requestNanoseconds: Int64
    var retryNanoseconds: Int64

    /// An operation unanswered this long fails (default 10 s).
    public var requestTimeout: Duration {
        get { .nanoseconds(requestNanoseconds) }
        set { requestNanoseconds = Timestamp.nanoseconds(newValue) }
    }
    /// A refused or unanswered set-up is tried again after this, doubling to 16 times it (default 15 s).
    public var retryInterval: Duration {
        get { .nanoseconds(retryNanoseconds) }
        set { retryNanoseconds = Timestamp.nanoseconds(newValue) }
    }

    public init(registrations: [EntityRegistration] = EntityRegistration.all, readsTruncatedValues: Bool = true,
                maximumValueLength: Int = 512, maximumQueuedCommands: Int = 8,
                requestTimeout: Duration = .seconds(10), retryInterval: Duration = .seconds(15)) {
        self.registrations = registrations
        self.readsTruncatedValues = readsTruncatedValues
        self.maximumValueLength = maximumValueLength
        self.maximumQueuedCommands = maximumQueuedCommands
        requestNanoseconds = Timestamp.nanoseconds(requestTimeout)
        retryNanoseconds = Timestamp.nanoseconds(retryInterval)
    }
}

/// Names one command asked of `AMSClient.perform`.
public struct AMSRequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "\(rawValue)" }
}

/// A command asked: its ID, and what to do now.
public struct AMSRequest: Hashable, Sendable {
    public var id: AMSRequestID
    public var actions: [AMSClientAction]
}

/// Why a command, or the set-up, failed.
public enum AMSClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No AMS session: the link is down, AMS is not published, or it is being set up again.
    case notReady
    /// The player does not support the command now (its Remote Command list); nothing was written.
    case unsupported
    /// `maximumQueuedCommands` are waiting already.
    case busy
    /// The phone answered with this ATT error.
    case attError(ATTErrorCode)
    /// The transport failed without an ATT answer.
    case transportFailure
    /// No answer within `requestTimeout`.
    case timedOut
    /// The session ended before the answer.
    case sessionEnded

    public var description: String {
        switch self {
        case .notReady: "AMS is not set up"
        case .unsupported: "the player does not support this command now"
        case .busy: "too many commands waiting"
        case .attError(let code): AMSErrorCode(code).map { "\($0)" } ?? "\(code)"
        case .transportFailure: "the transport failed"
        case .timedOut: "no answer in time"
        case .sessionEnded: "the session ended"
        }
    }
}

/// Why an AMS session ended.
public enum AMSEndReason: Hashable, Sendable {
    case linkDown
    case serviceUnpublished
    case stopped
}

/// What the AMS client tells its application.
public enum AMSClientEvent: Hashable, Sendable {
    /// Subscribed and registered: updates follow.
    case ready
    /// The commands the player supports now.
    case supportedCommands([RemoteCommandID])
    /// An attribute's value. `isTruncated`: cut by the phone; the whole
    /// value follows when `readsTruncatedValues` (and the read succeeds).
    case updated(MediaAttribute, AttributeValue, isTruncated: Bool)
    /// A command asked of `perform` ended: nil on success.
    case commandCompleted(AMSRequestID, AMSClientError?)
    /// Subscribing or registering failed; tried again after the retry interval.
    case setupFailed(AMSClientError)
    /// An Entity Update notification that is not one (ignored).
    case invalidUpdate(MediaDecodingError)
    case ended(AMSEndReason)
}

/// What the AMS client asks its caller to do, in order.
public enum AMSClientAction: Hashable, Sendable {
    /// Write the characteristic's CCCD to enable notifications; answer with `subscriptionCompleted`.
    case subscribe(AMSCharacteristic)
    /// Write the CCCD to disable notifications (no answer needed).
    case unsubscribe(AMSCharacteristic)
    /// Write with response; answer with `writeCompleted(token, …)`.
    case write(AMSCharacteristic, [UInt8], WriteToken)
    /// Read the whole value (a long read); answer with `readCompleted(token, …)`.
    case read(AMSCharacteristic, WriteToken)
    /// Tell the application.
    case emit(AMSClientEvent)
}

/// What is playing, as the phone last told it.
public struct NowPlaying: Hashable, Sendable {
    public var playerName: AttributeValue?
    public var playback: PlaybackInfo?
    /// When `playback` was told (the engine's clock): `elapsed(at:)` counts from it.
    public var playbackTold: Timestamp?
    /// 0 to 1.
    public var volume: Double?
    public var queueIndex: Int?
    public var queueCount: Int?
    public var shuffleMode: QueueMode?
    public var repeatMode: QueueMode?
    public var artist: AttributeValue?
    public var album: AttributeValue?
    public var title: AttributeValue?
    /// Seconds.
    public var duration: Double?

    public init() {}

    /// Whether any attribute is known.
    public var isEmpty: Bool { self == NowPlaying() }

    /// Seconds into the track at `now`: the elapsed time told, plus the
    /// time since at the playback rate, within 0 and the duration. Nil when
    /// nothing is playing or paused.
    public func elapsed(at now: Timestamp) -> Double? {
        guard let playback, let told = playbackTold else { return nil }
        var elapsed = playback.elapsed
        if now > told { elapsed += playback.rate * Double(now.nanoseconds - told.nanoseconds) / 1e9 }
        if let duration, duration > 0 { elapsed = min(elapsed, duration) }
        return max(elapsed, 0)
    }

    /// Takes an attribute's value: a known attribute is read into its
    /// field (an empty or unreadable value clears it); others are ignored.
    public mutating func apply(_ attribute: MediaAttribute, _ value: AttributeValue, at now: Timestamp) {
        let text: AttributeValue? = value.isEmpty ? nil : value
        func number() -> Double? { value.withBytes { MediaNumber.decimal($0) } }
        func integer() -> Int? { value.withBytes { MediaNumber.integer($0) } }
        switch attribute {
        case .playerName: playerName = text
        case .playbackInfo:
            playback = PlaybackInfo(value)
            playbackTold = playback == nil ? nil : now
        case .volume: volume = number()
        case .queueIndex: queueIndex = integer()
        case .queueCount: queueCount = integer()
        case .shuffleMode: shuffleMode = integer().map { QueueMode(rawValue: $0) }
        case .repeatMode: repeatMode = integer().map { QueueMode(rawValue: $0) }
        case .artist: artist = text
        case .album: album = text
        case .title: title = text
        case .duration: duration = number()
        default: break
        }
    }
}

/// The accessory's AMS engine (see the state diagram at the top of the file).
public struct AMSClient: Sendable {
    enum Phase: Hashable, Sendable {
        case idle
        case subscribing
        case registering
        case active
        case waiting(until: Timestamp)
    }

    enum Purpose: Hashable, Sendable {
        case registration
        case command(AMSRequestID)
        case select(MediaAttribute)
        case read(MediaAttribute)
    }

    struct Operation: Hashable, Sendable {
        var characteristic: AMSCharacteristic
        var bytes: [UInt8]
        var purpose: Purpose
    }

    struct InFlight: Hashable, Sendable {
        var token: WriteToken
        var operation: Operation
        var deadline: Timestamp
        /// Timed out: kept only so that nothing else is written before its answer.
        var abandoned = false
    }

    public let configuration: AMSClientConfiguration
    var phase = Phase.idle
    var linked = false
    var published = true
    var queue: [Operation] = []
    var inFlight: InFlight?
    var nextToken: UInt32 = 0
    var nextRequest: UInt32 = 0
    /// Entity Update's CCCD written again after a 0xA0, this set-up.
    var resubscribedForInvalidState = false
    /// Set-ups failed in a row (the retry wait doubles with each, to 16×).
    var failures: UInt8 = 0

    /// What is playing.
    public private(set) var nowPlaying = NowPlaying()
    /// The commands the player supports now; nil until the phone says.
    public private(set) var supportedCommands: [RemoteCommandID]?

    public init(configuration: AMSClientConfiguration = AMSClientConfiguration()) {
        self.configuration = configuration
    }

    /// Subscribed and registered.
    public var isReady: Bool { phase == .active }

    var isSettingUpOrReady: Bool { phase == .subscribing || phase == .registering || phase == .active }

    /// The earliest moment `tick` has work.
    public var nextDeadline: Timestamp? {
        var earliest = inFlight?.deadline
        if case .waiting(let until) = phase, earliest == nil || until < earliest! { earliest = until }
        return earliest
    }

    // MARK: - The link and the service

    /// The link is up and encrypted, and AMS is published (as far as known).
    public mutating func linkUp(at now: Timestamp) -> [AMSClientAction] {
        // A link up without the last one's end (a stack that missed it): that session ends first.
        let ended = end(.linkDown)
        linked = true
        guard published else { return ended }
        return ended + start()
    }

    public mutating func linkDown(at now: Timestamp) -> [AMSClientAction] {
        linked = false
        return end(.linkDown)
    }

    /// AMS appeared (`published`) or disappeared (Service Changed).
    public mutating func serviceChanged(published: Bool, at now: Timestamp) -> [AMSClientAction] {
        guard published != self.published else { return [] }
        self.published = published
        if !published { return end(.serviceUnpublished) }
        return linked ? start() : []
    }

    /// Ends the session: notifications off, every command ended.
    public mutating func stop(at now: Timestamp) -> [AMSClientAction] {
        guard phase != .idle else { return [] }
        return [.unsubscribe(.entityUpdate), .unsubscribe(.remoteCommand)] + end(.stopped)
    }

    /// Subscribes; `fresh` for a new link or service (a retry keeps what the last attempts learned).
    mutating func start(fresh: Bool = true) -> [AMSClientAction] {
        phase = .subscribing
        if fresh {
            resubscribedForInvalidState = false
            failures = 0
        }
        return [.subscribe(.remoteCommand), .subscribe(.entityUpdate)]
    }

    mutating func end(_ reason: AMSEndReason) -> [AMSClientAction] {
        guard phase != .idle else { return [] }
        var actions: [AMSClientAction] = []
        if case .command(let id)? = inFlight.flatMap({ $0.abandoned ? nil : $0.operation.purpose }) {
            actions.append(.emit(.commandCompleted(id, .sessionEnded)))
        }
        for operation in queue {
            if case .command(let id) = operation.purpose { actions.append(.emit(.commandCompleted(id, .sessionEnded))) }
        }
        queue = []
        if reason == .linkDown {
            inFlight = nil  // the link's operations are gone with it
        } else if var flight = inFlight, !flight.abandoned {
            // Still on the air: its slot is kept until its answer or ATT's 30 s,
            // so the next session's first operation never overlaps it.
            flight.abandoned = true
            flight.deadline = flight.deadline.adding(nanoseconds: 2 * configuration.requestNanoseconds)
            inFlight = flight
        }
        phase = .idle
        nowPlaying = NowPlaying()
        supportedCommands = nil
        actions.append(.emit(.ended(reason)))
        return actions
    }

    // MARK: - Answers from the transport

    public mutating func subscriptionCompleted(_ characteristic: AMSCharacteristic, _ result: ATTResult, at now: Timestamp) -> [AMSClientAction] {
        guard phase == .subscribing else { return [] }
        switch characteristic {
        case .remoteCommand, .entityAttribute:
            // Without Remote Command's notifications, commands still work:
            // the supported list stays unknown (every command is written).
            return []
        case .entityUpdate:
            guard result == .success else { return setupFailed(error(result), at: now) }
            phase = .registering
            queue.insert(contentsOf: configuration.registrations.map {
                Operation(characteristic: .entityUpdate, bytes: $0.encode(), purpose: .registration)
            }, at: 0)
            return pump(at: now)
        }
    }

    public mutating func writeCompleted(_ token: WriteToken, _ result: ATTResult, at now: Timestamp) -> [AMSClientAction] {
        guard let flight = inFlight, flight.token == token else { return [] }  // stale: an ended session's
        inFlight = nil
        var actions: [AMSClientAction] = []
        if !flight.abandoned {
            switch flight.operation.purpose {
            case .registration:
                if result == .attError(AMSErrorCode.invalidState.code) && !resubscribedForInvalidState {
                    // The phone does not see Entity Update's notifications on: write the CCCD again, then register again.
                    resubscribedForInvalidState = true
                    queue.removeAll { $0.purpose == .registration }
                    phase = .subscribing
                    return [.subscribe(.entityUpdate)]
                }
                guard result == .success else { return setupFailed(error(result), at: now) }
                if phase == .registering && !queue.contains(where: { $0.purpose == .registration }) {
                    phase = .active
                    failures = 0
                    actions.append(.emit(.ready))
                }
            case .command(let id):
                actions.append(.emit(.commandCompleted(id, result == .success ? nil : error(result))))
            case .select(let attribute):
                // Without the selection, the read would be of another attribute: drop it.
                if result != .success, let next = queue.first, next.purpose == .read(attribute) { queue.removeFirst() }
            case .read:
                break
            }
        }
        return actions + pump(at: now)
    }

    public mutating func readCompleted(_ token: WriteToken, _ result: ATTReadResult, at now: Timestamp) -> [AMSClientAction] {
        guard let flight = inFlight, flight.token == token else { return [] }
        inFlight = nil
        var actions: [AMSClientAction] = []
        if !flight.abandoned, case .read(let attribute) = flight.operation.purpose {
            var value: AttributeValue?
            switch result {
            case .value(let bytes): value = AttributeValue(bytes: Array(bytes.prefix(max(configuration.maximumValueLength, 0))))
            case .attError(let code) where code == AMSErrorCode.absentAttribute.code: value = .empty
            default: value = nil  // the cut value stands
            }
            if let value {
                nowPlaying.apply(attribute, value, at: now)
                actions.append(.emit(.updated(attribute, value, isTruncated: false)))
            }
        }
        return actions + pump(at: now)
    }

    // MARK: - Notifications from the phone

    public mutating func received(remoteCommand bytes: [UInt8], at now: Timestamp) -> [AMSClientAction] {
        guard phase != .idle else { return [] }
        let commands = RemoteCommandList.decode(bytes)
        supportedCommands = commands
        return [.emit(.supportedCommands(commands))]
    }

    public mutating func received(entityUpdate bytes: [UInt8], at now: Timestamp) -> [AMSClientAction] {
        guard phase != .idle else { return [] }
        let update: EntityUpdate
        do { update = try EntityUpdate.decode(bytes) } catch { return [.emit(.invalidUpdate(error))] }
        nowPlaying.apply(update.attribute, update.value, at: now)
        var actions: [AMSClientAction] = [.emit(.updated(update.attribute, update.value, isTruncated: update.isTruncated))]
        // Read in full only what was registered (at most one read queued
        // per attribute): a phone that sends cut values of attributes
        // nobody asked for cannot grow the queue.
        if update.isTruncated && configuration.readsTruncatedValues && isRegistered(update.attribute)
            && !queue.contains(where: { $0.purpose == .select(update.attribute) }) {
            queue.append(Operation(characteristic: .entityAttribute, bytes: update.attribute.encodeSelection(), purpose: .select(update.attribute)))
            queue.append(Operation(characteristic: .entityAttribute, bytes: [], purpose: .read(update.attribute)))
            actions += pump(at: now)
        }
        return actions
    }

    // MARK: - Commands

    /// Asks the player to perform `command`. It ends with `.commandCompleted`
    /// (at once when it cannot be written: no session, not supported now, too many waiting).
    public mutating func perform(_ command: RemoteCommandID, at now: Timestamp) -> AMSRequest {
        nextRequest &+= 1
        let id = AMSRequestID(rawValue: nextRequest)
        let refusal: AMSClientError?
        if !isSettingUpOrReady {
            refusal = .notReady
        } else if let supportedCommands, !supportedCommands.contains(command) {
            refusal = .unsupported
        } else if queue.count(where: { $0.purpose != .registration }) >= configuration.maximumQueuedCommands {
            refusal = .busy
        } else {
            refusal = nil
        }
        if let refusal { return AMSRequest(id: id, actions: [.emit(.commandCompleted(id, refusal))]) }
        queue.append(Operation(characteristic: .remoteCommand, bytes: [command.rawValue], purpose: .command(id)))
        return AMSRequest(id: id, actions: pump(at: now))
    }

    // MARK: - Time

    public mutating func tick(at now: Timestamp) -> [AMSClientAction] {
        var actions: [AMSClientAction] = []
        if var flight = inFlight, flight.deadline <= now {
            if flight.abandoned {
                inFlight = nil  // ATT's own timeout has passed: the slot is free
            } else {
                flight.abandoned = true
                flight.deadline = now.adding(nanoseconds: 2 * configuration.requestNanoseconds)
                inFlight = flight
                switch flight.operation.purpose {
                case .registration: return setupFailed(.timedOut, at: now)
                case .command(let id): actions.append(.emit(.commandCompleted(id, .timedOut)))
                case .select(let attribute):
                    if let next = queue.first, next.purpose == .read(attribute) { queue.removeFirst() }
                case .read: break
                }
            }
        }
        if case .waiting(let until) = phase, until <= now {
            actions += linked && published ? start(fresh: false) : []
        }
        return actions + pump(at: now)
    }

    // MARK: - Inside

    func isRegistered(_ attribute: MediaAttribute) -> Bool {
        configuration.registrations.contains { $0.entity == attribute.entity && $0.attributeIDs.contains(attribute.attributeID) }
    }

    func error(_ result: ATTResult) -> AMSClientError {
        switch result {
        case .success: .transportFailure  // not reached: callers pass failures
        case .attError(let code): .attError(code)
        case .transportFailure: .transportFailure
        }
    }

    /// The set-up failed: commands end, and it is tried again later.
    mutating func setupFailed(_ error: AMSClientError, at now: Timestamp) -> [AMSClientAction] {
        var actions: [AMSClientAction] = []
        for operation in queue {
            if case .command(let id) = operation.purpose { actions.append(.emit(.commandCompleted(id, .notReady))) }
        }
        queue = []
        let wait = configuration.retryNanoseconds << Int64(min(failures, 4))
        failures = min(failures &+ 1, 4)
        phase = .waiting(until: now.adding(nanoseconds: wait))
        actions.append(.emit(.setupFailed(error)))
        return actions
    }

    /// Writes or reads the next operation when the slot is free.
    mutating func pump(at now: Timestamp) -> [AMSClientAction] {
        guard inFlight == nil, !queue.isEmpty else { return [] }
        // Registrations go only while registering; the rest only once active.
        guard phase == .registering || phase == .active else { return [] }
        if phase == .registering && queue[0].purpose != .registration { return [] }
        let operation = queue.removeFirst()
        nextToken &+= 1
        let token = WriteToken(rawValue: nextToken)
        inFlight = InFlight(token: token, operation: operation, deadline: now.adding(nanoseconds: configuration.requestNanoseconds))
        if case .read = operation.purpose { return [.read(operation.characteristic, token)] }
        return [.write(operation.characteristic, operation.bytes, token)]
    }
}
