// The Current Time Service's two sides, sans-I/O: `CTSClient` (the
// accessory: reads the phone's time and zone when the link comes up,
// follows the time's notifications) and `CTSServer` (the phone: serves a
// clock and a zone, and notifies a change).
//
// CTSClient, per link:
//   linkUp ──► read Current Time, then Local Time Information (one read at
//   a time, each ending with its value, an error, or requestTimeout), and
//   Current Time's notifications on. A notification whose Adjust Reason says
//   the zone or daylight saving changed reads Local Time Information again.
//   A read that fails (unanswered, refused, the transport's) is tried again
//   1.5 × requestTimeout later, three times at most per link (a value that
//   is not one is not: the phone would send it again).
//   stop ──► Current Time's notifications off; nothing more read.

/// Why a CTS read failed.
public enum CTSClientError: Error, Hashable, Sendable {
    case attError(ATTErrorCode)
    case transportFailure
    case timedOut
    case invalid(MediaDecodingError)
}

/// What the CTS client tells its application.
public enum CTSClientEvent: Hashable, Sendable {
    /// The phone's local time, read or notified.
    case currentTime(CurrentTime)
    /// The phone's time zone.
    case localTimeInformation(LocalTimeInformation)
    case failed(CTSCharacteristic, CTSClientError)
}

/// What the CTS client asks its caller to do, in order.
public enum CTSClientAction: Hashable, Sendable {
    /// Write the CCCD to enable notifications (no answer needed).
    case subscribe(CTSCharacteristic)
    /// Write the CCCD to disable notifications (no answer needed).
    case unsubscribe(CTSCharacteristic)
    /// Read the value; answer with `readCompleted(token, …)`.
    case read(CTSCharacteristic, WriteToken)
    case emit(CTSClientEvent)
}

/// The accessory's CTS engine.
public struct CTSClient: Sendable {
    struct InFlight: Hashable, Sendable {
        var token: WriteToken
        var characteristic: CTSCharacteristic
        var deadline: Timestamp
        var abandoned = false
    }

    /// Reads tried again after a failure, per link.
    static let maximumRetries = 3

    var requestNanoseconds: Int64
    var retryNanoseconds: Int64
    var queue: [CTSCharacteristic] = []
    var inFlight: InFlight?
    var nextToken: UInt32 = 0
    var linked = false
    /// Reads that failed on this link and were asked again.
    var retries = 0
    /// What is read again at `retryAt`, after a failure.
    var retrying: (currentTime: Bool, zone: Bool) = (false, false)
    var retryAt: Timestamp?

    /// The phone's local time as last told, and when (the engine's clock).
    public private(set) var currentTime: CurrentTime?
    public private(set) var currentTimeTold: Timestamp?
    /// The phone's time zone as last read.
    public private(set) var localTimeInformation: LocalTimeInformation?

    /// A read that fails is tried again one and a half `requestTimeout`s
    /// later (15 s by default).
    public init(requestTimeout: Duration = .seconds(10)) {
        requestNanoseconds = Timestamp.nanoseconds(requestTimeout)
        // Derived, not a second Duration: each conversion from Duration costs
        // a firmware about 450 bytes of Cortex-M4 text.
        retryNanoseconds = requestNanoseconds + requestNanoseconds / 2
    }

    /// The phone's local time at `now`: the time told, plus the time since.
    public func phoneTime(at now: Timestamp) -> CurrentTime? {
        guard let currentTime, let told = currentTimeTold else { return nil }
        return currentTime.adding(seconds: max(now.nanoseconds - told.nanoseconds, 0) / 1_000_000_000)
    }

    public var nextDeadline: Timestamp? {
        guard let at = retryAt, let deadline = inFlight?.deadline else { return retryAt ?? inFlight?.deadline }
        return at < deadline ? at : deadline
    }

    /// The link is up and encrypted, with CTS found.
    public mutating func linkUp(at now: Timestamp) -> [CTSClientAction] {
        linked = true
        queue = [.currentTime, .localTimeInformation]
        retries = 0
        retrying = (false, false)
        retryAt = nil
        return pump(at: now) + [.subscribe(.currentTime)]
    }

    public mutating func linkDown(at now: Timestamp) -> [CTSClientAction] {
        linked = false
        queue = []
        inFlight = nil
        retrying = (false, false)
        retryAt = nil
        return []
    }

    /// The accessory leaves the link's CTS: notifications off, no more
    /// reads; a read on the air is not told. `linkUp` starts again.
    public mutating func stop(at now: Timestamp) -> [CTSClientAction] {
        guard linked else { return [] }
        linked = false
        queue = []
        retrying = (false, false)
        retryAt = nil
        inFlight?.abandoned = true
        return [.unsubscribe(.currentTime)]
    }

    public mutating func readCompleted(_ token: WriteToken, _ result: ATTReadResult, at now: Timestamp) -> [CTSClientAction] {
        guard let flight = inFlight, flight.token == token else { return [] }
        inFlight = nil
        var actions: [CTSClientAction] = []
        if !flight.abandoned {
            switch result {
            case .value(let bytes): actions += take(flight.characteristic, bytes, at: now)
            case .attError(let code): actions += failed(flight.characteristic, .attError(code), at: now)
            case .transportFailure: actions += failed(flight.characteristic, .transportFailure, at: now)
            }
        }
        return actions + pump(at: now)
    }

    public mutating func received(currentTime bytes: [UInt8], at now: Timestamp) -> [CTSClientAction] {
        guard linked else { return [] }
        var actions = take(.currentTime, bytes, at: now)
        if let reason = currentTime?.adjustReason, !reason.isDisjoint(with: [.timeZoneChange, .daylightSavingChange]),
           !queue.contains(.localTimeInformation) {
            queue.append(.localTimeInformation)
            actions += pump(at: now)
        }
        return actions
    }

    public mutating func tick(at now: Timestamp) -> [CTSClientAction] {
        // The reads that failed, once their time to be tried again has come.
        if let at = retryAt, at <= now {
            // Each characteristic queued once (a zone change may have queued it meanwhile): at most two waiting.
            if retrying.currentTime && !queue.contains(.currentTime) { queue.append(.currentTime) }
            if retrying.zone && !queue.contains(.localTimeInformation) { queue.append(.localTimeInformation) }
            retrying = (false, false)
            retryAt = nil
        }
        guard var flight = inFlight, flight.deadline <= now else { return pump(at: now) }
        if flight.abandoned {
            inFlight = nil
            return pump(at: now)
        }
        flight.abandoned = true  // the slot stays taken until ATT's own timeout
        flight.deadline = now.adding(nanoseconds: 2 * requestNanoseconds)
        inFlight = flight
        return failed(flight.characteristic, .timedOut, at: now)
    }

    /// A read failed: told, and tried again after the retry interval unless reads failed too often on this link.
    mutating func failed(_ characteristic: CTSCharacteristic, _ error: CTSClientError, at now: Timestamp) -> [CTSClientAction] {
        if retries < Self.maximumRetries {
            retries += 1
            if characteristic == .currentTime { retrying.currentTime = true } else { retrying.zone = true }
            retryAt = now.adding(nanoseconds: retryNanoseconds)
        }
        return [.emit(.failed(characteristic, error))]
    }

    mutating func take(_ characteristic: CTSCharacteristic, _ bytes: [UInt8], at now: Timestamp) -> [CTSClientAction] {
        do throws(MediaDecodingError) {
            switch characteristic {
            case .currentTime:
                let time = try CurrentTime.decode(bytes)
                currentTime = time
                currentTimeTold = now
                return [.emit(.currentTime(time))]
            case .localTimeInformation:
                let zone = try LocalTimeInformation.decode(bytes)
                localTimeInformation = zone
                return [.emit(.localTimeInformation(zone))]
            }
        } catch {
            return [.emit(.failed(characteristic, .invalid(error)))]
        }
    }

    mutating func pump(at now: Timestamp) -> [CTSClientAction] {
        guard linked, inFlight == nil, !queue.isEmpty else { return [] }
        let characteristic = queue.removeFirst()
        nextToken &+= 1
        let token = WriteToken(rawValue: nextToken)
        inFlight = InFlight(token: token, characteristic: characteristic, deadline: now.adding(nanoseconds: requestNanoseconds))
        return [.read(characteristic, token)]
    }
}

/// What the CTS server asks its caller to do.
public enum CTSServerAction: Hashable, Sendable {
    /// Send one GATT notification of this characteristic to this accessory.
    case notify(ConnectionID, CTSCharacteristic, [UInt8])
}

/// The phone's CTS engine: a clock set at a moment and running since, and a zone.
public struct CTSServer: Sendable {
    var time: CurrentTime
    var timeSet: Timestamp
    public private(set) var localTimeInformation: LocalTimeInformation
    var subscribers: [ConnectionID] = []

    public init(time: CurrentTime, at now: Timestamp, localTimeInformation: LocalTimeInformation) {
        self.time = time
        timeSet = now
        self.localTimeInformation = localTimeInformation
    }

    /// The clock at `now`.
    public func currentTime(at now: Timestamp) -> CurrentTime {
        var running = time.adding(seconds: max(now.nanoseconds - timeSet.nanoseconds, 0) / 1_000_000_000)
        running.adjustReason = []
        return running
    }

    public mutating func setSubscription(_ connection: ConnectionID, enabled: Bool) {
        subscribers.removeAll { $0 == connection }
        if enabled { subscribers.append(connection) }
    }

    public mutating func linkDown(_ connection: ConnectionID) { subscribers.removeAll { $0 == connection } }

    public func read(_ characteristic: CTSCharacteristic, at now: Timestamp) -> ATTReadResult {
        switch characteristic {
        case .currentTime: .value(currentTime(at: now).encode())
        case .localTimeInformation: .value(localTimeInformation.encode())
        }
    }

    /// Sets the clock (and the zone): each subscriber is notified, with the
    /// Adjust Reason given (the zone's change added when it changed).
    public mutating func set(_ time: CurrentTime, zone: LocalTimeInformation? = nil, at now: Timestamp) -> [CTSServerAction] {
        self.time = time
        timeSet = now
        var told = time
        if let zone, zone != localTimeInformation {
            localTimeInformation = zone
            told.adjustReason.insert(.timeZoneChange)
        }
        return subscribers.map { .notify($0, .currentTime, told.encode()) }
    }
}

extension CurrentTime {
    /// This time `seconds` later, across days, months and years (the
    /// proleptic Gregorian calendar). The day of the week follows when
    /// known; fractions and the Adjust Reason are kept. An unknown date
    /// (year, month or day 0) only moves its time of day.
    public func adding(seconds: Int64) -> CurrentTime {
        guard seconds > 0 else { return self }
        var result = self
        let total = Int64(hour * 3600 + minute * 60 + second) + seconds
        let days = total / 86_400
        let inDay = Int(total % 86_400)
        result.hour = inDay / 3600
        result.minute = inDay / 60 % 60
        result.second = inDay % 60
        guard year != 0, month != 0, day != 0, days > 0 else { return result }
        let moved = CurrentTime.civil(fromDays: CurrentTime.days(year: year, month: month, day: day) + days)
        result.year = moved.year
        result.month = moved.month
        result.day = moved.day
        if dayOfWeek != 0 { result.dayOfWeek = Int((Int64(dayOfWeek - 1) + days) % 7) + 1 }
        return result
    }

    /// Days since 1970-01-01 (H. Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthIndex + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        let month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}
