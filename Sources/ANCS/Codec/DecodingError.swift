/// Why bytes from the peer are not a valid ANCS PDU, and where.
///
/// `offset` is the byte offset, from the start of the PDU (for a Data Source
/// response, from the first byte of that response), of the first byte that
/// is wrong or missing. `description` reads "offset 7: title needs a 2-byte
/// max length" so a user can act on it.
public struct DecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        // Notification Source
        case notificationSourceLength(actual: Int)
        // Control Point
        case emptyCommand
        case unknownCommand(CommandID)
        /// A command cut inside a field it must have whole.
        case truncated(field: Field)
        case missingMaxLength(NotificationAttributeID)
        case missingNULTerminator
        case noAttributesRequested
        case performActionLength(actual: Int)
        // Data Source
        case unsolicitedResponse
        case wrongCommandID(expected: CommandID, actual: CommandID)
        case wrongNotificationUID(expected: NotificationUID, actual: NotificationUID)
        /// A Get App Attributes response for another AppIdentifier than the
        /// request's (the offset is its first differing byte). The request's
        /// own is not repeated here: the caller has it, and a copy would be
        /// the only allocation of a failed response (none in firmware).
        case wrongAppIdentifier
        case unexpectedAttribute(expected: UInt8, actual: UInt8)
        case valueTooLong(attribute: UInt8, length: Int, maxLength: Int)
        case incomplete(expectedTuples: Int, receivedTuples: Int)
    }

    /// A field of a command (`Reason.truncated`). (An enum, not a
    /// `String`: an error that holds no reference is copied as plain bytes,
    /// and every error a consumer reports travels in its events: 0.28 KB of
    /// a consumer's firmware.)
    public enum Field: String, Hashable, Sendable {
        case notificationUID = "NotificationUID"
    }

    public var reason: Reason
    public var offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// The ANCS error an NP answers a Control Point write with when its
    /// decoding failed this way: unknown command → 0xA0, anything else → 0xA1.
    public var controlPointErrorCode: ATTErrorCode {
        if case .unknownCommand = reason { return .unknownCommand }
        return .invalidCommand
    }

    public var message: String {
        switch reason {
        case .notificationSourceLength(let actual):
            return "a Notification Source event is exactly 8 bytes, got \(actual)"
        case .emptyCommand:
            return "empty Control Point command"
        case .unknownCommand(let id):
            return "unknown command \(id.rawValue)"
        case .truncated(let field):
            return "command truncated: \(field.rawValue) is cut short"
        case .missingMaxLength(let id):
            return "missing max length: \(id) needs a 2-byte max length"
        case .missingNULTerminator:
            return "AppIdentifier has no NUL terminator"
        case .noAttributesRequested:
            return "command asks for no attributes"
        case .performActionLength(let actual):
            return "Perform Notification Action is exactly 6 bytes, got \(actual)"
        case .unsolicitedResponse:
            return "Data Source bytes with no request outstanding"
        case .wrongCommandID(let expected, let actual):
            return "response has CommandID \(actual.rawValue), the request was \(expected) (\(expected.rawValue))"
        case .wrongNotificationUID(let expected, let actual):
            return "response is for notification uid \(actual), the request asked for uid \(expected)"
        case .wrongAppIdentifier:
            return "response is for another AppIdentifier than the request's"
        case .unexpectedAttribute(let expected, let actual):
            return "tuple for attribute \(actual) where the request asked for attribute \(expected) next"
        case .valueTooLong(let attribute, let length, let maxLength):
            return "attribute \(attribute) value is \(length) bytes, longer than the max length \(maxLength)"
        case .incomplete(let expected, let received):
            return "response incomplete: \(received) of \(expected) attribute tuples complete"
        }
    }

    public var description: String { "offset \(offset): \(message)" }
}

/// Why a value cannot be encoded as an ANCS PDU.
public struct EncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case appIdentifierContainsNUL
        case noAttributesRequested
        case commandTooLong(length: Int)
    }
    public var reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .appIdentifierContainsNUL: "an AppIdentifier cannot contain a NUL byte"
        case .noAttributesRequested: "a command must ask for at least one attribute"
        case .commandTooLong(let length): "a Control Point command is at most 512 bytes (an ATT write), this one is \(length)"
        }
    }
}
