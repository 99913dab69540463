// DataSourceParser, the one-response streaming parser, at its edges and
// against the reassembler: for one request it must end the same way (the
// same response, or the same error at the same offset) however the bytes
// are cut, without keeping the values itself.

import ANCS
import ANCSTestSupport
import Testing

/// What a parse produced: the response built from the parser's events, or
/// its error; how many bytes of each fragment it took.
struct ParserRun: Equatable {
    var outcome: Result<DataSourceResponse, DecodingError>?
    var consumed: [Int] = []
    var failures = 0
    var completions = 0
}

/// Feeds `fragments` to a parser begun on `command` and builds the response
/// from its events; `finish` at the end when asked (the link dropping).
func parse(_ command: [UInt8], _ fragments: [[UInt8]], finish: Bool = true) throws -> ParserRun {
    var parser = DataSourceParser()
    try command.withUnsafeBytes { raw in try parser.begin(raw) }
    let asked = try ControlPointCommand.decode(command)
    var run = ParserRun()
    var attributes: [(id: UInt8, value: [UInt8], length: Int)] = []
    for fragment in fragments {
        let consumed = command.withUnsafeBytes { commandBytes in
            fragment.withUnsafeBytes { bytes in
                parser.feed(bytes, answering: commandBytes) { event in
                    switch event {
                    case .attribute(let id, let length):
                        attributes.append((id, [], length))
                    case .value(let piece):
                        #expect(!piece.isEmpty, "an empty value piece")
                        attributes[attributes.count - 1].value += piece
                    case .complete:
                        run.completions += 1
                        #expect(attributes.allSatisfy { $0.value.count == $0.length }, "a value shorter or longer than its length")
                        switch asked {
                        case .getNotificationAttributes(let asked):
                            run.outcome = .success(.notificationAttributes(NotificationAttributesResponse(notificationUID: asked.notificationUID, attributes: attributes.map {
                                NotificationAttribute(NotificationAttributeID(rawValue: $0.id), AttributeValue(bytes: $0.value))
                            })))
                        case .getAppAttributes(let asked):
                            run.outcome = .success(.appAttributes(AppAttributesResponse(appIdentifierBytes: asked.appIdentifierBytes, attributes: attributes.map {
                                AppAttribute(AppAttributeID(rawValue: $0.id), AttributeValue(bytes: $0.value))
                            })))
                        case .performNotificationAction:
                            Issue.record("a response completed for a Perform Notification Action")
                        }
                    case .failed(let error):
                        run.failures += 1
                        run.outcome = .failure(error)
                    }
                }
            }
        }
        run.consumed.append(consumed)
    }
    if finish, let error = command.withUnsafeBytes({ parser.finish(answering: $0) }) {
        #expect(run.outcome == nil, "finish reported an error after the request ended")
        run.outcome = .failure(error)
    }
    #expect(!parser.isParsing, "still parsing after finish")
    return run
}

/// The same bytes through the reassembler, one request: how it ends.
func reassemble(_ command: [UInt8], _ fragments: [[UInt8]]) throws -> Result<DataSourceResponse, DecodingError>? {
    let request = try #require(DataSourceRequest(try ControlPointCommand.decode(command)))
    var outcome: Result<DataSourceResponse, DecodingError>?
    for event in reassemble(request, fragments, unlimitedValueLength: 0xFFFF) {
        switch event {
        case .response(_, let response): outcome = .success(response)
        case .failed(_, let error): outcome = .failure(error)
        case .unsolicited: break
        }
    }
    return outcome
}

@Suite("Data Source parser (one response at a time)")
struct DataSourceParserTests {
    static let command = try! ControlPointCommand.getNotificationAttributes(ReassemblerTests.commandA).encode()
    static let response = ReassemblerTests.responseA.encode()
    static let appCommand = try! ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifier: "com.apple.mobilemail")).encode()
    static let appResponse = ReassemblerTests.responseC.encode()

    @Test("a response one byte at a time, whole, and cut at every point into two")
    func everyCut() throws {
        let whole = try parse(Self.command, [Self.response])
        #expect(whole.outcome == .success(ReassemblerTests.responseA))
        #expect(whole.consumed == [Self.response.count])
        let bytewise = try parse(Self.command, pieces(Self.response, size: 1))
        #expect(bytewise.outcome == .success(ReassemblerTests.responseA))
        #expect(bytewise.completions == 1)
        for cut in 0...Self.response.count {
            let run = try parse(Self.command, [Array(Self.response[..<cut]), Array(Self.response[cut...])])
            #expect(run.outcome == .success(ReassemblerTests.responseA), "cut at \(cut)")
            #expect(run.consumed == [cut, Self.response.count - cut], "cut at \(cut)")
        }
    }

    @Test("a value cut inside a UTF-8 sequence is handed over byte for byte")
    func utf8Cut() throws {
        // "On my way 🚲": the bicycle's four bytes are the value's last four.
        let end = Self.response.count
        for cut in (end - 3)..<end {
            let run = try parse(Self.command, [Array(Self.response[..<cut]), Array(Self.response[cut...])])
            let response = try #require(try run.outcome?.get())
            guard case .notificationAttributes(let attributes) = response else { Issue.record("not a notification response"); continue }
            #expect(attributes[.message] == "On my way 🚲", "cut at \(cut)")
        }
    }

    @Test("bytes after the response are not taken; nothing is taken before begin or after the end")
    func trailingBytes() throws {
        let run = try parse(Self.command, [Self.response + [0x00, 0x05], [0x01]])
        #expect(run.outcome == .success(ReassemblerTests.responseA))
        #expect(run.consumed == [Self.response.count, 0])
        var idle = DataSourceParser()
        let taken = [UInt8](Self.command).withUnsafeBytes { command in
            Self.response.withUnsafeBytes { idle.feed($0, answering: command) { _ in Issue.record("an event with nothing begun") } }
        }
        #expect(taken == 0)
    }

    @Test("app attributes, and a zero-length value")
    func appAttributesAndEmptyValue() throws {
        #expect(try parse(Self.appCommand, pieces(Self.appResponse, size: 3)).outcome == .success(ReassemblerTests.responseC))
        let empty = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: "com.apple.mobilemail", attributes: [AppAttribute(.displayName, "")]))
        let run = try parse(Self.appCommand, [empty.encode()])
        #expect(run.outcome == .success(empty))
        #expect(run.consumed == [empty.encode().count])
    }

    @Test("the wrong NotificationUID fails once at offset 1; the response is still framed to its end")
    func wrongUID() throws {
        let run = try parse(Self.command, pieces(ReassemblerTests.responseA(uid: 6), size: 7))
        #expect(run.outcome == .failure(DecodingError(.wrongNotificationUID(expected: NotificationUID(5), actual: NotificationUID(6)), at: 1)))
        #expect(run.failures == 1 && run.completions == 0)
        #expect(run.consumed.reduce(0, +) == ReassemblerTests.responseA(uid: 6).count)
    }

    @Test("another app's response, with a shorter, longer or different AppIdentifier, fails at the first byte that differs and is framed to its end",
          arguments: ["com.apple.mobile", "com.apple.mobilemailer", "com.apple.MobileSMS"])
    func wrongAppIdentifier(_ identifier: String) throws {
        let bytes = ReassemblerTests.responseC(appIdentifier: identifier)
        let run = try parse(Self.appCommand, pieces(bytes, size: 2))
        let expected = Array("com.apple.mobilemail".utf8)
        let position = 1 + zip(expected, Array(identifier.utf8)).prefix { $0 == $1 }.count
        #expect(run.outcome == .failure(DecodingError(.wrongAppIdentifier, at: position)))
        #expect(run.failures == 1)
        #expect(run.consumed.reduce(0, +) == bytes.count)
        #expect(run.outcome == (try reassemble(Self.appCommand, pieces(bytes, size: 2))))
    }

    @Test("a wrong CommandID fails at offset 0 and drops the rest of its fragment; the next fragment is not taken")
    func wrongCommandID() throws {
        var bytes = Self.response
        bytes[0] = 0x01
        let run = try parse(Self.command, [bytes, [0x00]])
        #expect(run.outcome == .failure(DecodingError(.wrongCommandID(expected: .getNotificationAttributes, actual: .getAppAttributes), at: 0)))
        #expect(run.consumed == [bytes.count, 0])
    }

    @Test("an attribute not asked for, and a value longer than its max length, fail at their byte")
    func wrongTuples() throws {
        var swapped = Self.response
        swapped[5] = 0x01  // Title where AppIdentifier was asked first.
        let first = try parse(Self.command, [swapped])
        #expect(first.outcome == .failure(DecodingError(.unexpectedAttribute(expected: 0, actual: 1), at: 5)))
        let long = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(5), attributes: [
            NotificationAttribute(.appIdentifier, "a"), NotificationAttribute(.title, "seventeen bytes!!"), NotificationAttribute(.message, ""),
        ])).encode()
        let second = try parse(Self.command, pieces(long, size: 1))
        #expect(second.outcome == .failure(DecodingError(.valueTooLong(attribute: 1, length: 17, maxLength: 16), at: 10)))
        #expect(second.consumed.reduce(0, +) == long.count, "framed to its end")
        for bytes in [swapped, long] {
            #expect(try parse(Self.command, [bytes]).outcome == (try reassemble(Self.command, [bytes])))
        }
    }

    @Test("a link that drops mid-response: finish reports incomplete with the tuples received, as the reassembler does")
    func dropMidResponse() throws {
        for cut in [0, 1, 4, 5, 6, 8, 30, Self.response.count - 1] {
            let bytes = [Array(Self.response[..<cut])]
            let run = try parse(Self.command, bytes)
            #expect(run.outcome == (try reassemble(Self.command, bytes)), "cut at \(cut)")
            #expect(run.outcome.map { if case .failure = $0 { true } else { false } } == true, "cut at \(cut)")
        }
        var parser = DataSourceParser()
        #expect(Self.command.withUnsafeBytes { parser.finish(answering: $0) } == nil, "nothing begun, nothing to report")
    }

    @Test("begin refuses what an NP would refuse, and a Perform Notification Action (no response follows it)")
    func beginRefuses() {
        let cases: [([UInt8], DecodingError)] = [
            ([], DecodingError(.emptyCommand, at: 0)),
            ([0x00, 1, 0, 0], DecodingError(.truncated(field: .notificationUID), at: 4)),
            ([0x00, 1, 0, 0, 0], DecodingError(.noAttributesRequested, at: 5)),
            ([0x00, 1, 0, 0, 0, 0x01, 0x10], DecodingError(.missingMaxLength(.title), at: 7)),
            ([0x01, 0x61, 0x62], DecodingError(.missingNULTerminator, at: 3)),
            ([0x01, 0x61, 0x00], DecodingError(.noAttributesRequested, at: 3)),
            ([0x02, 1, 0, 0, 0, 0], DecodingError(.noAttributesRequested, at: 0)),
            ([0x07, 1], DecodingError(.unknownCommand(CommandID(rawValue: 7)), at: 0)),
        ]
        for (command, expected) in cases {
            var parser = DataSourceParser()
            #expect(throws: expected) { try command.withUnsafeBytes { raw in try parser.begin(raw) } }
            #expect(!parser.isParsing)
        }
    }

    @Test("the shared conformance vectors end as the reassembler ends them", arguments: ConformanceTests.vectors.dataSource)
    func conformance(_ vector: ConformanceCase) throws {
        let command = try hexBytes(try #require(vector.request))
        let fragments = try vector.fragments.map { try hexBytes($0) }
        let expected = try reassemble(command, fragments)
        #expect(expected != nil)
        #expect(try parse(command, fragments).outcome == expected, "\(vector.name)")
    }

    @Test("random exchanges, damaged and cut anywhere, end as the reassembler ends them", arguments: PropertySeed.all)
    func differential(_ seed: PropertySeed) throws {
        try seed.forEachIteration { generator, context in
            let (command, response) = generator.commandExchange(unlimited: 300)
            let encoded = try command.encode()
            var wire = response.encode()
            if generator.bool(60) {
                for _ in 0..<generator.int(1...3) where !wire.isEmpty {
                    let position = generator.int(0...(wire.count - 1))
                    switch generator.int(0...3) {
                    case 0: wire[position] ^= UInt8(generator.int(1...255))
                    case 1: wire.remove(at: position)
                    case 2: wire.insert(generator.byte(), at: position)
                    default: wire.removeLast(generator.int(1...min(8, wire.count)))
                    }
                }
            }
            let fragments = generator.split(wire)
            let run = try parse(encoded, fragments)
            #expect(run.outcome == (try reassemble(encoded, fragments)), "\(context)")
            #expect(run.failures + run.completions <= 1, "\(context): ended \(run.failures + run.completions) times")
            #expect(zip(run.consumed, fragments).allSatisfy { $0 <= $1.count }, "\(context)")
        }
    }
}
