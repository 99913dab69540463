/// A moment, given to the engines by their caller: the time since an origin
/// the caller chooses. The core never reads a clock, so tests are exact and a
/// simulated hour runs in milliseconds.
///
/// Kept as whole nanoseconds in 64 bits (±292 years from the origin;
/// beyond, a moment or a sum saturates): every deadline an engine keeps,
/// adds and compares is then one machine integer, where a `Duration` is
/// 128-bit attoseconds, more code in a consumer's firmware
/// (BENCHMARKS.md section 5, "Why the core is shaped for size").
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the origin.
    var nanoseconds: Int64

    public var sinceOrigin: Duration {
        get { .nanoseconds(nanoseconds) }
        set { nanoseconds = Timestamp.nanoseconds(newValue) }
    }

    /// `sinceOrigin` to the nanosecond (less than a nanosecond dropped,
    /// toward zero).
    public init(_ sinceOrigin: Duration) { nanoseconds = Timestamp.nanoseconds(sinceOrigin) }

    /// As a firmware's clock gives it, without a `Duration`.
    public init(milliseconds: Int64) {
        let (product, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        nanoseconds = overflow ? (milliseconds < 0 ? .min : .max) : product
    }

    init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// A duration in whole nanoseconds, saturated to 64 bits.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, sumOverflow) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow || sumOverflow ? (seconds < 0 ? .min : .max) : sum
    }

    public static let zero = Timestamp(nanoseconds: 0)

    /// This moment plus `nanoseconds`, saturated. (Out of line: one copy
    /// for the engines' many deadlines.)
    @inline(never)
    func adding(nanoseconds other: Int64) -> Timestamp {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(other)
        return Timestamp(nanoseconds: overflow ? (other < 0 ? .min : .max) : sum)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp { lhs.adding(nanoseconds: nanoseconds(rhs)) }
    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration { .nanoseconds(lhs.nanoseconds) - .nanoseconds(rhs.nanoseconds) }

    public var description: String { "\(sinceOrigin)" }
}
