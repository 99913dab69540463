// What every engine and its transport say to each other about the link:
// the results of ATT operations, and the names of writes, reads and links.
// Shared by the ANCS, AMS and CTS engines of both roles.

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

/// The result of an ATT read, as the transport reports it to an engine.
public enum ATTReadResult: Hashable, Sendable {
    case value([UInt8])
    case attError(ATTErrorCode)
    case transportFailure
}

/// Names one write or read handed to the transport; its result comes back with it.
public struct WriteToken: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
}

/// Names one accessory's link to a server engine (the provider, the AMS or
/// CTS server); chosen by the caller (a connection handle, a device index)
/// and echoed in every action for it.
public struct ConnectionID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "connection \(rawValue)" }
}
