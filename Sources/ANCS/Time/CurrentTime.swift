// The Current Time Service (Bluetooth SIG, service 0x1805), as an iPhone
// serves it: the phone's clock (Current Time, 0x2A2B: read, notify) and its
// time zone (Local Time Information, 0x2A0F: read). An accessory reads both
// at the start of a session; with the zone, an ANCS Date (local time, no
// zone) can be shown as an instant.

/// The CTS service and characteristic UUIDs.
public enum CTSUUID {
    public static let service = BluetoothUUID(uuid16: 0x1805)
    public static let currentTime = BluetoothUUID(uuid16: 0x2A2B)
    public static let localTimeInformation = BluetoothUUID(uuid16: 0x2A0F)
}

/// The two CTS characteristics the engines use.
public enum CTSCharacteristic: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case currentTime
    case localTimeInformation

    public var uuid: BluetoothUUID {
        switch self {
        case .currentTime: CTSUUID.currentTime
        case .localTimeInformation: CTSUUID.localTimeInformation
        }
    }

    public init?(uuid: BluetoothUUID) {
        switch uuid {
        case CTSUUID.currentTime: self = .currentTime
        case CTSUUID.localTimeInformation: self = .localTimeInformation
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .currentTime: "Current Time"
        case .localTimeInformation: "Local Time Information"
        }
    }

    /// `currentTime`, `localTimeInformation` (JSON).
    public var identifier: String {
        switch self {
        case .currentTime: "currentTime"
        case .localTimeInformation: "localTimeInformation"
        }
    }
}

/// Why the clock was set (the Current Time's Adjust Reason). Bits 4–7 reserved: kept.
public struct AdjustReason: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let manualTimeUpdate = AdjustReason(rawValue: 1 << 0)
    public static let externalReferenceTimeUpdate = AdjustReason(rawValue: 1 << 1)
    public static let timeZoneChange = AdjustReason(rawValue: 1 << 2)
    public static let daylightSavingChange = AdjustReason(rawValue: 1 << 3)
}

/// The Current Time characteristic's value (10 bytes): Exact Time 256 (a
/// local date and time, the day of the week and 1/256 s) and the Adjust
/// Reason. The time is the phone's local time.
public struct CurrentTime: Hashable, Sendable, CustomStringConvertible {
    /// 1582–9999, or 0 when the phone does not know it.
    public var year: Int
    /// 1–12, or 0 unknown.
    public var month: Int
    /// 1–31, or 0 unknown.
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int
    /// 1 Monday … 7 Sunday, 0 unknown.
    public var dayOfWeek: Int
    /// Fractions of a second, in 1/256 s.
    public var fractions256: Int
    public var adjustReason: AdjustReason

    public static let length = 10

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int,
                dayOfWeek: Int = 0, fractions256: Int = 0, adjustReason: AdjustReason = []) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
        self.dayOfWeek = dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    /// Reads exactly 10 bytes; each field in its range (hours 0–23, minutes
    /// and seconds 0–59, the others 0 for unknown), or the error names it.
    public static func decode(_ bytes: [UInt8]) throws(MediaDecodingError) -> CurrentTime {
        guard bytes.count == length else {
            throw MediaDecodingError(.currentTimeLength(actual: bytes.count), at: min(bytes.count, length))
        }
        let time = CurrentTime(
            year: Int(bytes[0]) | Int(bytes[1]) << 8, month: Int(bytes[2]), day: Int(bytes[3]),
            hour: Int(bytes[4]), minute: Int(bytes[5]), second: Int(bytes[6]),
            dayOfWeek: Int(bytes[7]), fractions256: Int(bytes[8]), adjustReason: AdjustReason(rawValue: bytes[9]))
        if time.year != 0 && !(1582...9999).contains(time.year) { throw MediaDecodingError(.currentTimeField("year"), at: 0) }
        if time.month > 12 { throw MediaDecodingError(.currentTimeField("month"), at: 2) }
        if time.day > 31 { throw MediaDecodingError(.currentTimeField("day"), at: 3) }
        if time.hour > 23 { throw MediaDecodingError(.currentTimeField("hour"), at: 4) }
        if time.minute > 59 { throw MediaDecodingError(.currentTimeField("minute"), at: 5) }
        if time.second > 59 { throw MediaDecodingError(.currentTimeField("second"), at: 6) }
        if time.dayOfWeek > 7 { throw MediaDecodingError(.currentTimeField("day of week"), at: 7) }
        return time
    }

    public func encode() -> [UInt8] {
        func byte(_ value: Int) -> UInt8 { UInt8(truncatingIfNeeded: value) }
        return [byte(year), byte(year >> 8), byte(month), byte(day), byte(hour), byte(minute), byte(second),
                byte(dayOfWeek), byte(fractions256), adjustReason.rawValue]
    }

    /// The same moment as an ANCS Date (to the second).
    public var date: ANCSDate { ANCSDate(year: year, month: month, day: day, hour: hour, minute: minute, second: second) }

    /// `2026-11-28 14:53:07`.
    public var description: String {
        padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + " "
            + padded(hour, 2) + ":" + padded(minute, 2) + ":" + padded(second, 2)
    }
}

/// The Local Time Information characteristic's value (2 bytes): the time
/// zone, in 15-minute steps from UTC (−48…56; −128 unknown), and the
/// daylight saving offset in 15-minute steps (0, 2, 4, 8; 255 unknown).
public struct LocalTimeInformation: Hashable, Sendable, CustomStringConvertible {
    public var timeZone: Int8
    public var dstOffset: UInt8

    public static let length = 2
    public static let unknownTimeZone: Int8 = -128
    public static let unknownDSTOffset: UInt8 = 255

    public init(timeZone: Int8, dstOffset: UInt8) {
        self.timeZone = timeZone
        self.dstOffset = dstOffset
    }

    /// The zone of this UTC offset in minutes (a multiple of 15), with no daylight saving offset.
    public init(utcOffsetMinutes: Int, dstOffsetMinutes: Int = 0) {
        timeZone = Int8(clamping: (utcOffsetMinutes - dstOffsetMinutes) / 15)
        dstOffset = UInt8(clamping: dstOffsetMinutes / 15)
    }

    public static func decode(_ bytes: [UInt8]) throws(MediaDecodingError) -> LocalTimeInformation {
        guard bytes.count == length else {
            throw MediaDecodingError(.localTimeInformationLength(actual: bytes.count), at: min(bytes.count, length))
        }
        return LocalTimeInformation(timeZone: Int8(bitPattern: bytes[0]), dstOffset: bytes[1])
    }

    public func encode() -> [UInt8] { [UInt8(bitPattern: timeZone), dstOffset] }

    /// Local time minus UTC, in minutes, daylight saving included: nil when
    /// the phone does not know its zone. (An unknown daylight saving offset
    /// counts as none.)
    public var utcOffsetMinutes: Int? {
        guard timeZone != LocalTimeInformation.unknownTimeZone, (-48...56).contains(timeZone) else { return nil }
        let dst = dstOffset == LocalTimeInformation.unknownDSTOffset ? 0 : Int(dstOffset)
        return (Int(timeZone) + dst) * 15
    }

    /// `+01:00`, `-03:30`, `Z` for UTC; `?` when unknown.
    public var description: String {
        guard let offset = utcOffsetMinutes else { return "?" }
        return LocalTimeInformation.offsetText(offset)
    }

    static func offsetText(_ minutes: Int) -> String {
        if minutes == 0 { return "Z" }
        let magnitude = abs(minutes)
        return (minutes < 0 ? "-" : "+") + padded(magnitude / 60, 2) + ":" + padded(magnitude % 60, 2)
    }
}

extension ANCSDate {
    /// ISO 8601 with the phone's zone, `2026-11-28T14:53:07+01:00`: an
    /// ANCS Date is the phone's local time, and CTS says which zone that
    /// is. Nil when the zone is unknown.
    public func iso8601(in zone: LocalTimeInformation) -> String? {
        guard let offset = zone.utcOffsetMinutes else { return nil }
        return description + LocalTimeInformation.offsetText(offset)
    }
}

/// A characteristic of AMS or CTS: what a transport of both, and a capture, name.
public enum MediaCharacteristic: Hashable, Sendable, CustomStringConvertible {
    case ams(AMSCharacteristic)
    case cts(CTSCharacteristic)

    public var identifier: String {
        switch self {
        case .ams(let characteristic): characteristic.identifier
        case .cts(let characteristic): characteristic.identifier
        }
    }

    public var description: String {
        switch self {
        case .ams(let characteristic): "AMS \(characteristic)"
        case .cts(let characteristic): "CTS \(characteristic)"
        }
    }
}
