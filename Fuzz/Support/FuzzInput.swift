// Shared by every fuzz target (compiled into each one, in module ANCS so
// `internal` state is reachable).

/// Reads a fuzzer's input as a stream of choices; past the end, zeros.
struct FuzzInput {
    let bytes: [UInt8]
    var position = 0

    init(_ start: UnsafeRawPointer, _ count: Int) {
        bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + max(0, count))
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// A length byte, then that many bytes.
    mutating func chunk() -> [UInt8] { take(Int(byte())) }

    mutating func rest() -> [UInt8] { take(bytes.count - position) }
}

/// An invariant of a target: a violation is a finding (a trap, with the message).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

func attributeCount(_ response: DataSourceResponse) -> Int {
    switch response {
    case .notificationAttributes(let r): r.attributes.count
    case .appAttributes(let r): r.attributes.count
    }
}

/// A response matches its request: same subject, exactly the attributes
/// asked, in order, each value within its max length (`unlimited` for the
/// attributes asked without one).
func checkResponse(_ response: DataSourceResponse, answers request: DataSourceRequest, unlimited: Int) {
    let ids: [UInt8]
    let lengths: [Int]
    switch (response, request.subject) {
    case (.notificationAttributes(let r), .notification(let uid)):
        check(r.notificationUID == uid, "response for uid \(r.notificationUID), asked \(uid)")
        ids = r.attributes.map { $0.id.rawValue }
        lengths = r.attributes.map { $0.value.count }
    case (.appAttributes(let r), .app(let identifier)):
        check(r.appIdentifierBytes == request.appIdentifierBytes, "response for app \(r.appIdentifier), asked \(identifier)")
        ids = r.attributes.map { $0.id.rawValue }
        lengths = r.attributes.map { $0.value.count }
    default:
        return check(false, "response kind \(response) does not answer \(request.subject)")
    }
    check(ids == request.tuples.map { $0.id }, "attributes \(ids), asked \(request.tuples.map { $0.id })")
    for (length, tuple) in zip(lengths, request.tuples) {
        check(length <= (tuple.maxLength ?? unlimited), "value of \(length) bytes for attribute \(tuple.id), max \(tuple.maxLength ?? unlimited)")
    }
}
