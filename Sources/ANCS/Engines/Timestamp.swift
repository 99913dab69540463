/// A moment, given to the engines by their caller: the time since an origin
/// the caller chooses. The core never reads a clock, so tests are exact and a
/// simulated hour runs in milliseconds (DESIGN: "Time is an input").
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var sinceOrigin: Duration

    public init(_ sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    public static let zero = Timestamp(.zero)

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.sinceOrigin < rhs.sinceOrigin }
    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp { Timestamp(lhs.sinceOrigin + rhs) }
    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration { lhs.sinceOrigin - rhs.sinceOrigin }

    public var description: String { "\(sinceOrigin)" }
}

/// The result of an ATT operation (a Control Point write, a CCCD write), as
/// the transport reports it to an engine.
public enum ATTResult: Hashable, Sendable {
    case success
    /// An ATT error response: an ANCS code (0xA0–0xA3) or a plain ATT code
    /// such as 0x05 Insufficient Authentication.
    case attError(ATTErrorCode)
    /// The transport failed without an ATT answer (link lost, D-Bus error).
    case transportFailure
}
