// DataSourceReassembler against a hostile NP. The input chooses requests,
// cancellations and how the rest is cut into fragments.
// Invariants: no trap; every registered request ends exactly once (a
// response, a failure, or a cancellation by the caller) once `finish` runs;
// a response carries exactly the attributes asked, in order, each within its
// max length; the value buffer never exceeds the bound of what was asked.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let unlimited = 64
    var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: unlimited))
    var requests: [UInt32: DataSourceRequest] = [:]
    var ended: [UInt32: Int] = [:]
    var cancelled: Set<UInt32> = []
    var bound = 0

    let requestCount = Int(input.byte() % 4) + 1
    for id in 0..<UInt32(requestCount) {
        let request: DataSourceRequest
        if input.byte() & 1 == 0 {
            var attributes: [NotificationAttributeRequest] = []
            for _ in 0..<(Int(input.byte() % 4) + 1) {
                let attribute = NotificationAttributeID(rawValue: input.byte() % 10)
                attributes.append(NotificationAttributeRequest(attribute, maxLength: UInt16(input.byte())))
            }
            request = DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(UInt32(input.byte() % 3)), attributes: attributes))
        } else {
            let identifier = input.byte() & 1 == 0 ? "a" : "com.x"
            request = DataSourceRequest(GetAppAttributes(appIdentifier: identifier, attributes: [AppAttributeID(rawValue: input.byte() % 2)]))
        }
        requests[id] = request
        bound = max(bound, request.valueBound(unlimited: unlimited))
        reassembler.expect(request, id: id)
    }

    func record(_ event: ReassemblyEvent) {
        switch event {
        case .response(let id, let response):
            ended[id, default: 0] += 1
            guard let request = requests[id] else { return check(false, "response for unknown request") }
            check(request.tupleCount == attributeCount(response), "tuple count")
            checkLengths(response, request)
        case .failed(let id, _):
            ended[id, default: 0] += 1
        case .unsolicited:
            break
        }
    }

    while !input.isAtEnd {
        let control = input.byte()
        if control == 0xFF {
            let id = UInt32(input.byte()) % UInt32(requestCount)
            if ended[id] == nil && !cancelled.contains(id) && reassembler.cancel(id, responseMayFollow: input.byte() & 1 == 0) {
                cancelled.insert(id)
            }
            continue
        }
        let fragment = input.take(Int(control % 64) + 1)
        reassembler.feed(fragment) { record($0) }
        check(reassembler.scratch.count <= bound, "scratch \(reassembler.scratch.count) > bound \(bound)")
    }
    reassembler.finish { record($0) }
    for id in 0..<UInt32(requestCount) {
        let count = ended[id] ?? 0
        if cancelled.contains(id) {
            check(count <= 1, "cancelled request \(id) ended \(count) times")
        } else {
            check(count == 1, "request \(id) ended \(count) times")
        }
    }
    return 0
}

func attributeCount(_ response: DataSourceResponse) -> Int {
    switch response {
    case .notificationAttributes(let r): r.attributes.count
    case .appAttributes(let r): r.attributes.count
    }
}

func checkLengths(_ response: DataSourceResponse, _ request: DataSourceRequest) {
    switch response {
    case .notificationAttributes(let r):
        for (index, attribute) in r.attributes.enumerated() {
            let expected = request.tuples[index]
            check(attribute.id.rawValue == expected.id, "attribute order")
            check(attribute.value.count <= (expected.maxLength ?? 64), "value within max length")
        }
    case .appAttributes(let r):
        for (index, attribute) in r.attributes.enumerated() {
            check(attribute.id.rawValue == request.tuples[index].id, "app attribute order")
            check(attribute.value.count <= 64, "app value within bound")
        }
    }
}
