// sources: Identifiers Codec Reassembly
//
// DataSourceParser (one response at a time, streamed) against a hostile NP,
// and against the reassembler. The input:
//
//   a length byte, then that many bytes of Control Point command (begin
//   must refuse exactly what ControlPointCommand.decode refuses, and a
//   Perform Notification Action)
//   then, repeated:
//   0x00…0xEF  n    a Data Source notification of the next n + 1 bytes
//   0xF0…0xFF       a notification of 0 bytes
//   end of input    finish (the link drops)
//
// Invariants: no trap; a fragment's bytes taken are at most its length and,
// when fewer, the response is over; nothing is taken when no response is
// being parsed; value pieces are never empty and add up to each tuple's
// length; the request ends (complete, failed, or incomplete at finish)
// exactly once.
// Differential: the reassembler, fed the same fragments for the same
// request (no limit on values asked without a max length, as the parser
// has none), ends it the same way: the same response, value for value, or
// the same error at the same offset.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runDataSourceParser(FuzzInput(start, count))
    return 0
}

func runDataSourceParser(_ input: FuzzInput) {
    var input = input
    let command = input.chunk()
    let decoded = try? ControlPointCommand.decode(command)
    let request = decoded.flatMap { DataSourceRequest($0) }
    var parser = DataSourceParser()
    let began = command.withUnsafeBytes { (try? parser.begin($0)) != nil }
    check(began == (request != nil), "begin \(began ? "accepts" : "refuses") a command the decoder \(request != nil ? "accepts" : "refuses")")
    guard let request else { return }

    var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: 0xFFFF))
    reassembler.expect(request, id: 1)
    var expected: Result<DataSourceResponse, DecodingError>?
    let record: (DataSourceReassembler.Event) -> Void = { event in
        switch event {
        case .response(_, let response): expected = .success(response)
        case .failed(_, let error): expected = .failure(error)
        case .unsolicited: break
        }
    }

    var outcome: Result<[(UInt8, [UInt8])], DecodingError>?
    var ends = 0
    var tuples: [(UInt8, [UInt8])] = []
    var lengths: [Int] = []
    while !input.isAtEnd {
        let op = input.byte()
        let fragment = op < 0xF0 ? input.take(Int(op) + 1) : []
        let wasParsing = parser.isParsing
        let taken = command.withUnsafeBytes { commandBytes in
            fragment.withUnsafeBytes { bytes in
                parser.feed(bytes, answering: commandBytes) { event in
                    switch event {
                    case .attribute(let id, let length):
                        check(outcome == nil, "a tuple after the request ended")
                        tuples.append((id, []))
                        lengths.append(length)
                    case .value(let piece):
                        check(!piece.isEmpty, "an empty value piece")
                        check(!tuples.isEmpty, "a value piece before any tuple")
                        tuples[tuples.count - 1].1 += piece
                        check(tuples[tuples.count - 1].1.count <= lengths[lengths.count - 1], "more value bytes than the tuple's length")
                    case .complete:
                        ends += 1
                        check(zip(tuples, lengths).allSatisfy { $0.1.count == $1 }, "a value shorter than its length at complete")
                        outcome = .success(tuples)
                    case .failed(let error):
                        ends += 1
                        check(error.offset >= 0, "negative offset")
                        outcome = .failure(error)
                    }
                }
            }
        }
        check(taken >= 0 && taken <= fragment.count, "took \(taken) of \(fragment.count) bytes")
        check(wasParsing || taken == 0, "took bytes with no response begun")
        check(taken == fragment.count || !parser.isParsing, "left bytes while the response goes on")
        reassembler.feed(fragment, record)
    }
    if let error = command.withUnsafeBytes({ parser.finish(answering: $0) }) {
        ends += 1
        outcome = .failure(error)
    }
    reassembler.finish(record)
    check(ends == 1, "the request ended \(ends) times")
    check(!parser.isParsing, "still parsing after finish")

    switch (outcome, expected) {
    case (.success(let tuples), .success(let response)):
        let attributes: [(UInt8, [UInt8])]
        switch response {
        case .notificationAttributes(let r): attributes = r.attributes.map { ($0.id.rawValue, $0.value.bytes) }
        case .appAttributes(let r): attributes = r.attributes.map { ($0.id.rawValue, $0.value.bytes) }
        }
        check(tuples.count == attributes.count && zip(tuples, attributes).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 },
              "the parser's values differ from the reassembler's response")
    case (.failure(let error), .failure(let reference)):
        check(error == reference, "parser: \(error); reassembler: \(reference)")
    default:
        check(false, "parser ended \(String(describing: outcome)), reassembler \(String(describing: expected))")
    }
}
