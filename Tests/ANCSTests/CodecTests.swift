// Edge cases of the wire codec (spec: "Notification Source", "Control Point",
// "Data Source", "Attribute value formats"), named in the spec's words.

import ANCS
import Testing

/// The decoding error `body` throws, or nil when it succeeds.
func decodingError<T>(_ body: () throws(DecodingError) -> T) -> DecodingError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// The encoding error `body` throws, or nil when it succeeds.
func encodingError<T>(_ body: () throws(EncodingError) -> T) -> EncodingError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// Registers `request`, feeds `fragments` in order, finishes (unless
/// `finishing` is false), and returns every event: the suite's one way of
/// running a response through the reassembler.
func reassemble(_ request: DataSourceRequest, _ fragments: [[UInt8]], id: DataSourceReassembler.RequestID = 1,
                unlimitedValueLength: Int = DataSourceReassembler.Configuration.default.unlimitedValueLength,
                finishing: Bool = true) -> [DataSourceReassembler.Event] {
    var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: unlimitedValueLength))
    reassembler.expect(request, id: id)
    var events: [DataSourceReassembler.Event] = []
    for fragment in fragments { reassembler.feed(fragment) { events.append($0) } }
    if finishing { reassembler.finish { events.append($0) } }
    return events
}

@Suite("Codec edge cases")
struct CodecTests {
    // MARK: Empty values and max length 0xFFFF

    @Test("an empty attribute has Length 0 and decodes as an empty value")
    func emptyValue() throws {
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: NotificationUID(9),
            attributes: [NotificationAttribute(.subtitle, .empty), NotificationAttribute(.date, AttributeValue(bytes: []))]
        ))
        #expect(response.encode() == [0x00, 0x09, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x00])

        let command = GetNotificationAttributes(notificationUID: NotificationUID(9), attributes: [
            NotificationAttributeRequest(.subtitle, maxLength: 0), NotificationAttributeRequest(.date),
        ])
        let events = reassemble(DataSourceRequest(command), [response.encode()])
        #expect(events == [.response(1, response)])
        guard case .response(_, .notificationAttributes(let decoded))? = events.first else {
            Issue.record("expected a notification attributes response, got \(events)")
            return
        }
        for attribute in decoded.attributes {
            #expect(attribute.value.isEmpty)
            #expect(attribute.value.count == 0)
            #expect(attribute.value.string == "")
            #expect(attribute.value.bytes == [])
            #expect(attribute.value.isValidUTF8)
            #expect(attribute.value.date == nil)
            #expect(attribute.value.messageSize == nil)
        }
    }

    @Test("a max length of 0 accepts only empty values")
    func maxLengthZero() {
        let command = GetNotificationAttributes(notificationUID: NotificationUID(1), attributes: [NotificationAttributeRequest(.title, maxLength: 0)])
        let tooLong: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x41]
        let events = reassemble(DataSourceRequest(command), [tooLong])
        #expect(events == [.failed(1, DecodingError(.valueTooLong(attribute: 1, length: 1, maxLength: 0), at: 6))])
    }

    @Test("max length 0xFFFF: the default for Title, Subtitle and Message, and a 65 535-byte value round-trips")
    func maxLength0xFFFF() throws {
        for id in [NotificationAttributeID.title, .subtitle, .message] {
            #expect(NotificationAttributeRequest(id).maxLength == 0xFFFF)
            #expect(NotificationAttributeRequest(id, maxLength: 0xFFFF).maxLength == 0xFFFF)
        }
        let command = GetNotificationAttributes(notificationUID: NotificationUID(0x43), attributes: [
            NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title), NotificationAttributeRequest(.date),
        ])
        let encoded = try ControlPointCommand.getNotificationAttributes(command).encode()
        #expect(encoded == [0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF, 0x05])
        #expect(try ControlPointCommand.decode(encoded) == .getNotificationAttributes(command))

        let big = AttributeValue(bytes: Array(repeating: UInt8(ascii: "x"), count: 0xFFFF))
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: NotificationUID(0x43),
            attributes: [NotificationAttribute(.appIdentifier, "com.example"), NotificationAttribute(.title, big), NotificationAttribute(.date, "20240229T235960")]
        ))
        let wire = response.encode()
        #expect(wire.count == 5 + (3 + 11) + (3 + 0xFFFF) + (3 + 15))
        #expect(Array(wire[(5 + 3 + 11 + 1)...].prefix(2)) == [0xFF, 0xFF])
        let events = reassemble(DataSourceRequest(command), response.fragments(mtu: 185))
        #expect(events == [.response(1, response)])
    }

    @Test("a value longer than the Length field can say is cut to 65 535 bytes")
    func valueBeyond0xFFFFIsCut() {
        let response = DataSourceResponse.appAttributes(AppAttributesResponse(
            appIdentifier: "a",
            attributes: [AppAttribute(.displayName, AttributeValue(bytes: Array(repeating: 0x61, count: 0x10005)))]
        ))
        let wire = response.encode()
        #expect(wire.count == 3 + 3 + 0xFFFF)
        #expect(wire[3...5] == [0x00, 0xFF, 0xFF])
    }

    // MARK: NotificationUID 0 and 0xFFFFFFFF

    @Test("NotificationUID 0 and 0xFFFFFFFF round-trip in every PDU", arguments: [UInt32(0), 0xFFFF_FFFF])
    func uidExtremes(_ raw: UInt32) throws {
        let uid = NotificationUID(raw)
        let le: [UInt8] = [UInt8(raw & 0xFF), UInt8(raw >> 8 & 0xFF), UInt8(raw >> 16 & 0xFF), UInt8(raw >> 24)]
        #expect(uid.description == "\(raw)")

        let event = NotificationSourceEvent(eventID: .added, eventFlags: [], categoryID: .other, categoryCount: 0, notificationUID: uid)
        #expect(event.encode() == [0, 0, 0, 0] + le)
        #expect(try NotificationSourceEvent.decode(event.encode()) == event)

        let gna = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: [NotificationAttributeRequest(.messageSize)]))
        #expect(try gna.encode() == [0x00] + le + [0x04])
        #expect(try ControlPointCommand.decode(gna.encode()) == gna)

        let action = ControlPointCommand.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: .negative))
        #expect(try action.encode() == [0x02] + le + [0x01])
        #expect(try ControlPointCommand.decode(action.encode()) == action)

        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: uid, attributes: [NotificationAttribute(.messageSize, "0")]))
        #expect(response.encode() == [0x00] + le + [0x04, 0x01, 0x00, 0x30])
        guard case .getNotificationAttributes(let command) = gna else {
            Issue.record("expected Get Notification Attributes, got \(gna)")
            return
        }
        #expect(reassemble(DataSourceRequest(command), [response.encode()]) == [.response(1, response)])
    }

    // MARK: Reserved identifiers

    @Test("reserved identifiers are representable and print as their integer")
    func reservedIdentifiersPrint() {
        #expect(EventID(rawValue: 3).name == nil)
        #expect(EventID(rawValue: 3).description == "3")
        #expect(EventID(rawValue: 255).description == "255")
        #expect(CategoryID(rawValue: 12).description == "12")
        #expect(CategoryID(rawValue: 200).name == nil)
        #expect(CategoryID(rawValue: 200).description == "200")
        #expect(NotificationAttributeID(rawValue: 8).description == "8")
        #expect(NotificationAttributeID(rawValue: 8).takesMaxLength == false)
        #expect(NotificationAttributeID(rawValue: 255).description == "255")
        #expect(AppAttributeID(rawValue: 1).name == nil)
        #expect(AppAttributeID(rawValue: 1).description == "1")
        #expect(ActionID(rawValue: 2).description == "2")
        #expect(ActionID(rawValue: 2).name == nil)
        #expect(CommandID(rawValue: 3).description == "3")

        let reservedFlags = EventFlags(rawValue: 0b1110_0000)
        #expect(reservedFlags.names == ["32", "64", "128"])
        #expect(reservedFlags.description == "[32, 64, 128]")
        #expect(EventFlags(rawValue: 0b0010_0010).description == "[important, 32]")
        for bit in UInt8(5)..<8 { #expect(EventFlags.name(ofBit: bit) == nil) }

        // The defined values keep their names.
        #expect(EventID.removed.description == "removed")
        #expect(CategoryID.entertainment.description == "entertainment")
        #expect(NotificationAttributeID.negativeActionLabel.description == "negativeActionLabel")
        #expect(AppAttributeID.displayName.description == "displayName")
        #expect(ActionID.negative.description == "negative")
        #expect(EventFlags([.silent, .negativeAction]).description == "[silent, negativeAction]")
    }

    @Test("reserved EventID, CategoryID and flag bits 5–7 survive a Notification Source round trip")
    func reservedNotificationSource() throws {
        let event = NotificationSourceEvent(
            eventID: EventID(rawValue: 3), eventFlags: EventFlags(rawValue: 0xE2), categoryID: CategoryID(rawValue: 200),
            categoryCount: 1, notificationUID: NotificationUID(7)
        )
        #expect(event.encode() == [0x03, 0xE2, 0xC8, 0x01, 0x07, 0x00, 0x00, 0x00])
        let decoded = try NotificationSourceEvent.decode(event.encode())
        #expect(decoded == event)
        #expect(decoded.eventFlags.contains(.important))
        #expect(decoded.eventFlags.rawValue & 0xE0 == 0xE0)
    }

    @Test("reserved NotificationAttributeID (8+) carries no max length and round-trips")
    func reservedNotificationAttributeID() throws {
        let reserved = NotificationAttributeRequest(NotificationAttributeID(rawValue: 8), maxLength: 10)
        #expect(reserved.maxLength == nil)
        let command = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
            notificationUID: NotificationUID(1),
            attributes: [reserved, NotificationAttributeRequest(.title, maxLength: 10), NotificationAttributeRequest(NotificationAttributeID(rawValue: 255))]
        ))
        let encoded = try command.encode()
        #expect(encoded == [0x00, 0x01, 0x00, 0x00, 0x00, 0x08, 0x01, 0x0A, 0x00, 0xFF])
        #expect(try ControlPointCommand.decode(encoded) == command)

        // …and in a Data Source response, bounded by the unlimited-value length.
        guard case .getNotificationAttributes(let gna) = command else {
            Issue.record("expected Get Notification Attributes, got \(command)")
            return
        }
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(1), attributes: [
            NotificationAttribute(NotificationAttributeID(rawValue: 8), "future"),
            NotificationAttribute(.title, "t"),
            NotificationAttribute(NotificationAttributeID(rawValue: 255), .empty),
        ]))
        #expect(reassemble(DataSourceRequest(gna), [response.encode()]) == [.response(1, response)])
    }

    @Test("reserved AppAttributeID (1+) round-trips in a command and a response")
    func reservedAppAttributeID() throws {
        let command = GetAppAttributes(appIdentifier: "com.example.app", attributes: [.displayName, AppAttributeID(rawValue: 1), AppAttributeID(rawValue: 255)])
        let encoded = try ControlPointCommand.getAppAttributes(command).encode()
        #expect(encoded == [0x01] + Array("com.example.app".utf8) + [0x00, 0x00, 0x01, 0xFF])
        #expect(try ControlPointCommand.decode(encoded) == .getAppAttributes(command))

        let response = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: "com.example.app", attributes: [
            AppAttribute(.displayName, "Example"), AppAttribute(AppAttributeID(rawValue: 1), "x"), AppAttribute(AppAttributeID(rawValue: 255), .empty),
        ]))
        #expect(reassemble(DataSourceRequest(command), [response.encode()]) == [.response(1, response)])
    }

    @Test("reserved ActionID (2+) round-trips in Perform Notification Action", arguments: [UInt8(2), 0x7F, 0xFF])
    func reservedActionID(_ raw: UInt8) throws {
        let command = ControlPointCommand.performNotificationAction(PerformNotificationAction(notificationUID: NotificationUID(0x43), actionID: ActionID(rawValue: raw)))
        let encoded = try command.encode()
        #expect(encoded == [0x02, 0x43, 0x00, 0x00, 0x00, raw])
        #expect(try ControlPointCommand.decode(encoded) == command)
        #expect(DataSourceRequest(command) == nil, "Perform Notification Action has no Data Source response")
    }

    // MARK: Non-ASCII AppIdentifier

    static let nonASCIIIdentifiers = ["com.例え.アプリ", "org.café.naïve", "app.🚲.ride", "Ωμέγα"]

    @Test("an AppIdentifier with non-ASCII characters: Get App Attributes encode and decode", arguments: nonASCIIIdentifiers)
    func nonASCIIAppIdentifierCommand(_ identifier: String) throws {
        let command = ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: identifier))
        let encoded = try command.encode()
        #expect(encoded == [0x01] + Array(identifier.utf8) + [0x00, 0x00])
        let decoded = try ControlPointCommand.decode(encoded)
        #expect(decoded == command)
        guard case .getAppAttributes(let gaa) = decoded else { Issue.record("decoded \(decoded)"); return }
        #expect(gaa.appIdentifier == identifier)
        #expect(Array(gaa.appIdentifier.utf8) == Array(identifier.utf8))
    }

    @Test("an AppIdentifier with non-ASCII characters: Data Source response, split inside a character", arguments: nonASCIIIdentifiers)
    func nonASCIIAppIdentifierResponse(_ identifier: String) throws {
        let request = DataSourceRequest(GetAppAttributes(appIdentifier: identifier))
        let response = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: identifier, attributes: [AppAttribute(.displayName, "邮件")]))
        let wire = response.encode()
        // Every split point, including those that cut a multi-byte character of the identifier.
        for cut in 1..<wire.count {
            let events = reassemble(request, [Array(wire[..<cut]), Array(wire[cut...])])
            #expect(events == [.response(1, response)], "split at \(cut)")
        }
        // A response for the identifier with one byte changed is not for this request.
        var other = wire
        other[2] ^= 0x01
        let events = reassemble(request, [other])
        guard case .failed(1, let error)? = events.first else { Issue.record("events \(events)"); return }
        #expect(error.reason == .wrongAppIdentifier)
        #expect(error.offset == 2)
        #expect(events.count == 1)
    }

    // MARK: Error offsets

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var reason: DecodingError.Reason
        var offset: Int
        var testDescription: String { name }
    }

    static let notificationSourceErrors: [ErrorCase] = [
        ErrorCase(name: "empty", bytes: [], reason: .notificationSourceLength(actual: 0), offset: 0),
        ErrorCase(name: "7 bytes: the 8th is missing", bytes: [0, 0, 0, 1, 1, 0, 0], reason: .notificationSourceLength(actual: 7), offset: 7),
        ErrorCase(name: "9 bytes: the 9th is one too many", bytes: [0, 0, 0, 1, 1, 0, 0, 0, 0], reason: .notificationSourceLength(actual: 9), offset: 8),
    ]

    @Test("Notification Source length errors name the first wrong or missing byte", arguments: notificationSourceErrors)
    func notificationSourceErrorOffsets(_ errorCase: ErrorCase) throws {
        let error = try #require(decodingError { () throws(DecodingError) in try NotificationSourceEvent.decode(errorCase.bytes) })
        #expect(error.reason == errorCase.reason)
        #expect(error.offset == errorCase.offset)
        #expect(error.description.hasPrefix("offset \(errorCase.offset): "))
    }

    static let controlPointErrors: [ErrorCase] = [
        ErrorCase(name: "empty write", bytes: [], reason: .emptyCommand, offset: 0),
        ErrorCase(name: "CommandID 3", bytes: [0x03, 0x43, 0, 0, 0], reason: .unknownCommand(CommandID(rawValue: 3)), offset: 0),
        ErrorCase(name: "CommandID 255", bytes: [0xFF], reason: .unknownCommand(CommandID(rawValue: 255)), offset: 0),
        ErrorCase(name: "GNA: NotificationUID cut after 2 bytes", bytes: [0x00, 0x43, 0x00], reason: .truncated(field: .notificationUID), offset: 3),
        ErrorCase(name: "GNA: CommandID only", bytes: [0x00], reason: .truncated(field: .notificationUID), offset: 1),
        ErrorCase(name: "GNA: no attributes", bytes: [0x00, 0x43, 0, 0, 0], reason: .noAttributesRequested, offset: 5),
        ErrorCase(name: "GNA: Title without max length", bytes: [0x00, 0x43, 0, 0, 0, 0x01], reason: .missingMaxLength(.title), offset: 6),
        ErrorCase(name: "GNA: Message with 1 of 2 max length bytes", bytes: [0x00, 0x43, 0, 0, 0, 0x00, 0x03, 0x20], reason: .missingMaxLength(.message), offset: 8),
        ErrorCase(name: "GNA: Subtitle last, no max length", bytes: [0x00, 0x43, 0, 0, 0, 0x00, 0x05, 0x02], reason: .missingMaxLength(.subtitle), offset: 8),
        ErrorCase(name: "GAA: no NUL", bytes: [0x01, 0x61, 0x62], reason: .missingNULTerminator, offset: 3),
        ErrorCase(name: "GAA: CommandID only", bytes: [0x01], reason: .missingNULTerminator, offset: 1),
        ErrorCase(name: "GAA: no attributes after the NUL", bytes: [0x01, 0x61, 0x00], reason: .noAttributesRequested, offset: 3),
        ErrorCase(name: "PNA: 5 bytes", bytes: [0x02, 0x43, 0, 0, 0], reason: .performActionLength(actual: 5), offset: 5),
        ErrorCase(name: "PNA: 7 bytes", bytes: [0x02, 0x43, 0, 0, 0, 1, 0], reason: .performActionLength(actual: 7), offset: 6),
    ]

    @Test("Control Point decode errors: reason and the offset of the first wrong or missing byte", arguments: controlPointErrors)
    func controlPointErrorOffsets(_ errorCase: ErrorCase) throws {
        let error = try #require(decodingError { () throws(DecodingError) in try ControlPointCommand.decode(errorCase.bytes) })
        #expect(error.reason == errorCase.reason)
        #expect(error.offset == errorCase.offset)
        #expect(error.description == "offset \(errorCase.offset): \(error.message)")
    }

    @Test("a Control Point decode error maps to 0xA0 for an unknown command, 0xA1 for anything malformed", arguments: controlPointErrors)
    func controlPointErrorCode(_ errorCase: ErrorCase) throws {
        let error = try #require(decodingError { () throws(DecodingError) in try ControlPointCommand.decode(errorCase.bytes) })
        if case .unknownCommand = errorCase.reason {
            #expect(error.controlPointErrorCode == .unknownCommand)
            #expect(error.controlPointErrorCode.rawValue == 0xA0)
        } else {
            #expect(error.controlPointErrorCode == .invalidCommand)
            #expect(error.controlPointErrorCode.rawValue == 0xA1)
        }
        #expect(error.controlPointErrorCode.isANCS)
    }

    @Test("the four ANCS error codes, including 0xA3 for Action failed")
    func ancsErrorCodes() {
        #expect(ATTErrorCode.unknownCommand.rawValue == 0xA0)
        #expect(ATTErrorCode.invalidCommand.rawValue == 0xA1)
        #expect(ATTErrorCode.invalidParameter.rawValue == 0xA2)
        #expect(ATTErrorCode.actionFailed.rawValue == 0xA3)
        #expect(ATTErrorCode(rawValue: 0x9F).isANCS == false)
        #expect(ATTErrorCode(rawValue: 0xA4).isANCS == false)
        #expect(ATTErrorCode(rawValue: 0x05) == .insufficientAuthentication)
    }

    @Test("every ATT error code has one name, shown as name (0xNN)")
    func attErrorNames() {
        #expect(ATTErrorCode.insufficientAuthentication.description == "insufficientAuthentication (0x05)")
        #expect(ATTErrorCode.invalidParameter.description == "invalidParameter (0xA2)")
        #expect(ATTErrorCode.cccdImproperlyConfigured.description == "cccdImproperlyConfigured (0xFD)")
        #expect(ATTErrorCode(rawValue: 0x80).description == "ATT error 0x80", "an application error has no name")
        #expect(ConsumerError.att(.insufficientAuthentication).description == "insufficientAuthentication (0x05)")
        // The Core Specification's codes 0x01–0x13, ANCS's 0xA0–0xA3, the common profile codes 0xFC–0xFF.
        let named = (UInt8(0)...255).filter { ATTErrorCode(rawValue: $0).name != nil }
        #expect(named == Array(0x01...0x13) + Array(0xA0...0xA3) + Array(0xFC...0xFF))
        #expect(Set(named.compactMap { ATTErrorCode(rawValue: $0).name }).count == named.count, "names are unique")
    }

    // MARK: EncodingError

    @Test("EncodingError: an AppIdentifier with a NUL byte")
    func encodeNULInAppIdentifier() {
        let error = encodingError { () throws(EncodingError) in try ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: "com.a\u{0}b")).encode() }
        #expect(error?.reason == .appIdentifierContainsNUL)
        #expect(error?.description.contains("NUL") == true)
    }

    @Test("EncodingError: no attributes asked")
    func encodeNoAttributes() {
        let gna = encodingError { () throws(EncodingError) in
            try ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(1), attributes: [])).encode()
        }
        #expect(gna?.reason == .noAttributesRequested)
        let gaa = encodingError { () throws(EncodingError) in
            try ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: "com.a", attributes: [])).encode()
        }
        #expect(gaa?.reason == .noAttributesRequested)
    }

    @Test("EncodingError: a command longer than 512 bytes; exactly 512 is fine")
    func encodeTooLong() throws {
        // 1 + identifier + NUL + 1 attribute = 512 with a 509-byte identifier.
        let fits = ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: String(repeating: "a", count: 509)))
        #expect(try fits.encode().count == 512)
        #expect(try ControlPointCommand.decode(fits.encode()) == fits)

        let tooLong = ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: String(repeating: "a", count: 510)))
        let error = encodingError { () throws(EncodingError) in try tooLong.encode() }
        #expect(error?.reason == .commandTooLong(length: 513))

        // 5 + 3 × 170 = 515 bytes of Title requests.
        let many = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
            notificationUID: NotificationUID(1), attributes: Array(repeating: NotificationAttributeRequest(.title, maxLength: 8), count: 170)
        ))
        #expect(encodingError { () throws(EncodingError) in try many.encode() }?.reason == .commandTooLong(length: 515))
    }

    // MARK: Date

    static let validDates: [(String, ANCSDate)] = [
        ("20140322T154200", ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 42, second: 0)),
        ("20240229T000000", ANCSDate(year: 2024, month: 2, day: 29, hour: 0, minute: 0, second: 0)),
        ("20000229T120000", ANCSDate(year: 2000, month: 2, day: 29, hour: 12, minute: 0, second: 0)),
        ("19991231T235959", ANCSDate(year: 1999, month: 12, day: 31, hour: 23, minute: 59, second: 59)),
        ("20230430T010203", ANCSDate(year: 2023, month: 4, day: 30, hour: 1, minute: 2, second: 3)),
        ("20230131T000000", ANCSDate(year: 2023, month: 1, day: 31, hour: 0, minute: 0, second: 0)),
    ]

    @Test("Date: valid values parse, print as ISO 8601 and re-encode")
    func validDate() throws {
        for (text, expected) in Self.validDates {
            let date = try #require(ANCSDate(text), "\(text)")
            #expect(date == expected)
            #expect(date.wireValue == text)
            #expect(AttributeValue(text).date == expected)
        }
        #expect(ANCSDate("20140322T154200")?.description == "2014-03-22T15:42:00")
        #expect(ANCSDate("00010101T000000")?.description == "0001-01-01T00:00:00")
        #expect(ANCSDate("20140322T154200")! < ANCSDate("20140322T154201")!)
        #expect(ANCSDate("20131231T235959")! < ANCSDate("20140101T000000")!)
    }

    @Test("Date: invalid values are nil", arguments: [
        "20140022T154200",  // month 0
        "20141322T154200",  // month 13
        "20140300T154200",  // day 0
        "20140332T154200",  // day 32
        "20140431T154200",  // April 31
        "20230229T000000",  // Feb 29, non-leap year
        "19000229T000000",  // Feb 29, century non-leap year
        "20240230T000000",  // Feb 30, leap year
        "20140322T244200",  // hour 24
        "20140322T156000",  // minute 60
        "20140322T154261",  // second 61
        "20140322 154200",  // no T
        "20140322t154200",  // lowercase t
        "2014032AT154200",  // a letter
        "2014-03-22T15:4",  // separators
        "20140322T15420",  // 14 bytes
        "20140322T1542000",  // 16 bytes
        "20140322T154200Z",  // with zone
        "",
    ])
    func invalidDate(_ text: String) {
        #expect(ANCSDate(text) == nil)
        #expect(AttributeValue(text).date == nil)
    }

    // MARK: MessageSize

    @Test("MessageSize: decimal ASCII digits")
    func messageSize() {
        #expect(AttributeValue("1024").messageSize == 1024)
        #expect(AttributeValue("0").messageSize == 0)
        #expect(AttributeValue("007").messageSize == 7)
        #expect(AttributeValue("65535").messageSize == 65535)
        #expect(AttributeValue("123456789012345678").messageSize == 123_456_789_012_345_678)
        for invalid in ["", "-1", "+1", " 1", "1 ", "12a", "1.5", "0x10", "１２", "1234567890123456789"] {
            #expect(AttributeValue(invalid).messageSize == nil, "\"\(invalid)\"")
        }
        #expect(AttributeValue(bytes: [0x31, 0x32, 0xFF]).messageSize == nil)
    }

    // MARK: Lenient UTF-8

    struct CutCase: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var string: String
        var testDescription: String { name }
    }

    static let cutValues: [CutCase] = [
        CutCase(name: "2-byte é cut after 1", bytes: Array("abc".utf8) + [0xC3], string: "abc"),
        CutCase(name: "3-byte € cut after 1", bytes: Array("ab".utf8) + [0xE2], string: "ab"),
        CutCase(name: "3-byte € cut after 2", bytes: Array("ab".utf8) + [0xE2, 0x82], string: "ab"),
        CutCase(name: "4-byte 🚲 cut after 1", bytes: Array("go ".utf8) + [0xF0], string: "go "),
        CutCase(name: "4-byte 🚲 cut after 2", bytes: Array("go ".utf8) + [0xF0, 0x9F], string: "go "),
        CutCase(name: "4-byte 🚲 cut after 3", bytes: Array("go ".utf8) + [0xF0, 0x9F, 0x9A], string: "go "),
        CutCase(name: "only a cut 4-byte sequence", bytes: [0xF0, 0x9F, 0x9A], string: ""),
        CutCase(name: "whole 🚲 then a cut €", bytes: [0xF0, 0x9F, 0x9A, 0xB2, 0xE2, 0x82], string: "🚲"),
        CutCase(name: "E0 A0 cut (U+0800…)", bytes: [0x61, 0xE0, 0xA0], string: "a"),
        CutCase(name: "ED 9F cut (below the surrogates)", bytes: [0x61, 0xED, 0x9F], string: "a"),
        CutCase(name: "F4 8F BF cut (U+10FFFF)", bytes: [0x61, 0xF4, 0x8F, 0xBF], string: "a"),
    ]

    @Test("lenient UTF-8: a value cut inside a multi-byte sequence drops the partial character and keeps the raw bytes", arguments: cutValues)
    func cutSequence(_ cut: CutCase) {
        let value = AttributeValue(bytes: cut.bytes)
        #expect(!value.isValidUTF8)
        #expect(value.string == cut.string)
        #expect(value.description == cut.string)
        #expect(value.bytes == cut.bytes)
        #expect(value.count == cut.bytes.count)
        #expect(value.withBytes { Array($0) } == cut.bytes)
        #expect(value != AttributeValue(cut.string))
    }

    static let invalidMidValue: [CutCase] = [
        CutCase(name: "0xFF mid-value", bytes: [0x61, 0xFF, 0x62], string: "a\u{FFFD}b"),
        CutCase(name: "lone continuation byte mid-value", bytes: [0x61, 0x80, 0x62], string: "a\u{FFFD}b"),
        CutCase(name: "lone continuation byte at the end (not a cut sequence)", bytes: [0x61, 0x80], string: "a\u{FFFD}"),
        CutCase(name: "a 2-byte lead followed by ASCII", bytes: [0xC3, 0x61], string: "\u{FFFD}a"),
        CutCase(name: "a continuation byte after a whole 🚲", bytes: [0xF0, 0x9F, 0x9A, 0xB2, 0x80], string: "🚲\u{FFFD}"),
        CutCase(name: "invalid mid-value and a cut sequence at the end", bytes: [0x61, 0xFE, 0x62, 0xE2, 0x82], string: "a\u{FFFD}b"),
        // At the end, bytes no valid UTF-8 can start with are invalid, not cut.
        CutCase(name: "C0 at the end", bytes: [0x61, 0xC0], string: "a\u{FFFD}"),
        CutCase(name: "C1 at the end", bytes: [0x61, 0xC1], string: "a\u{FFFD}"),
        CutCase(name: "F5 at the end", bytes: [0x61, 0xF5], string: "a\u{FFFD}"),
        CutCase(name: "F7 and a continuation byte at the end", bytes: [0x61, 0xF7, 0x80], string: "a\u{FFFD}\u{FFFD}"),
        CutCase(name: "FF at the end", bytes: [0x61, 0xFF], string: "a\u{FFFD}"),
        CutCase(name: "E0 80 at the end (overlong)", bytes: [0x61, 0xE0, 0x80], string: "a\u{FFFD}\u{FFFD}"),
        CutCase(name: "ED A0 at the end (surrogate)", bytes: [0x61, 0xED, 0xA0], string: "a\u{FFFD}\u{FFFD}"),
        CutCase(name: "F0 8F at the end (overlong)", bytes: [0x61, 0xF0, 0x8F], string: "a\u{FFFD}\u{FFFD}"),
        CutCase(name: "F4 90 80 at the end (above U+10FFFF)", bytes: [0x61, 0xF4, 0x90, 0x80], string: "a\u{FFFD}\u{FFFD}\u{FFFD}"),
    ]

    @Test("lenient UTF-8: invalid bytes inside a value become U+FFFD, raw bytes are kept", arguments: invalidMidValue)
    func invalidBytes(_ invalid: CutCase) {
        let value = AttributeValue(bytes: invalid.bytes)
        #expect(!value.isValidUTF8)
        #expect(value.string == invalid.string)
        #expect(value.bytes == invalid.bytes)
    }

    @Test("lenient UTF-8 through the reassembler: the NP truncated Message to its max length inside 🚲")
    func cutValueReassembled() throws {
        let full = Array("On my way 🚲".utf8)
        for maxLength in (full.count - 3)...full.count {
            let sent = Array(full.prefix(maxLength))
            let command = GetNotificationAttributes(notificationUID: NotificationUID(2), attributes: [NotificationAttributeRequest(.message, maxLength: UInt16(maxLength))])
            let wire: [UInt8] = [0x00, 0x02, 0x00, 0x00, 0x00, 0x03, UInt8(maxLength), 0x00] + sent
            let events = reassemble(DataSourceRequest(command), DataSourceResponse.fragment(wire, mtu: 23))
            guard case .response(1, .notificationAttributes(let response))? = events.first, events.count == 1 else {
                Issue.record("max length \(maxLength): \(events)")
                continue
            }
            let value = try #require(response[.message])
            #expect(value.bytes == sent)
            #expect(value.string == (maxLength == full.count ? "On my way 🚲" : "On my way "))
            #expect(value.isValidUTF8 == (maxLength == full.count))
        }
    }

    @Test("a valid UTF-8 value given as bytes equals the same text")
    func validBytesAreText() {
        let value = AttributeValue(bytes: Array("邮件 🚲".utf8))
        #expect(value.isValidUTF8)
        #expect(value == AttributeValue("邮件 🚲"))
        #expect(value.hashValue == AttributeValue("邮件 🚲").hashValue)
        #expect(value.string == "邮件 🚲")
    }

    // MARK: Fragment sizes

    @Test("Data Source fragments are ATT MTU − 3 bytes", arguments: [(23, 20), (24, 21), (185, 182), (247, 244), (517, 514)])
    func fragmentSize(_ mtu: Int, _ size: Int) {
        let bytes = (0..<(size * 3 + 7)).map { UInt8(truncatingIfNeeded: $0) }
        let fragments = DataSourceResponse.fragment(bytes, mtu: mtu)
        #expect(fragments.map(\.count) == [size, size, size, 7])
        #expect(fragments.flatMap { $0 } == bytes)
        // An exact multiple leaves no short or empty last fragment.
        #expect(DataSourceResponse.fragment(Array(bytes.prefix(size * 2)), mtu: mtu).map(\.count) == [size, size])
        #expect(DataSourceResponse.fragment(Array(bytes.prefix(1)), mtu: mtu).map(\.count) == [1])
        #expect(DataSourceResponse.fragment([], mtu: mtu).isEmpty)
    }

    @Test("an ATT MTU outside 23…517 is clamped", arguments: [(Int.min, 20), (-1, 20), (0, 20), (22, 20), (518, 514), (65535, 514), (Int.max, 514)])
    func fragmentClamping(_ mtu: Int, _ size: Int) {
        #expect(DataSourceResponse.mtuRange == 23...517)
        let bytes = Array(repeating: UInt8(0x5A), count: 1100)
        let fragments = DataSourceResponse.fragment(bytes, mtu: mtu)
        #expect(fragments.dropLast().allSatisfy { $0.count == size })
        #expect(fragments.last!.count == 1100 - size * (fragments.count - 1))
        #expect(fragments.flatMap { $0 } == bytes)
    }

    @Test("fragments(mtu:) splits the encoded response")
    func responseFragments() {
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: NotificationUID(2), attributes: [NotificationAttribute(.title, AttributeValue(String(repeating: "t", count: 40)))]
        ))
        let fragments = response.fragments(mtu: 23)
        #expect(fragments.map(\.count) == [20, 20, 8])
        #expect(fragments.flatMap { $0 } == response.encode())
    }
}
