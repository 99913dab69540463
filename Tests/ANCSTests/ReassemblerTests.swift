// DataSourceReassembler at its edges (spec: "Data Source", rules): fragment
// boundaries anywhere, responses that do not match their request, requests
// ended by the caller, and a hostile NP that tries to make it hold memory.

// `@testable` only to read the value buffer's capacity: no public API shows it.
@testable import ANCS
import Testing

/// A reassembler that returns the events of each call.
struct Harness {
    var reassembler: DataSourceReassembler

    init(configuration: DataSourceReassembler.Configuration = .default) {
        reassembler = DataSourceReassembler(configuration: configuration)
    }

    mutating func expect(_ request: DataSourceRequest, id: DataSourceReassembler.RequestID) {
        reassembler.expect(request, id: id)
    }

    mutating func feed(_ fragment: [UInt8]) -> [DataSourceReassembler.Event] {
        var events: [DataSourceReassembler.Event] = []
        reassembler.feed(fragment) { events.append($0) }
        return events
    }

    /// Feeds each fragment in turn; all the events, in order.
    mutating func feed(_ fragments: [[UInt8]]) -> [DataSourceReassembler.Event] {
        fragments.flatMap { feed($0) }
    }

    mutating func finish() -> [DataSourceReassembler.Event] {
        var events: [DataSourceReassembler.Event] = []
        reassembler.finish { events.append($0) }
        return events
    }
}

/// Splits bytes into pieces of `size` (the last one shorter).
func pieces(_ bytes: [UInt8], size: Int) -> [[UInt8]] {
    stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

@Suite("Data Source reassembly")
struct ReassemblerTests {
    // MARK: Fixtures

    /// A: Get Notification Attributes for uid 5: AppIdentifier, Title (max 16), Message (max 32).
    static let commandA = GetNotificationAttributes(notificationUID: NotificationUID(5), attributes: [
        NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 16), NotificationAttributeRequest(.message, maxLength: 32),
    ])
    static let requestA = DataSourceRequest(commandA)
    static let responseA = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
        NotificationAttribute(.appIdentifier, "com.apple.MobileSMS"), NotificationAttribute(.title, "Alice"), NotificationAttribute(.message, "On my way 🚲"),
    ]))

    /// B: Get Notification Attributes for uid 6: Title (max 16), Date.
    static let requestB = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(6), attributes: [
        NotificationAttributeRequest(.title, maxLength: 16), NotificationAttributeRequest(.date),
    ]))
    static let responseB = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(6), attributes: [
        NotificationAttribute(.title, "Bob"), NotificationAttribute(.date, "20140322T154200"),
    ]))

    /// C: Get App Attributes for com.apple.mobilemail: DisplayName.
    static let requestC = DataSourceRequest(GetAppAttributes(appIdentifier: "com.apple.mobilemail"))
    static let responseC = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: "com.apple.mobilemail", attributes: [
        AppAttribute(.displayName, "邮件"),
    ]))

    /// Response A with another NotificationUID: same framing, wrong subject.
    static func responseA(uid: UInt32) -> [UInt8] {
        var bytes = responseA.encode()
        bytes[1] = UInt8(uid & 0xFF)
        bytes[2] = UInt8(uid >> 8 & 0xFF)
        bytes[3] = UInt8(uid >> 16 & 0xFF)
        bytes[4] = UInt8(uid >> 24)
        return bytes
    }

    /// Response C for another AppIdentifier.
    static func responseC(appIdentifier: String) -> [UInt8] {
        DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: appIdentifier, attributes: [AppAttribute(.displayName, "邮件")])).encode()
    }

    // MARK: Fragment boundaries

    @Test("a response one byte at a time")
    func oneByteAtATime() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        let wire = Self.responseA.encode()
        for (index, byte) in wire.enumerated() {
            let events = harness.feed([byte])
            if index < wire.count - 1 {
                #expect(events.isEmpty, "byte \(index)")
                #expect(harness.reassembler.isInsideResponse)
                #expect(harness.reassembler.outstandingCount == 1)
            } else {
                #expect(events == [.response(1, Self.responseA)])
            }
        }
        #expect(!harness.reassembler.isInsideResponse)
        #expect(harness.reassembler.outstandingCount == 0)
        #expect(harness.finish().isEmpty)
    }

    @Test("a whole response in one fragment")
    func whole() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        #expect(!harness.reassembler.isInsideResponse)
        #expect(harness.feed(Self.responseA.encode()) == [.response(1, Self.responseA)])
        #expect(harness.reassembler.outstandingCount == 0)
        #expect(harness.finish().isEmpty)
    }

    @Test("every split point of a response into two fragments")
    func everySplit() {
        let wire = Self.responseA.encode()
        for cut in 0...wire.count {
            var harness = Harness()
            harness.expect(Self.requestA, id: 1)
            let events = harness.feed([Array(wire[..<cut]), Array(wire[cut...])])
            #expect(events == [.response(1, Self.responseA)], "cut at \(cut)")
        }
    }

    @Test("two back-to-back responses in one fragment")
    func backToBack() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestC, id: 2)
        harness.expect(Self.requestB, id: 3)
        let events = harness.feed(Self.responseA.encode() + Self.responseC.encode() + Self.responseB.encode())
        #expect(events == [.response(1, Self.responseA), .response(2, Self.responseC), .response(3, Self.responseB)])
        #expect(harness.reassembler.outstandingCount == 0)
    }

    @Test("responses re-split across their boundaries at MTU 23")
    func acrossBoundaries() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestC, id: 2)
        harness.expect(Self.requestB, id: 3)
        let wire = Self.responseA.encode() + Self.responseC.encode() + Self.responseB.encode()
        let events = harness.feed(DataSourceResponse.fragment(wire, mtu: 23))
        #expect(events == [.response(1, Self.responseA), .response(2, Self.responseC), .response(3, Self.responseB)])
    }

    @Test("a fragment beginning with 0x00 or 0x01 in the middle of a response is data")
    func headerLikeBytesMidResponse() {
        // Values made of 0x00 and 0x01, so fragments start with what looks like a new header.
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
            NotificationAttribute(.appIdentifier, AttributeValue(bytes: [0x01, 0x61, 0x00, 0x00])),
            NotificationAttribute(.title, AttributeValue(bytes: [0x00, 0x05, 0x00, 0x00, 0x00, 0x01])),
            NotificationAttribute(.message, AttributeValue(bytes: [0x01] + Array("com.apple.mobilemail".utf8) + [0x00, 0x00])),
        ]))
        let wire = response.encode()
        var tested = 0
        for cut in 1..<wire.count where wire[cut] == 0x00 || wire[cut] == 0x01 {
            var harness = Harness()
            harness.expect(Self.requestA, id: 1)
            // Requests whose headers those bytes resemble are waiting behind.
            harness.expect(Self.requestC, id: 2)
            harness.expect(DataSourceRequest(GetAppAttributes(appIdentifier: "a\0")), id: 3)
            let events = harness.feed([Array(wire[..<cut]), Array(wire[cut...])])
            #expect(events == [.response(1, response)], "fragment starting at byte \(cut) (0x0\(wire[cut]))")
            #expect(harness.reassembler.outstandingCount == 2)
            tested += 1
        }
        #expect(tested > 10)
    }

    @Test("an empty fragment changes nothing")
    func emptyFragment() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        let wire = Self.responseA.encode()
        #expect(harness.feed([[], Array(wire.prefix(7)), [], Array(wire.dropFirst(7)), []]) == [.response(1, Self.responseA)])
    }

    // MARK: A response that does not match its request

    @Test("wrong CommandID: the request fails at offset 0; the unframeable bytes are dropped to the end of their fragment; the next response parses")
    func wrongCommandID() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        // A Get App Attributes response where a Get Notification Attributes one was expected.
        let events = harness.feed(Self.responseC.encode() + Self.responseB.encode())
        #expect(events == [.failed(1, DecodingError(.wrongCommandID(expected: .getNotificationAttributes, actual: .getAppAttributes), at: 0))])
        // With no framing there is no telling where those bytes end: B's bytes
        // in the same fragment are dropped with them, B stays outstanding.
        #expect(harness.reassembler.outstandingCount == 1)
        #expect(!harness.reassembler.isInsideResponse)
        #expect(harness.feed(DataSourceResponse.fragment(Self.responseB.encode(), mtu: 23)) == [.response(2, Self.responseB)])
    }

    @Test("a response that cannot be framed, over several notifications, never fails the next request: the rest is unsolicited, the next response parses",
          arguments: [[UInt8](repeating: 0x41, count: 40), [0x07] + [UInt8](repeating: 0x00, count: 39), (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 3) }])
    func unframeableResponseSparesTheNext(_ garbageTail: [UInt8]) {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        // An unknown CommandID (7), then bytes no framing explains, over three notifications.
        let garbage = pieces([0x07] + garbageTail, size: 20)
        let first = harness.feed(garbage[0])
        #expect(first == [.failed(1, DecodingError(.wrongCommandID(expected: .getNotificationAttributes, actual: CommandID(rawValue: 7)), at: 0))])
        for fragment in garbage.dropFirst() {
            #expect(harness.feed(fragment) == [.unsolicited(DecodingError(.unsolicitedResponse, at: 0))])
        }
        #expect(harness.reassembler.outstandingCount == 1)
        #expect(harness.feed(pieces(Self.responseB.encode(), size: 20)) == [.response(2, Self.responseB)])
        // Back in step: a wrong response now fails its request again.
        harness.expect(Self.requestA, id: 3)
        #expect(harness.feed([0x05, 0x00]).count == 1)
        #expect(harness.reassembler.outstandingCount == 0)
    }

    @Test("unsolicited bytes over several notifications never fail a request registered while they arrive")
    func unsolicitedSparesTheNext() {
        var harness = Harness()
        let unsolicited = DataSourceReassembler.Event.unsolicited(DecodingError(.unsolicitedResponse, at: 0))
        #expect(harness.feed([0x09, 0x01, 0x02]) == [unsolicited])
        harness.expect(Self.requestA, id: 1)
        #expect(harness.feed([0x33, 0x34, 0x35]) == [unsolicited])
        #expect(harness.feed(pieces(Self.responseA.encode(), size: 7)) == [.response(1, Self.responseA)])
    }

    @Test("wrong CommandID (reserved value) and a next request registered afterwards")
    func wrongCommandIDReserved() {
        var harness = Harness()
        harness.expect(Self.requestC, id: 1)
        let events = harness.feed([0x07, 0x01, 0x02, 0x03])
        guard case .failed(1, let error)? = events.first, events.count == 1 else {
            Issue.record("events \(events)")
            return
        }
        #expect(error.reason == .wrongCommandID(expected: .getAppAttributes, actual: CommandID(rawValue: 7)))
        #expect(error.offset == 0)
        #expect(error.description.contains("CommandID 7"))
        harness.expect(Self.requestA, id: 2)
        #expect(harness.feed(pieces(Self.responseA.encode(), size: 5)) == [.response(2, Self.responseA)])
    }

    @Test("wrong NotificationUID: typed error at offset 1, the framing is kept, the next response in the same fragment parses",
          arguments: [UInt32(7), 0x0600_0005, 0x0000_0105, 0xFFFF_FFFF])
    func wrongNotificationUIDSameFragment(_ uid: UInt32) {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        let events = harness.feed(Self.responseA(uid: uid) + Self.responseB.encode())
        #expect(events == [
            .failed(1, DecodingError(.wrongNotificationUID(expected: NotificationUID(5), actual: NotificationUID(uid)), at: 1)),
            .response(2, Self.responseB),
        ])
        #expect(harness.reassembler.outstandingCount == 0)
    }

    @Test("wrong NotificationUID: the next response, registered after the failure, parses from later fragments")
    func wrongNotificationUIDLaterFragments() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        // The wrong response byte by byte: the error comes with its last UID byte.
        let wrong = Self.responseA(uid: 0x0500_0000)
        var events: [DataSourceReassembler.Event] = []
        for (index, byte) in wrong.enumerated() {
            let step = harness.feed([byte])
            if index == 4 {
                #expect(step == [.failed(1, DecodingError(.wrongNotificationUID(expected: NotificationUID(5), actual: NotificationUID(0x0500_0000)), at: 1))])
            }
            events += step
        }
        #expect(events.count == 1)
        #expect(!harness.reassembler.isInsideResponse)
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed(pieces(Self.responseB.encode(), size: 3)) == [.response(2, Self.responseB)])
    }

    @Test("wrong AppIdentifier: typed error at the first differing byte, the next response parses in the same fragment",
          arguments: [
            ("com.apple.mobilesms", 17),  // differs at "s"
            ("com.apple.mobile", 17),  // shorter: NUL where "m" was expected
            ("com.apple.mobilemailx", 21),  // longer: "x" where the NUL was expected
            ("org.example", 1),  // differs at once
            ("", 1),
          ])
    func wrongAppIdentifierSameFragment(_ identifier: String, _ offset: Int) {
        var harness = Harness()
        harness.expect(Self.requestC, id: 1)
        harness.expect(Self.requestA, id: 2)
        let events = harness.feed(Self.responseC(appIdentifier: identifier) + Self.responseA.encode())
        #expect(events == [
            .failed(1, DecodingError(.wrongAppIdentifier, at: offset)),
            .response(2, Self.responseA),
        ])
    }

    @Test("wrong AppIdentifier: the next response parses from later fragments")
    func wrongAppIdentifierLaterFragments() {
        var harness = Harness()
        harness.expect(Self.requestC, id: 1)
        harness.expect(Self.requestC, id: 2)
        let wrong = pieces(Self.responseC(appIdentifier: "com.apple.mobilesms"), size: 4)
        #expect(harness.feed(wrong) == [.failed(1, DecodingError(.wrongAppIdentifier, at: 17))])
        #expect(harness.feed(pieces(Self.responseC.encode(), size: 4)) == [.response(2, Self.responseC)])
    }

    @Test("a value longer than the max length asked fails at its Length field; the next response parses")
    func valueTooLong() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        let long = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
            NotificationAttribute(.appIdentifier, "com.a"), NotificationAttribute(.title, AttributeValue(String(repeating: "T", count: 17))), NotificationAttribute(.message, "m"),
        ]))
        // Header 5, AppIdentifier tuple 3 + 5, Title ID at 13, its Length at 14.
        let expected: [DataSourceReassembler.Event] = [
            .failed(1, DecodingError(.valueTooLong(attribute: 1, length: 17, maxLength: 16), at: 14)),
            .response(2, Self.responseB),
        ]
        #expect(harness.feed(long.encode() + Self.responseB.encode()) == expected)

        // The same, fragmented at MTU 23 across both responses.
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed(DataSourceResponse.fragment(long.encode() + Self.responseB.encode(), mtu: 23)) == expected)
    }

    @Test("a value without a max length is bounded by Configuration.unlimitedValueLength")
    func unlimitedValueLength() {
        var harness = Harness(configuration: .init(unlimitedValueLength: 8))
        #expect(DataSourceReassembler.Configuration.default.unlimitedValueLength == 1024)
        let request = DataSourceRequest(GetAppAttributes(appIdentifier: "a"))
        let exactly8 = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: "a", attributes: [AppAttribute(.displayName, "12345678")]))
        let nine = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: "a", attributes: [AppAttribute(.displayName, "123456789")]))
        harness.expect(request, id: 1)
        harness.expect(request, id: 2)
        #expect(harness.feed(exactly8.encode() + nine.encode()) == [
            .response(1, exactly8),
            .failed(2, DecodingError(.valueTooLong(attribute: 0, length: 9, maxLength: 8), at: 4)),
        ])
    }

    @Test("a tuple out of order fails at its AttributeID; the next response parses")
    func tupleOutOfOrder() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        let swapped = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
            NotificationAttribute(.appIdentifier, "com.a"), NotificationAttribute(.message, "m"), NotificationAttribute(.title, "t"),
        ]))
        #expect(harness.feed(swapped.encode() + Self.responseB.encode()) == [
            .failed(1, DecodingError(.unexpectedAttribute(expected: 1, actual: 3), at: 13)),
            .response(2, Self.responseB),
        ])
    }

    @Test("a tuple not asked for fails at its AttributeID; the next response parses from a later fragment")
    func tupleNotAsked() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        let notAsked = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
            NotificationAttribute(.appIdentifier, "com.a"), NotificationAttribute(.title, "t"), NotificationAttribute(.subtitle, "s"),
        ]))
        // Header 5, AppIdentifier 3 + 5, Title 3 + 1: the third tuple's ID at 17.
        #expect(harness.feed(notAsked.encode()) == [.failed(1, DecodingError(.unexpectedAttribute(expected: 3, actual: 2), at: 17))])
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed(Self.responseB.encode()) == [.response(2, Self.responseB)])
    }

    // MARK: Incomplete and unsolicited

    @Test("finish mid-response: incomplete, with the tuples complete and the offset reached")
    func incompleteMidResponse() {
        let wire = Self.responseA.encode()
        // Header 5, AppIdentifier tuple 3 + 19 = 27, Title tuple 3 + 5 = 35.
        let cases: [(cut: Int, tuples: Int)] = [(1, 0), (3, 0), (5, 0), (6, 0), (26, 0), (27, 1), (34, 1), (35, 2), (wire.count - 1, 2)]
        for (cut, tuples) in cases {
            var harness = Harness()
            harness.expect(Self.requestA, id: 1)
            harness.expect(Self.requestB, id: 2)
            #expect(harness.feed(Array(wire[..<cut])).isEmpty)
            #expect(harness.finish() == [
                .failed(1, DecodingError(.incomplete(expectedTuples: 3, receivedTuples: tuples), at: cut)),
                .failed(2, DecodingError(.incomplete(expectedTuples: 2, receivedTuples: 0), at: 0)),
            ], "cut at \(cut)")
            // Everything ended: a new request starts clean.
            #expect(harness.reassembler.outstandingCount == 0)
            #expect(!harness.reassembler.isInsideResponse)
            harness.expect(Self.requestB, id: 3)
            #expect(harness.feed(Self.responseB.encode()) == [.response(3, Self.responseB)])
        }
    }

    @Test("finish with nothing received: incomplete at offset 0; with nothing outstanding: no event")
    func finishIdle() {
        var harness = Harness()
        #expect(harness.finish().isEmpty)
        harness.expect(Self.requestC, id: 9)
        #expect(harness.finish() == [.failed(9, DecodingError(.incomplete(expectedTuples: 1, receivedTuples: 0), at: 0))])
        #expect(harness.finish().isEmpty)
    }

    @Test("unsolicited bytes are reported once per fragment and dropped; a request registered afterwards parses")
    func unsolicited() {
        var harness = Harness()
        let unsolicited = DataSourceReassembler.Event.unsolicited(DecodingError(.unsolicitedResponse, at: 0))
        #expect(harness.feed(Self.responseA.encode()) == [unsolicited])
        #expect(harness.feed([0x00]) == [unsolicited])
        #expect(harness.feed([0x01, 0x02, 0x03]) == [unsolicited])
        #expect(!harness.reassembler.isInsideResponse)
        harness.expect(Self.requestA, id: 1)
        #expect(harness.feed(pieces(Self.responseA.encode(), size: 20)) == [.response(1, Self.responseA)])
    }

    @Test("bytes after the end of the last response are unsolicited; the next request parses")
    func unsolicitedAfterResponse() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        #expect(harness.feed(Self.responseA.encode() + [0x00, 0x05, 0x00]) == [
            .response(1, Self.responseA), .unsolicited(DecodingError(.unsolicitedResponse, at: 0)),
        ])
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed(Self.responseB.encode()) == [.response(2, Self.responseB)])
    }

    @Test("a request registered after unsolicited bytes and never answered fails incomplete at offset 0")
    func finishAfterUnsolicited() {
        var harness = Harness()
        #expect(harness.feed([0x00, 0x05]).count == 1)
        harness.expect(Self.requestB, id: 2)
        #expect(harness.finish() == [.failed(2, DecodingError(.incomplete(expectedTuples: 2, receivedTuples: 0), at: 0))])
    }

    // MARK: Cancellation

    @Test("cancel(responseMayFollow: true): the late response is consumed silently and the next one parses",
          arguments: [1, 3, 7, 1000])
    func cancelResponseMayFollow(_ pieceSize: Int) {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        let cancelled1 = harness.reassembler.cancel(1, responseMayFollow: true)
        #expect(cancelled1)
        #expect(harness.reassembler.outstandingCount == 2)
        let wire = Self.responseA.encode() + Self.responseB.encode()
        #expect(harness.feed(pieces(wire, size: pieceSize)) == [.response(2, Self.responseB)])
        #expect(harness.reassembler.outstandingCount == 0)
        #expect(harness.finish().isEmpty)
    }

    @Test("cancel(responseMayFollow: true) in the middle of the header or of the tuples")
    func cancelMidResponse() {
        let wire = Self.responseA.encode()
        for cut in [2, 5, 6, 20, wire.count - 1] {
            var harness = Harness()
            harness.expect(Self.requestA, id: 1)
            harness.expect(Self.requestB, id: 2)
            #expect(harness.feed(Array(wire[..<cut])).isEmpty)
            let cancelled1 = harness.reassembler.cancel(1, responseMayFollow: true)
            #expect(cancelled1)
            #expect(harness.feed(Array(wire[cut...]) + Self.responseB.encode()) == [.response(2, Self.responseB)], "cancelled after \(cut) bytes")
        }
    }

    @Test("cancel of a request that is never answered: the next request's response still parses")
    func cancelNeverAnswered() {
        // Same CommandID, another NotificationUID.
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        harness.reassembler.cancel(1, responseMayFollow: true)
        #expect(harness.feed(pieces(Self.responseB.encode(), size: 2)) == [.response(2, Self.responseB)])
        #expect(harness.reassembler.outstandingCount == 0)

        // Another CommandID.
        harness.expect(Self.requestC, id: 3)
        harness.expect(Self.requestA, id: 4)
        harness.reassembler.cancel(3, responseMayFollow: true)
        #expect(harness.feed(Self.responseA.encode()) == [.response(4, Self.responseA)])

        // Two AppIdentifiers that share a prefix, and one that is a prefix of the other.
        let mailFull = DataSourceRequest(GetAppAttributes(appIdentifier: "com.apple.mobilemailer"))
        harness.expect(mailFull, id: 5)
        harness.expect(DataSourceRequest(GetAppAttributes(appIdentifier: "com.apple.mobilesms")), id: 6)
        harness.expect(Self.requestC, id: 7)
        harness.reassembler.cancel(5, responseMayFollow: true)
        harness.reassembler.cancel(6, responseMayFollow: true)
        #expect(harness.feed(pieces(Self.responseC.encode(), size: 1)) == [.response(7, Self.responseC)])
        #expect(harness.reassembler.outstandingCount == 0)
    }

    @Test("cancel of every request, none answered: the bytes are unsolicited")
    func cancelAllNeverAnswered() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.reassembler.cancel(1, responseMayFollow: true)
        #expect(harness.feed(Self.responseC.encode()) == [.unsolicited(DecodingError(.unsolicitedResponse, at: 0))])
        #expect(harness.reassembler.outstandingCount == 0)
        #expect(harness.finish().isEmpty)
    }

    @Test("cancel(responseMayFollow: false): the request is forgotten, the next response parses")
    func cancelNoResponse() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        let cancelled1 = harness.reassembler.cancel(1, responseMayFollow: false)
        #expect(cancelled1)
        #expect(harness.reassembler.outstandingCount == 1)
        let cancelledAgain = harness.reassembler.cancel(1, responseMayFollow: false)
        #expect(!cancelledAgain, "already forgotten")
        let cancelled99 = harness.reassembler.cancel(99, responseMayFollow: true)
        #expect(!cancelled99, "never registered")
        #expect(harness.feed(pieces(Self.responseB.encode(), size: 4)) == [.response(2, Self.responseB)])
        #expect(harness.finish().isEmpty)
    }

    @Test("cancel(responseMayFollow: false) after part of a header matched: those bytes are dropped, the next response parses")
    func cancelNoResponseMidHeader() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed([0x00, 0x05]).isEmpty)
        let cancelled1 = harness.reassembler.cancel(1, responseMayFollow: false)
        #expect(cancelled1)
        #expect(harness.reassembler.outstandingCount == 1)
        #expect(harness.feed(Self.responseB.encode()) == [.response(2, Self.responseB)])
    }

    @Test("a cancelled request is never reported by finish")
    func finishAfterCancel() {
        var harness = Harness()
        harness.expect(Self.requestA, id: 1)
        harness.expect(Self.requestB, id: 2)
        #expect(harness.feed(Array(Self.responseA.encode().prefix(10))).isEmpty)
        harness.reassembler.cancel(1, responseMayFollow: true)
        harness.reassembler.cancel(2, responseMayFollow: true)
        #expect(harness.finish().isEmpty)
        #expect(harness.reassembler.outstandingCount == 0)
    }

    // MARK: One buffer per response

    /// A response's values share one buffer; each value is still only its
    /// own bytes: equality, hashing, `bytes` and `string` (a sequence cut at
    /// the end of one value is not completed by the next value's bytes).
    @Test("the values of a response share one buffer, each is its own bytes", arguments: [1, 7, 20, 200])
    func valuesShareOneBuffer(size: Int) throws {
        var harness = Harness()
        let request = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(9), attributes: [
            NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 5),
            NotificationAttributeRequest(.subtitle, maxLength: 10), NotificationAttributeRequest(.message, maxLength: 100),
        ]))
        // Title: "abc" and the first 2 bytes of "€" (E2 82 AC); Message continues with AC.
        let title: [UInt8] = [0x61, 0x62, 0x63, 0xE2, 0x82]
        let message: [UInt8] = [0xAC] + Array("ok €".utf8)
        let bytes: [UInt8] = [0x00, 0x09, 0x00, 0x00, 0x00,
                              0x00, 0x03, 0x00, 0x61, 0x2E, 0x62,
                              0x01, 0x05, 0x00] + title + [0x02, 0x00, 0x00, 0x03, UInt8(message.count), 0x00] + message
        harness.expect(request, id: 1)
        let events = harness.feed(pieces(bytes, size: size))
        #expect(events.count == 1)
        let event = try #require(events.first)
        let response = try #require({ if case .response(1, .notificationAttributes(let response)) = event { response } else { nil } }())
        let values = response.attributes.map(\.value)
        #expect(values == [AttributeValue("a.b"), AttributeValue(bytes: title), .empty, AttributeValue(bytes: message)])
        #expect(values.map(\.bytes) == [Array("a.b".utf8), title, [], message])
        #expect(values.map(\.count) == [3, 5, 0, message.count])
        #expect(values[1].string == "abc")
        #expect(!values[1].isValidUTF8)
        #expect(values[3].string == "\u{FFFD}ok €")
        #expect(Set(values).count == 4)
        #expect(values[1].hashValue == AttributeValue(bytes: title).hashValue)
        #expect(values[2].hashValue == AttributeValue.empty.hashValue)
    }

    // A handler that reached the reassembler while it is fed would find it
    // half updated. Nothing in the reassembler guards against it: Swift's
    // exclusivity checks do, at compile time for a reassembler held as a
    // value (the Consumer hands its handler only its session, a separate
    // field: Consumer.receivedAny), and at run time, in every build, for one
    // reached through a class.
    final class Holder: @unchecked Sendable {
        var reassembler = DataSourceReassembler()
    }

    @Test("a feed handler that calls back into the reassembler traps")
    func reentrantHandlerTraps() async {
        await #expect(processExitsWith: .failure) {
            let holder = Holder()
            holder.reassembler.expect(ReassemblerTests.requestA, id: 1)
            holder.reassembler.feed(ReassemblerTests.responseA.encode()) { _ in
                _ = holder.reassembler.cancel(1, responseMayFollow: true)
            }
        }
    }

    // MARK: Memory bound against a hostile NP

    /// At most this much capacity may back `bound` value bytes (growth doubles, plus allocator rounding).
    static func allowedCapacity(_ bound: Int) -> Int { 2 * bound + 64 }

    @Test("a hostile NP claiming a 65 535-byte value beyond the max length asked cannot make the reassembler hold it",
          arguments: [NotificationAttributeID.title, .appIdentifier])
    func hostileLength(_ attribute: NotificationAttributeID) {
        var harness = Harness()
        let command = GetNotificationAttributes(notificationUID: NotificationUID(5), attributes: [NotificationAttributeRequest(attribute, maxLength: 16)])
        let request = DataSourceRequest(command)
        let bound = request.valueBound(unlimited: DataSourceReassembler.Configuration.default.unlimitedValueLength)
        let limit = attribute == .title ? 16 : 1024
        #expect(bound == 3 + limit)  // the value and its tuple's ID and Length
        harness.expect(request, id: 1)
        harness.expect(Self.requestB, id: 2)
        let hostile: [UInt8] = [0x00, 0x05, 0x00, 0x00, 0x00, attribute.rawValue, 0xFF, 0xFF] + Array(repeating: 0x41, count: 0xFFFF)
        var events: [DataSourceReassembler.Event] = []
        for fragment in DataSourceResponse.fragment(hostile + Self.responseB.encode(), mtu: 23) {
            events += harness.feed(fragment)
            #expect(harness.reassembler.scratch.capacity <= Self.allowedCapacity(bound))
        }
        #expect(events == [
            .failed(1, DecodingError(.valueTooLong(attribute: attribute.rawValue, length: 0xFFFF, maxLength: limit), at: 6)),
            .response(2, Self.responseB),
        ])
        #expect(harness.reassembler.scratch.capacity <= Self.allowedCapacity(bound))
    }

    @Test("values within the bound, spanning fragments, hold no more than the bound (the sum of the max lengths asked, and 3 bytes per attribute for its ID and length)")
    func boundedWithinLimits() {
        var harness = Harness()
        let request = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(1), attributes: [
            NotificationAttributeRequest(.title, maxLength: 100), NotificationAttributeRequest(.message, maxLength: 300),
        ]))
        let bound = request.valueBound(unlimited: 1024)
        #expect(bound == 3 + 100 + 3 + 300)
        let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(1), attributes: [
            NotificationAttribute(.title, AttributeValue(String(repeating: "t", count: 100))),
            NotificationAttribute(.message, AttributeValue(String(repeating: "m", count: 300))),
        ]))
        for round in 0..<50 {
            harness.expect(request, id: UInt32(round))
            var events: [DataSourceReassembler.Event] = []
            for fragment in pieces(response.encode(), size: 7) {
                events += harness.feed(fragment)
                #expect(harness.reassembler.scratch.capacity <= Self.allowedCapacity(bound))
            }
            #expect(events == [.response(UInt32(round), response)])
        }
    }

    @Test("many empty values, or a long value after a short one, hold exactly the bound: the scratch buffer grows to what it holds, never past the bound")
    func boundedExactly() {
        var harness = Harness()
        // Fifteen empty titles: nothing but their tuples' IDs and lengths.
        let empties = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(1),
            attributes: Array(repeating: NotificationAttributeRequest(.title, maxLength: 0), count: 15)))
        let emptiesBound = empties.valueBound(unlimited: 1024)
        #expect(emptiesBound == 45)
        harness.expect(empties, id: 1)
        let emptyResponse = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(1),
            attributes: Array(repeating: NotificationAttribute(.title, AttributeValue("")), count: 15)))
        #expect(harness.feed(pieces(emptyResponse.encode(), size: 5)) == [.response(1, emptyResponse)])
        #expect(harness.reassembler.scratch.count <= emptiesBound)
        // A new reassembler: 10 bytes, then 5 (15 + 6 in all).
        harness = Harness()
        let twoValues = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(2), attributes: [
            NotificationAttributeRequest(.title, maxLength: 10), NotificationAttributeRequest(.subtitle, maxLength: 5),
        ]))
        harness.expect(twoValues, id: 2)
        let twoResponse = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(2), attributes: [
            NotificationAttribute(.title, AttributeValue("0123456789")), NotificationAttribute(.subtitle, AttributeValue("abcde")),
        ]))
        #expect(harness.feed(pieces(twoResponse.encode(), size: 4)) == [.response(2, twoResponse)])
        #expect(harness.reassembler.scratch.count <= twoValues.valueBound(unlimited: 1024))
    }

    @Test("an NP streaming endless bytes holds nothing: a never-ending AppIdentifier, then endless unsolicited bytes")
    func endlessStream() {
        var harness = Harness()
        harness.expect(Self.requestC, id: 1)
        let junk = [UInt8](repeating: 0x7A, count: 20)
        var events = harness.feed([0x01] + Array("com.apple.mobilesms".utf8))
        for _ in 0..<20_000 {
            events += harness.feed(junk)
        }
        #expect(events == [.failed(1, DecodingError(.wrongAppIdentifier, at: 17))])
        #expect(harness.reassembler.isInsideResponse)
        #expect(harness.reassembler.scratch.capacity == 0)
        // The caller gives up: nothing more to report, the state is clean.
        #expect(harness.finish().isEmpty)
        #expect(!harness.reassembler.isInsideResponse)

        var unsolicited = 0
        for _ in 0..<20_000 {
            for event in harness.feed(junk) {
                if case .unsolicited = event { unsolicited += 1 } else { Issue.record("unexpected \(event)") }
            }
        }
        #expect(unsolicited == 20_000)
        #expect(harness.reassembler.scratch.capacity == 0)
    }

    @Test("an NP streaming a 65 535-byte value forever, one allowed response after another, stays within the bound")
    func endlessLegitimateStream() {
        var harness = Harness()
        let request = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(1), attributes: [NotificationAttributeRequest(.message, maxLength: 4096)]))
        let hostile: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0xFF, 0xFF] + Array(repeating: 0x41, count: 0xFFFF)
        var failures = 0
        for round in 0..<5 {
            harness.expect(request, id: UInt32(round))
            for fragment in DataSourceResponse.fragment(hostile, mtu: 517) {
                for event in harness.feed(fragment) {
                    if case .failed(_, let error) = event, case .valueTooLong = error.reason { failures += 1 } else { Issue.record("unexpected \(event)") }
                }
                #expect(harness.reassembler.scratch.capacity <= Self.allowedCapacity(4096))
            }
        }
        #expect(failures == 5)
        #expect(harness.reassembler.outstandingCount == 0)
    }
}
