// The C API of ancs_parser.h: the Notification Source decoder, the Control
// Point encoders and DataSourceParser, for firmware that drives ANCS itself
// (what Nordic's bt_ancs_client offers) without the consumer engine.
// Compiled with Sources/ANCS and ANCSConsumerC.swift as one module
// (integrations/c/build.sh); a firmware that calls only these functions links
// none of the engine (--gc-sections).
//
// Nothing here allocates. An ancs_parser is the caller's storage: a tag in
// its first word, then this file's `ParserInstance` (the parser and two
// fields of the C side). The commands are written straight into the caller's
// buffer (ControlPointCommand.encode returns an array); the rule of which
// attribute carries a max length is the core's (NotificationAttributeRequest).
// Errors are read from DecodingError's stored detail, never from `reason`,
// which makes a String of a wrong AppIdentifier; a wrong AppIdentifier in a
// response is found here before the core would copy the expected one into
// its error (appIdentifierDifference).

import CANCS

/// "ANCS-PR" and the layout's version: storage without it was not initialized.
private let parserTag: UInt64 = 0x414E_4353_5052_0001
/// The instance starts after the tag.
private let parserOffset = 8

struct ParserInstance {
    var parser = DataSourceParser()
    /// Bytes of the current value handed over so far (VALUE's value_offset).
    var valueOffset = 0
    /// A feed is calling back: calls on this parser are refused.
    var busy = false
}

private func parserInstance(_ storage: UnsafeMutablePointer<ancs_parser>?) -> UnsafeMutablePointer<ParserInstance>? {
    guard let storage else { return nil }
    let raw = UnsafeMutableRawPointer(storage)
    guard raw.load(as: UInt64.self) == parserTag else { return nil }
    return (raw + parserOffset).assumingMemoryBound(to: ParserInstance.self)
}

@inline(__always)
private func code(_ value: Int32) -> ancs_status { ancs_status(value) }

/// The C form of a decoding error.
private func cError(_ error: DecodingError) -> ancs_decode_error {
    var result = ancs_decode_error()
    result.offset = error.offset
    switch error.reason {
    case .notificationSourceLength(let actual):
        result.reason = ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH
        result.actual = UInt32(clamping: actual)
    case .emptyCommand:
        result.reason = ANCS_DECODE_EMPTY_COMMAND
    case .unknownCommand(let id):
        result.reason = ANCS_DECODE_UNKNOWN_COMMAND
        result.actual = UInt32(id.rawValue)
    case .truncated:
        result.reason = ANCS_DECODE_TRUNCATED
    case .missingMaxLength(let id):
        result.reason = ANCS_DECODE_MISSING_MAX_LENGTH
        result.attribute = id.rawValue
    case .missingNULTerminator:
        result.reason = ANCS_DECODE_MISSING_NUL_TERMINATOR
    case .noAttributesRequested:
        result.reason = ANCS_DECODE_NO_ATTRIBUTES_REQUESTED
    case .wrongCommandID(let expected, let actual):
        result.reason = ANCS_DECODE_WRONG_COMMAND_ID
        result.expected = UInt32(expected.rawValue)
        result.actual = UInt32(actual.rawValue)
    case .wrongNotificationUID(let expected, let actual):
        result.reason = ANCS_DECODE_WRONG_NOTIFICATION_UID
        result.expected = expected.rawValue
        result.actual = actual.rawValue
    case .wrongAppIdentifier:
        result.reason = ANCS_DECODE_WRONG_APP_IDENTIFIER
    case .unexpectedAttribute(let expected, let actual):
        result.reason = ANCS_DECODE_UNEXPECTED_ATTRIBUTE
        result.expected = UInt32(expected)
        result.actual = UInt32(actual)
    case .valueTooLong(let attribute, let length, let maxLength):
        result.reason = ANCS_DECODE_VALUE_TOO_LONG
        result.attribute = attribute
        result.actual = UInt32(clamping: length)
        result.expected = UInt32(clamping: maxLength)
    case .incomplete(let expected, let received):
        result.reason = ANCS_DECODE_INCOMPLETE
        result.expected = UInt32(clamping: expected)
        result.actual = UInt32(clamping: received)
    case .performActionLength, .unsolicitedResponse:
        // Errors of a Perform Notification Action's decoding and of the
        // reassembler: none of these functions meets them.
        result.reason = ANCS_DECODE_NONE
    }
    return result
}

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

// MARK: - Names

@_cdecl("ancs_parser_status_name")
public func ancsParserStatusName(_ status: ancs_status) -> UnsafePointer<CChar> {
    switch status {
    case code(Int32(ANCS_OK)): cString("ok")
    case code(Int32(ANCS_ERR_DECODING)): cString("the bytes do not decode")
    case code(Int32(ANCS_ERR_BUFFER_TOO_SMALL)): cString("the buffer is too small for the command")
    case code(Int32(ANCS_ERR_ENCODING)): cString("the command cannot be encoded")
    case code(Int32(ANCS_ERR_INVALID_ARGUMENT)): cString("invalid argument")
    case code(Int32(ANCS_ERR_STORAGE)): cString("parser storage not initialized or too small")
    case code(Int32(ANCS_ERR_BUSY)): cString("called from the parser's own callback")
    default: cString("not a status of ancs_parser.h")
    }
}

@_cdecl("ancs_decode_reason_name")
public func ancsDecodeReasonName(_ reason: ancs_decode_reason) -> UnsafePointer<CChar> {
    switch reason {
    case ANCS_DECODE_NONE: cString("no error")
    case ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH: cString("a Notification Source event is not 8 bytes")
    case ANCS_DECODE_EMPTY_COMMAND: cString("empty Control Point command")
    case ANCS_DECODE_UNKNOWN_COMMAND: cString("unknown command")
    case ANCS_DECODE_TRUNCATED: cString("command truncated: NotificationUID is cut short")
    case ANCS_DECODE_MISSING_MAX_LENGTH: cString("missing max length: the attribute needs a 2-byte max length")
    case ANCS_DECODE_MISSING_NUL_TERMINATOR: cString("AppIdentifier has no NUL terminator")
    case ANCS_DECODE_NO_ATTRIBUTES_REQUESTED: cString("command asks for no attributes")
    case ANCS_DECODE_WRONG_COMMAND_ID: cString("response has another CommandID than the command's")
    case ANCS_DECODE_WRONG_NOTIFICATION_UID: cString("response is for another NotificationUID than the command's")
    case ANCS_DECODE_WRONG_APP_IDENTIFIER: cString("response is for another AppIdentifier than the command's")
    case ANCS_DECODE_UNEXPECTED_ATTRIBUTE: cString("tuple for another attribute than the command asked for next")
    case ANCS_DECODE_VALUE_TOO_LONG: cString("value longer than the max length asked")
    case ANCS_DECODE_INCOMPLETE: cString("response incomplete")
    default: cString("unknown reason")
    }
}

// MARK: - Notification Source

@_cdecl("ancs_decode_notification_source")
public func ancsDecodeNotificationSource(
    _ bytes: UnsafePointer<UInt8>?, _ length: Int, _ event: UnsafeMutablePointer<ancs_notification_source_event>?,
    _ errorOut: UnsafeMutablePointer<ancs_decode_error>?
) -> ancs_status {
    errorOut?.pointee = ancs_decode_error()
    guard let event, bytes != nil || length == 0 else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    event.pointee = ancs_notification_source_event()
    do throws(DecodingError) {
        let decoded = try NotificationSourceEvent.decode(UnsafeRawBufferPointer(start: bytes, count: length))
        event.pointee = ancs_notification_source_event(
            event_id: decoded.eventID.rawValue, event_flags: decoded.eventFlags.rawValue,
            category_id: decoded.categoryID.rawValue, category_count: decoded.categoryCount,
            uid: decoded.notificationUID.rawValue)
        return code(Int32(ANCS_OK))
    } catch {
        errorOut?.pointee = cError(error)
        return code(Int32(ANCS_ERR_DECODING))
    }
}

// MARK: - Control Point

/// The checks common to the three encoders, once their length is known:
/// ANCS_OK when `buffer` can take `needed` bytes (a NULL buffer of capacity
/// 0 asks for the length).
private func room(_ needed: Int, _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: Int,
                  _ length: UnsafeMutablePointer<Int>?) -> ancs_status {
    guard buffer != nil || capacity == 0 else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    guard needed <= ControlPointCommand.maximumLength else { return code(Int32(ANCS_ERR_ENCODING)) }
    guard buffer != nil, needed <= capacity else {
        length?.pointee = needed
        return code(Int32(ANCS_ERR_BUFFER_TOO_SMALL))
    }
    return code(Int32(ANCS_OK))
}

private func request(_ attribute: ancs_attribute_request) -> NotificationAttributeRequest {
    NotificationAttributeRequest(NotificationAttributeID(rawValue: attribute.id), maxLength: attribute.max_length)
}

@_cdecl("ancs_encode_get_notification_attributes")
public func ancsEncodeGetNotificationAttributes(
    _ uid: UInt32, _ attributes: UnsafePointer<ancs_attribute_request>?, _ count: Int,
    _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: Int, _ length: UnsafeMutablePointer<Int>?
) -> ancs_status {
    guard let length else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    length.pointee = 0
    guard attributes != nil || count == 0 else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    guard let attributes, count > 0 else { return code(Int32(ANCS_ERR_ENCODING)) }
    var needed = 5
    for index in 0..<count {
        needed += request(attributes[index]).encodedLength
        if needed > ControlPointCommand.maximumLength { break }
    }
    let status = room(needed, buffer, capacity, length)
    guard status == code(Int32(ANCS_OK)), let buffer else { return status }
    buffer[0] = CommandID.getNotificationAttributes.rawValue
    storeUInt32LE(uid, at: buffer + 1)
    var index = 5
    for item in 0..<count { index = request(attributes[item]).write(to: buffer, at: index) }
    length.pointee = index
    return status
}

@_cdecl("ancs_encode_get_app_attributes")
public func ancsEncodeGetAppAttributes(
    _ identifier: UnsafePointer<UInt8>?, _ identifierLength: Int, _ attributes: UnsafePointer<UInt8>?, _ count: Int,
    _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: Int, _ length: UnsafeMutablePointer<Int>?
) -> ancs_status {
    guard let length else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    length.pointee = 0
    guard identifier != nil || identifierLength == 0, attributes != nil || count == 0
    else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    guard let attributes, count > 0 else { return code(Int32(ANCS_ERR_ENCODING)) }
    let name = UnsafeBufferPointer(start: identifier, count: identifierLength)
    guard !name.contains(0) else { return code(Int32(ANCS_ERR_ENCODING)) }
    // Each term at most 512 before the sum: no overflow.
    guard identifierLength <= ControlPointCommand.maximumLength, count <= ControlPointCommand.maximumLength
    else { return code(Int32(ANCS_ERR_ENCODING)) }
    let status = room(2 + identifierLength + count, buffer, capacity, length)
    guard status == code(Int32(ANCS_OK)), let buffer else { return status }
    buffer[0] = CommandID.getAppAttributes.rawValue
    var index = 1
    for byte in name {
        buffer[index] = byte
        index += 1
    }
    buffer[index] = 0
    index += 1
    for item in 0..<count {
        buffer[index] = attributes[item]
        index += 1
    }
    length.pointee = index
    return status
}

@_cdecl("ancs_encode_perform_notification_action")
public func ancsEncodePerformNotificationAction(
    _ uid: UInt32, _ action: UInt8, _ buffer: UnsafeMutablePointer<UInt8>?, _ capacity: Int,
    _ length: UnsafeMutablePointer<Int>?
) -> ancs_status {
    guard let length else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    length.pointee = 0
    let status = room(6, buffer, capacity, length)
    guard status == code(Int32(ANCS_OK)), let buffer else { return status }
    buffer[0] = CommandID.performNotificationAction.rawValue
    storeUInt32LE(uid, at: buffer + 1)
    buffer[5] = action
    length.pointee = 6
    return status
}

// MARK: - Data Source parser

@_cdecl("ancs_parser_storage_size")
public func ancsParserStorageSize() -> Int {
    parserOffset + MemoryLayout<ParserInstance>.size
}

@_cdecl("ancs_parser_init")
public func ancsParserInit(_ storage: UnsafeMutablePointer<ancs_parser>?) -> ancs_status {
    guard let storage else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    guard ancsParserStorageSize() <= MemoryLayout<ancs_parser>.size,
          MemoryLayout<ParserInstance>.alignment <= parserOffset,
          Int(bitPattern: UnsafeRawPointer(storage)) % MemoryLayout<ParserInstance>.alignment == 0
    else { return code(Int32(ANCS_ERR_STORAGE)) }
    // The storage's previous contents are not looked at (they may be anything).
    let raw = UnsafeMutableRawPointer(storage)
    (raw + parserOffset).bindMemory(to: ParserInstance.self, capacity: 1).initialize(to: ParserInstance())
    raw.storeBytes(of: parserTag, as: UInt64.self)
    return code(Int32(ANCS_OK))
}

@_cdecl("ancs_parser_begin")
public func ancsParserBegin(
    _ storage: UnsafeMutablePointer<ancs_parser>?, _ command: UnsafePointer<UInt8>?, _ length: Int,
    _ errorOut: UnsafeMutablePointer<ancs_decode_error>?
) -> ancs_status {
    errorOut?.pointee = ancs_decode_error()
    guard let pointer = parserInstance(storage) else { return code(Int32(ANCS_ERR_STORAGE)) }
    guard !pointer.pointee.busy else { return code(Int32(ANCS_ERR_BUSY)) }
    guard command != nil || length == 0 else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    pointer.pointee.valueOffset = 0
    do throws(DecodingError) {
        try pointer.pointee.parser.begin(UnsafeRawBufferPointer(start: command, count: length))
        return code(Int32(ANCS_OK))
    } catch {
        // A refused command drops what was being parsed too.
        pointer.pointee.parser.reset()
        errorOut?.pointee = cError(error)
        return code(Int32(ANCS_ERR_DECODING))
    }
}

@_cdecl("ancs_parser_feed")
public func ancsParserFeed(
    _ storage: UnsafeMutablePointer<ancs_parser>?, _ command: UnsafePointer<UInt8>?, _ commandLength: Int,
    _ fragment: UnsafePointer<UInt8>?, _ length: Int, _ callback: ancs_parser_callback?,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let pointer = parserInstance(storage), !pointer.pointee.busy, let callback,
          command != nil || commandLength == 0, fragment != nil || length == 0,
          pointer.pointee.parser.isParsing, commandLength == pointer.pointee.parser.commandCount
    else { return 0 }
    pointer.pointee.busy = true
    var attributeID = pointer.pointee.parser.attributeID
    var valueOffset = pointer.pointee.valueOffset
    func handle(_ parsed: DataSourceParser.Event) {
        var event = ancs_parser_event()
        switch parsed {
        case .attribute(let id, let valueLength):
            event.type = ANCS_PARSER_ATTRIBUTE
            event.attribute_id = id
            event.length = UInt16(truncatingIfNeeded: valueLength)
            attributeID = id
            valueOffset = 0
        case .value(let piece):
            event.type = ANCS_PARSER_VALUE
            event.attribute_id = attributeID
            event.length = UInt16(truncatingIfNeeded: piece.count)
            event.value_offset = UInt16(truncatingIfNeeded: valueOffset)
            event.value = piece.baseAddress?.assumingMemoryBound(to: UInt8.self)
            valueOffset += piece.count
        case .complete:
            event.type = ANCS_PARSER_COMPLETE
        case .failed(let error):
            event.type = ANCS_PARSER_FAILED
            event.error = cError(error)
        }
        withUnsafePointer(to: &event) { callback(context, $0) }
    }
    let bytes = UnsafeRawBufferPointer(start: fragment, count: length)
    let commandBytes = UnsafeRawBufferPointer(start: command, count: commandLength)
    let consumed = pointer.pointee.parser.feed(bytes, answering: commandBytes, handle)
    pointer.pointee.valueOffset = valueOffset
    pointer.pointee.busy = false
    return consumed
}

@_cdecl("ancs_parser_finish")
public func ancsParserFinish(
    _ storage: UnsafeMutablePointer<ancs_parser>?, _ command: UnsafePointer<UInt8>?, _ commandLength: Int,
    _ errorOut: UnsafeMutablePointer<ancs_decode_error>?
) -> ancs_status {
    errorOut?.pointee = ancs_decode_error()
    guard let pointer = parserInstance(storage) else { return code(Int32(ANCS_ERR_STORAGE)) }
    guard !pointer.pointee.busy else { return code(Int32(ANCS_ERR_BUSY)) }
    let parser = pointer.pointee.parser
    // The command is read only for a live response (DataSourceParser.finish).
    if parser.isParsing && !parser.failed {
        guard command != nil || commandLength == 0, commandLength == parser.commandCount
        else { return code(Int32(ANCS_ERR_INVALID_ARGUMENT)) }
    }
    pointer.pointee.valueOffset = 0
    guard let incomplete = pointer.pointee.parser.finish(answering: UnsafeRawBufferPointer(start: command, count: commandLength))
    else { return code(Int32(ANCS_OK)) }
    errorOut?.pointee = cError(incomplete)
    return code(Int32(ANCS_ERR_DECODING))
}

@_cdecl("ancs_parser_reset")
public func ancsParserReset(_ storage: UnsafeMutablePointer<ancs_parser>?) -> ancs_status {
    guard let pointer = parserInstance(storage) else { return code(Int32(ANCS_ERR_STORAGE)) }
    guard !pointer.pointee.busy else { return code(Int32(ANCS_ERR_BUSY)) }
    pointer.pointee.parser.reset()
    pointer.pointee.valueOffset = 0
    return code(Int32(ANCS_OK))
}

@_cdecl("ancs_parser_is_parsing")
public func ancsParserIsParsing(_ storage: UnsafePointer<ancs_parser>?) -> Bool {
    parserInstance(UnsafeMutablePointer(mutating: storage))?.pointee.parser.isParsing ?? false
}
