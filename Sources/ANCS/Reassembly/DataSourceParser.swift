// DataSourceParser — one Data Source response at a time, streamed, without
// the heap (spec: "Data Source"). The subset of `DataSourceReassembler` that
// firmware sending one Get Notification / Get App Attributes command at a
// time needs (what Nordic's ANCS client offers), at a fraction of its size.
//
// The parser keeps no copy of the command: the caller passes the command's
// bytes (the ones it wrote to the Control Point, unchanged) with every
// fragment, and the parser walks them to know which tuple comes next and
// how long the header is. Values are not collected either: each value's
// bytes are handed over as they arrive, in pieces, straight from the
// fragment. So memory is a few integers, whatever the response's size.
//
// Validation is the reassembler's, with the same errors at the same offsets:
// CommandID, NotificationUID or AppIdentifier, each AttributeID in the order
// asked, each length against the max length asked. A failed response is
// reported once and its remaining tuples are still framed (silently), so its
// bytes are consumed up to its end; only after a wrong CommandID, where
// nothing can be framed, is the rest of that fragment dropped.
//
// What the reassembler adds and this does not: several requests outstanding,
// requests given up while their response may still come, resynchronization
// after bytes no request explains, values collected into a response. A
// caller of this parser keeps one request in flight and a timeout of its own
// (an NP that sends fewer tuples than asked never completes a response):
// on it, `reset()`.

public struct DataSourceParser: Sendable {
    /// What the parser reports while it is fed. The buffer of `value` points
    /// into the fragment being fed and is valid only during the handler call.
    public enum Event {
        /// A tuple's AttributeID and Length; its value's bytes follow (none when 0).
        case attribute(id: UInt8, length: Int)
        /// The next bytes of the current attribute's value.
        case value(UnsafeRawBufferPointer)
        /// Every tuple asked for has arrived: the response is over.
        case complete
        /// The response is invalid (reported once); it ends here for the caller.
        case failed(DecodingError)
    }

    enum Phase: UInt8, Sendable {
        case idle, header, skippingAppIdentifier, attributeID, lengthLow, lengthHigh, value
    }

    var phase = Phase.idle
    /// Set once the response has failed: framing goes on, nothing is reported.
    var failed = false
    /// The command's length, checked on every fragment.
    var commandCount = 0
    /// Bytes of the command's header: CommandID + NotificationUID, or CommandID + AppIdentifier + NUL.
    var headerCount = 0
    /// Where the parser is in the command: the header byte the next response
    /// byte is compared with, then the next AttributeID expected.
    var cursor = 0
    /// Bytes of the response so far (error offsets).
    var offset = 0
    var attributeID: UInt8 = 0
    /// The current tuple's max length (`Int.max` for attributes asked without one).
    var maxLength = 0
    var lengthLow: UInt8 = 0
    /// Value bytes of the current tuple still to come.
    var remaining = 0
    var receivedUID: UInt32 = 0
    /// Tuples of the response complete so far.
    var tuplesReceived = 0

    public init() {}

    /// True between `begin` and the end of the response (complete, or failed
    /// and framed to its end).
    public var isParsing: Bool { phase != .idle }

    /// Starts on the response to `command`, the Get Notification Attributes
    /// or Get App Attributes bytes written to the Control Point. Throws, as
    /// an NP would decode it, when the command is not one of those or is
    /// malformed (a Perform Notification Action has no response). Whatever
    /// was being parsed is dropped.
    public mutating func begin(_ command: UnsafeRawBufferPointer) throws(DecodingError) {
        headerCount = try DataSourceParser.layout(of: command).header
        commandCount = command.count
        phase = .header
        failed = false
        cursor = 0
        offset = 0
        receivedUID = 0
        tuplesReceived = 0
    }

    /// Drops the response being parsed (a timeout, link loss).
    public mutating func reset() {
        phase = .idle
        failed = false
    }

    /// Ends the response being parsed (link loss, a timeout, the caller
    /// giving up) and returns the error its request ends with when it was
    /// still live: `incomplete`, as the reassembler reports it. Nil when
    /// nothing was being parsed or its failure was already reported.
    public mutating func finish(answering command: UnsafeRawBufferPointer) -> DecodingError? {
        defer { reset() }
        guard phase != .idle, !failed else { return nil }
        precondition(command.count == commandCount, "DataSourceParser.finish: not the command given to begin")
        let expected = (try? DataSourceParser.layout(of: command).tuples) ?? 0
        return DecodingError(.incomplete(expectedTuples: expected, receivedTuples: tuplesReceived), at: offset)
    }

    /// Feeds one Data Source notification of the response to `command` (the
    /// bytes given to `begin`). Returns how many of the fragment's bytes
    /// belong to the response: fewer than all when it ends inside the
    /// fragment, 0 when nothing is being parsed. The rest are the caller's
    /// (an NP starts every response in a notification of its own, so they
    /// are unsolicited).
    @discardableResult
    public mutating func feed(_ fragment: UnsafeRawBufferPointer, answering command: UnsafeRawBufferPointer, _ handler: (Event) -> Void) -> Int {
        precondition(phase == .idle || command.count == commandCount, "DataSourceParser.feed: not the command given to begin")
        let count = fragment.count
        var index = 0
        while index < count && phase != .idle {
            let byte = fragment[index]
            switch phase {
            case .idle:
                break

            case .header:
                if cursor == 0 {
                    if byte != command[0] {
                        let expected = CommandID(rawValue: command[0]), actual = CommandID(rawValue: byte)
                        fail(DecodingError(.wrongCommandID(expected: expected, actual: actual), at: 0), handler)
                        phase = .idle
                        return count
                    }
                } else if command[0] == CommandID.getNotificationAttributes.rawValue {
                    receivedUID |= UInt32(byte) << (8 * UInt32(cursor - 1))
                    if cursor == 4 && receivedUID != readUInt32LE(command, at: 1) {
                        let expected = NotificationUID(readUInt32LE(command, at: 1))
                        fail(DecodingError(.wrongNotificationUID(expected: expected, actual: NotificationUID(receivedUID)), at: 1), handler)
                    }
                } else if byte != command[cursor] {
                    // Another app's response (or a cut AppIdentifier): frame it to its NUL.
                    fail(DecodingError(.wrongAppIdentifier, at: cursor), handler)
                    cursor = headerCount
                    phase = byte == 0 ? .attributeID : .skippingAppIdentifier
                    break
                }
                cursor += 1
                if cursor == headerCount { phase = .attributeID }

            case .skippingAppIdentifier:
                if byte == 0 {
                    cursor = headerCount
                    phase = .attributeID
                }

            case .attributeID:
                let expected = command[cursor]
                if byte != expected {
                    fail(DecodingError(.unexpectedAttribute(expected: expected, actual: byte), at: offset), handler)
                }
                attributeID = byte
                var attributes = AttributeCursor(command, headerCount: cursor)
                maxLength = attributes.next(in: command) ?? Int.max
                cursor = attributes.offset
                phase = .lengthLow

            case .lengthLow:
                lengthLow = byte
                phase = .lengthHigh

            case .lengthHigh:
                let length = Int(lengthLow) | Int(byte) << 8
                if length > maxLength {
                    fail(DecodingError(.valueTooLong(attribute: attributeID, length: length, maxLength: maxLength), at: offset - 1), handler)
                }
                if !failed { handler(.attribute(id: attributeID, length: length)) }
                remaining = length
                phase = .value
                if length == 0 { endTuple(handler) }

            case .value:
                let take = min(remaining, count - index)
                if !failed { handler(.value(UnsafeRawBufferPointer(rebasing: fragment[index..<(index + take)]))) }
                remaining -= take
                index += take
                offset += take
                if remaining == 0 { endTuple(handler) }
                continue
            }
            index += 1
            offset += 1
        }
        return index
    }

    private mutating func endTuple(_ handler: (Event) -> Void) {
        tuplesReceived += 1
        if cursor < commandCount {
            phase = .attributeID
            return
        }
        phase = .idle
        if !failed { handler(.complete) }
        failed = false
    }

    private mutating func fail(_ error: DecodingError, _ handler: (Event) -> Void) {
        guard !failed else { return }
        failed = true
        handler(.failed(error))
    }

    /// The header's length and the number of tuples asked for in a
    /// well-formed Get Notification / Get App Attributes command (the
    /// Control Point decoding rules, without building the command).
    static func layout(of command: UnsafeRawBufferPointer) throws(DecodingError) -> (header: Int, tuples: Int) {
        guard command.count > 0 else { throw DecodingError(.emptyCommand, at: 0) }
        let header: Int
        var tuples = 0
        switch CommandID(rawValue: command[0]) {
        case .getNotificationAttributes:
            guard command.count >= 5 else { throw DecodingError(.truncated(field: .notificationUID), at: command.count) }
            header = 5
            var attributes = AttributeCursor(command, headerCount: header)
            while !attributes.isAtEnd(of: command) {
                let id = NotificationAttributeID(rawValue: command[attributes.offset])
                _ = attributes.next(in: command)
                guard attributes.offset <= command.count else { throw DecodingError(.missingMaxLength(id), at: command.count) }
                tuples += 1
            }
        case .getAppAttributes:
            var nul = 1
            while nul < command.count && command[nul] != 0 { nul += 1 }
            guard nul < command.count else { throw DecodingError(.missingNULTerminator, at: command.count) }
            header = nul + 1
            tuples = command.count - header
        case .performNotificationAction:
            // No response follows it.
            throw DecodingError(.noAttributesRequested, at: 0)
        default:
            throw DecodingError(.unknownCommand(CommandID(rawValue: command[0])), at: 0)
        }
        guard tuples > 0 else { throw DecodingError(.noAttributesRequested, at: header) }
        return (header, tuples)
    }
}
