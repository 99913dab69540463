// sources: Identifiers Codec Reassembly
//
// DataSourceReassembler against a hostile NP (our NC's side). The input
// drives both the requests and how the NP's bytes are cut into fragments:
//
//   byte 0          unlimitedValueLength: 0 → 1024 (the default), else 1…255
//   then, repeated:
//   0x00…0xDF  n    a Data Source notification of the next n + 1 bytes
//   0xE0…0xE7       register a request: a length byte, then that many bytes
//                   of Control Point command (Get Notification / App
//                   Attributes; anything else registers nothing)
//   0xE8…0xEF       register a request built directly (no encoding rules:
//                   no attributes, NUL in an AppIdentifier): a count byte
//                   (% 6 attributes), then for GNA (op even) a UID byte and
//                   per attribute an ID byte and a max length byte; for GAA
//                   a length byte and AppIdentifier bytes, then ID bytes
//   0xF0…0xF7       cancel a registered request (next byte picks it);
//                   responseMayFollow when the op is even
//   0xF8…0xFB       cancel an ID never registered: must return false
//   0xFC…0xFF       finish (session end); requests may be registered after
//   end of input    finish
//
// Invariants: no trap; a request ends (response or failure) at most once,
// never after the caller cancelled it, and every live one has ended once
// `finish` returns; a response answers its request (subject, exactly the
// attributes asked in order, each value within its max length or
// unlimitedValueLength); after every feed the value scratch buffer holds at
// most the largest `valueBound` of the requests registered; `finish` leaves
// nothing behind.
// Differential: the first request, registered before any byte and never
// cancelled, ends exactly as a plain parse of the bytes fed says — the same
// response, value for value, or a failure, or (incomplete) only at `finish`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runDataSource(FuzzInput(start, count))
    return 0
}

func runDataSource(_ input: FuzzInput) {
    var input = input
    let first = input.byte()
    let unlimited = first == 0 ? 1024 : Int(first)
    var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: unlimited))

    enum State { case live, ended, cancelled }
    var requests: [DataSourceRequest] = []  // index = RequestID
    var states: [State] = []
    /// The most value bytes the reassembler may hold: the largest bound of a request registered.
    var bound = 0

    // The differential check of request 0: the bytes fed while it is tracked.
    var fed: [UInt8] = []
    var tracking = true

    func record(_ event: DataSourceReassembler.Event) {
        if tracking, requests.count > 0, states[0] == .live {
            switch event {
            case .response(0, let response):
                tracking = false
                check(reference(requests[0], fed, unlimited) == .complete(response), "response differs from the reference parse")
            case .failed(0, _):
                tracking = false
                check(reference(requests[0], fed, unlimited) == .invalid, "failure where the reference parse finds none")
            default: break
            }
        }
        let id: DataSourceReassembler.RequestID
        switch event {
        case .unsolicited(let error):
            check(error.offset >= 0, "negative offset")
            return
        case .failed(let failed, let error):
            id = failed
            check(error.offset >= 0, "negative offset")
        case .response(let answered, let response):
            id = answered
            check(Int(id) < requests.count, "response for unknown request \(id)")
            checkResponse(response, answers: requests[Int(id)], unlimited: unlimited)
        }
        check(Int(id) < states.count, "event for unknown request \(id)")
        check(states[Int(id)] != .ended, "request \(id) ended twice: \(event)")
        check(states[Int(id)] != .cancelled, "request \(id) ended after it was cancelled: \(event)")
        states[Int(id)] = .ended
    }

    func finish() {
        if tracking, requests.count > 0, states[0] == .live {
            check(reference(requests[0], fed, unlimited) == .incomplete, "live at finish, reference: \(reference(requests[0], fed, unlimited))")
        }
        tracking = false
        reassembler.finish(record)
        for (id, state) in states.enumerated() {
            check(state != .live, "request \(id) still live after finish")
        }
        check(reassembler.outstandingCount == 0, "outstanding after finish: \(reassembler.outstandingCount)")
        check(!reassembler.isInsideResponse, "inside a response after finish")
    }

    while !input.isAtEnd {
        let op = input.byte()
        switch op {
        case 0x00...0xDF:
            let fragment = input.take(Int(op) + 1)
            if requests.isEmpty { tracking = false }
            if tracking { fed += fragment }
            reassembler.feed(fragment, record)
            check(reassembler.scratch.count <= bound, "scratch holds \(reassembler.scratch.count) bytes, bound \(bound)")
        case 0xE0...0xE7:
            let bytes = input.chunk()
            guard let command = try? ControlPointCommand.decode(bytes), let request = DataSourceRequest(command) else { break }
            check(request.tupleCount > 0, "a decoded command asks for something")
            reassembler.expect(request, id: DataSourceReassembler.RequestID(requests.count))
            bound = max(bound, request.valueBound(unlimited: unlimited))
            requests.append(request)
            states.append(.live)
        case 0xE8...0xEF:
            let count = Int(input.byte() % 6)
            let request: DataSourceRequest
            if op & 1 == 0 {
                let uid = NotificationUID(UInt32(input.byte()))
                var attributes: [NotificationAttributeRequest] = []
                for _ in 0..<count {
                    attributes.append(NotificationAttributeRequest(NotificationAttributeID(rawValue: input.byte()), maxLength: UInt16(input.byte())))
                }
                request = DataSourceRequest(GetNotificationAttributes(notificationUID: uid, attributes: attributes))
            } else {
                let identifier = String(decoding: input.chunk(), as: UTF8.self)
                request = DataSourceRequest(GetAppAttributes(appIdentifier: identifier, attributes: input.take(count).map { AppAttributeID(rawValue: $0) }))
            }
            reassembler.expect(request, id: DataSourceReassembler.RequestID(requests.count))
            bound = max(bound, request.valueBound(unlimited: unlimited))
            requests.append(request)
            states.append(.live)
        case 0xF0...0xF7:
            let choice = input.byte()
            guard !requests.isEmpty else { break }
            let id = Int(choice) % requests.count
            if id == 0 { tracking = false }
            let known = reassembler.cancel(DataSourceReassembler.RequestID(id), responseMayFollow: op & 1 == 0)
            if states[id] == .live {
                check(known, "cancel of live request \(id) returned false")
                states[id] = .cancelled
            }
        case 0xF8...0xFB:
            check(!reassembler.cancel(DataSourceReassembler.RequestID(requests.count + Int(input.byte())), responseMayFollow: op & 1 == 0),
                  "cancel of an unknown ID returned true")
        default:
            finish()
        }
    }
    finish()
}

enum ReferenceParse: Equatable {
    case complete(DataSourceResponse)
    case invalid
    case incomplete
}

/// The response to `request` at the start of `bytes`, parsed plainly (whole
/// buffer, no fragments, no state machine).
func reference(_ request: DataSourceRequest, _ bytes: [UInt8], _ unlimited: Int) -> ReferenceParse {
    var index = 0
    var mismatch = false
    for expected in request.bytes[..<request.headerCount] {
        guard index < bytes.count else { return .incomplete }
        if bytes[index] != expected {
            // A wrong NotificationUID is reported once all of it is in (the
            // error names it); a wrong CommandID or AppIdentifier at once.
            guard index > 0, case .notification = request.subject else { return .invalid }
            mismatch = true
        }
        index += 1
    }
    if mismatch { return .invalid }
    var values: [AttributeValue] = []
    for tuple in request.tuples {
        guard index < bytes.count else { return .incomplete }
        guard bytes[index] == tuple.id else { return .invalid }
        guard index + 2 < bytes.count else { return .incomplete }
        let length = Int(bytes[index + 1]) | Int(bytes[index + 2]) << 8
        guard length <= tuple.maxLength ?? unlimited else { return .invalid }
        index += 3
        guard index + length <= bytes.count else { return .incomplete }
        values.append(AttributeValue(bytes: Array(bytes[index..<(index + length)])))
        index += length
    }
    switch request.subject {
    case .notification(let uid):
        return .complete(.notificationAttributes(NotificationAttributesResponse(notificationUID: uid, attributes:
            zip(request.tuples, values).map { NotificationAttribute(NotificationAttributeID(rawValue: $0.id), $1) })))
    case .app:
        return .complete(.appAttributes(AppAttributesResponse(appIdentifierBytes: request.appIdentifierBytes ?? [], attributes:
            zip(request.tuples, values).map { AppAttribute(AppAttributeID(rawValue: $0.id), $1) })))
    }
}
