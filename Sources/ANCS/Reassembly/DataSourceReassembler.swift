// DataSourceReassembler — turns Data Source GATT notifications back into
// responses (spec: "Data Source", rules).
//
// The NP sends each response as a run of notifications with no fragment
// header; the NC knows where a response ends only from the request it sent.
// So every request is registered with `expect` before (or as) its Control
// Point write goes out, and responses are matched to requests in order.
//
// Phases, per response:
//
//   header(matched: 0)  ── first byte ──►  header(matched: k)  ── last header byte ──►  tupleID
//   tupleID  ──►  tupleLength  ──►  tupleLength(low)  ──►  value  ──►  tupleID | (complete) header(0)
//   header mismatch on the CommandID byte, or bytes with nothing outstanding  ──►  discardingFragment
//   wrong NotificationUID  ──►  collectingUID  ──►  tupleID (failed: framing kept, nothing stored)
//   wrong AppIdentifier    ──►  skippingAppIdentifier  ──►  tupleID (failed)
//
// A response that fails validation ends its request at once with an error,
// but its framing (the tuples the request asked for) is still followed so
// the next response starts at the right byte. Only bytes that cannot be
// framed at all are dropped up to the end of their fragment, because a new
// response always starts a new notification on a real NP. After such bytes
// there is no telling where they end, so the reassembler resynchronizes:
// until a notification begins like an outstanding request's response, each
// notification is dropped as unsolicited, never charged to the next request.
//
// Per-tuple and per-response steps (store, finishTuple, completeResponse,
// fail) are kept out of line: inlined into every phase that reaches them
// they made the byte loop 2.5 KB larger in a firmware image, for ~4 % fewer
// instructions per response.
//
// Cost: each byte is looked at once; values are copied in bulk into one
// buffer the reassembler keeps, where a response's values lie one after the
// other; a complete response takes them in one allocation (each value is its
// part of it) plus its attribute array. Memory is bounded by the largest
// response: the sum of the max lengths asked (attributes without one are
// bounded by `Configuration.unlimitedValueLength`).

/// What the reassembler reports while it is fed.
public enum ReassemblyEvent: Hashable, Sendable {
    /// A complete, valid response to the request registered under this ID.
    case response(DataSourceReassembler.RequestID, DataSourceResponse)
    /// The request's response was invalid or incomplete; it ends here.
    case failed(DataSourceReassembler.RequestID, DecodingError)
    /// Bytes no outstanding request explains; dropped up to the end of their fragment.
    case unsolicited(DecodingError)
}

public struct DataSourceReassembler: Sendable {
    /// The caller's name for a request; echoed in events.
    public typealias RequestID = UInt32

    public struct Configuration: Hashable, Sendable {
        /// The longest value accepted for an attribute asked without a max
        /// length (AppIdentifier, Date, MessageSize, labels, DisplayName).
        public var unlimitedValueLength: Int
        public init(unlimitedValueLength: Int = 1024) {
            self.unlimitedValueLength = unlimitedValueLength
        }
        public static let `default` = Configuration()
    }

    struct Pending: Sendable {
        var id: RequestID
        var request: DataSourceRequest
        /// Ended by the caller (timeout, cancellation): if its response still
        /// comes it is consumed and dropped, so it cannot shift the next one.
        var abandoned: Bool
    }

    struct StoredValue: Sendable {
        var id: UInt8
        var end: Int
    }

    enum Phase: Sendable, Equatable {
        case header(matched: Int)
        case collectingUID(received: Int)
        case skippingAppIdentifier
        case tupleID
        case tupleLength(id: UInt8, low: UInt8?)
        case value(id: UInt8, length: Int, received: Int)
        case discardingFragment
    }

    public let configuration: Configuration
    var queue: [Pending] = []
    /// The request whose tuples are being received (header complete).
    var current: Pending?
    var phase: Phase = .header(matched: 0)
    /// Set once the current response has failed: keep framing, store nothing.
    var failed = false
    /// Set after bytes that could not be framed (a wrong CommandID, bytes no
    /// request explains): a notification that does not begin like the
    /// response of an outstanding request is dropped as unsolicited.
    var resynchronizing = false
    var tupleIndex = 0
    /// Bytes of the current response seen so far.
    var offset = 0
    /// NotificationUID bytes as received, for the error message of a wrong one.
    var receivedUID: UInt32 = 0
    /// The values of the current response, one after the other, each
    /// collected at its offset: it keeps the size of the largest response's
    /// values so far, and only the first `valuesLength` bytes mean anything.
    var scratch: [UInt8] = []
    var valuesLength = 0
    /// The values stored so far for the current response: AttributeID and
    /// where the value ends in `scratch` (it starts where the previous ends).
    var stored: [StoredValue] = []
    /// The current request's tuples and kind, copied out of `current` when
    /// its tuples start, so the per-byte path reads them without copying
    /// the whole request.
    var currentTuples = DataSourceRequest.Attributes.app([])
    var currentIsApp = false

    public init(configuration: Configuration = .default) {
        self.configuration = configuration
    }

    /// Requests registered and not yet answered (the one streaming included).
    public var outstandingCount: Int { queue.count + (current == nil ? 0 : 1) }

    /// True between the first and the last byte of a response.
    public var isInsideResponse: Bool {
        switch phase {
        case .header(let matched): return matched > 0
        case .discardingFragment: return false
        default: return true
        }
    }

    /// Registers the request the next unclaimed response answers.
    public mutating func expect(_ request: DataSourceRequest, id: RequestID) {
        queue.append(Pending(id: id, request: request, abandoned: false))
    }

    /// Ends a request on the caller's side. With `responseMayFollow` (a
    /// timeout, a cancellation after the write went out) its response is
    /// still consumed if it comes; without (the write failed: no response
    /// follows, spec "Errors") it is forgotten. Returns false for an unknown ID.
    @discardableResult
    public mutating func cancel(_ id: RequestID, responseMayFollow: Bool) -> Bool {
        if current?.id == id {
            current!.abandoned = true
            return true
        }
        guard let index = queue.firstIndex(where: { $0.id == id }) else { return false }
        if responseMayFollow {
            queue[index].abandoned = true
        } else {
            if index == 0, case .header(let matched) = phase, matched > 0 {
                // Bytes already matched against it belong to nothing now.
                phase = .discardingFragment
            }
            queue.remove(at: index)
        }
        return true
    }

    /// Ends everything (link loss, session end, or the caller giving up):
    /// each live request fails with `incomplete`, and the state is reset.
    public mutating func finish(_ handler: (ReassemblyEvent) -> Void) {
        if let current, !current.abandoned, !failed {
            handler(.failed(current.id, DecodingError(.incomplete(expectedTuples: current.request.tupleCount, receivedTuples: tupleIndex), at: offset)))
        }
        for (index, pending) in queue.enumerated() where !pending.abandoned {
            let received = index == 0 && current == nil && isInsideResponse ? offset : 0
            handler(.failed(pending.id, DecodingError(.incomplete(expectedTuples: pending.request.tupleCount, receivedTuples: 0), at: received)))
        }
        queue.removeAll()
        resetResponse()
        resynchronizing = false
    }

    public mutating func feed(_ fragment: [UInt8], _ handler: (ReassemblyEvent) -> Void) {
        fragment.withUnsafeBytes { feed($0, handler) }
    }

    /// Feeds one Data Source notification. Complete responses and failures
    /// are passed to `handler` as they are found, each request exactly once.
    public mutating func feed(_ fragment: UnsafeRawBufferPointer, _ handler: (ReassemblyEvent) -> Void) {
        if absorbInsideValue(fragment) { return }
        feedAnyFragment(fragment, handler)
    }

    /// The common case at small MTUs, a notification wholly inside a value
    /// that goes on after it: collects it and returns true (it causes no
    /// event). Otherwise does nothing and returns false: feed it then.
    /// (Nothing else `feed` does applies to such a notification: the phase
    /// is not discarding, and a response being stored never resynchronizes.)
    @inline(__always)
    mutating func absorbInsideValue(_ fragment: UnsafeRawBufferPointer) -> Bool {
        guard case .value(let id, let length, let received) = phase, length - received > fragment.count,
              !failed, current?.abandoned == false else { return false }
        collect(fragment, at: valuesLength + received)
        phase = .value(id: id, length: length, received: received + fragment.count)
        offset += fragment.count
        return true
    }

    /// `feed` for every notification but the plain middle of a value (kept
    /// out of line, so that the common case above stays small).
    @inline(never)
    private mutating func feedAnyFragment(_ fragment: UnsafeRawBufferPointer, _ handler: (ReassemblyEvent) -> Void) {
        if case .discardingFragment = phase { phase = .header(matched: 0) }
        if resynchronizing, case .header(matched: 0) = phase {
            guard beginsResponse(fragment) else {
                if fragment.count > 0 { handler(.unsolicited(DecodingError(.unsolicitedResponse, at: 0))) }
                return
            }
            resynchronizing = false
        }
        if (failed || current?.abandoned == true) && shouldResynchronize(at: fragment) {
            // The response being skipped was given up on (timed out or
            // invalid) and this notification starts exactly like the next
            // request's response: an NP that sent fewer tuples than asked
            // must not take the next response down with it.
            resetResponse()
        }
        var index = 0
        let count = fragment.count
        while index < count {
            switch phase {
            case .discardingFragment:
                return

            case .header(let matched):
                if matched == 0, let length = wholeHeaderLength(in: fragment, at: index) {
                    // The whole header of the request at the head of the
                    // queue is here: what matching it byte by byte does.
                    receivedUID = 0
                    for position in 1..<min(length, 5) {
                        receivedUID |= UInt32(fragment[index + position]) << (8 * UInt32(position - 1))
                    }
                    offset = length
                    index += length
                    current = queue.removeFirst()
                    startTuples(handler)
                    continue
                }
                let byte = fragment[index]
                index += 1
                if matched == 0 {
                    offset = 0
                    receivedUID = 0
                }
                if matched >= 1 && matched <= 4 { receivedUID |= UInt32(byte) << (8 * UInt32(matched - 1)) }
                offset += 1
                matchHeader(byte: byte, at: matched, handler)

            case .collectingUID(let received):
                receivedUID |= UInt32(fragment[index]) << (8 * UInt32(received))
                index += 1
                offset += 1
                if received + 1 == 4 {
                    reportUIDMismatch(handler)
                } else {
                    phase = .collectingUID(received: received + 1)
                }

            case .skippingAppIdentifier:
                let byte = fragment[index]
                index += 1
                offset += 1
                if byte == 0 { startTuples(handler) }

            case .tupleID:
                let expected = currentTuples[tupleIndex]
                if count - index >= 3 {
                    // AttributeID and Length both here: what the two phases
                    // below do byte by byte, in one step.
                    let id = fragment[index]
                    let length = Int(fragment[index + 1]) | Int(fragment[index + 2]) << 8
                    index += 3
                    if id != expected.id {
                        fail(.unexpectedAttribute(expected: expected.id, actual: id), at: offset, handler)
                    }
                    offset += 3
                    let limit = expected.maxLength ?? configuration.unlimitedValueLength
                    if length > limit {
                        fail(.valueTooLong(attribute: id, length: length, maxLength: limit), at: offset - 2, handler)
                    }
                    beginValue(id: id, length: length, handler)
                    continue
                }
                let byte = fragment[index]
                index += 1
                if byte != expected.id {
                    fail(.unexpectedAttribute(expected: expected.id, actual: byte), at: offset, handler)
                }
                offset += 1
                phase = .tupleLength(id: byte, low: nil)

            case .tupleLength(let id, let low):
                let byte = fragment[index]
                index += 1
                offset += 1
                guard let low else {
                    phase = .tupleLength(id: id, low: byte)
                    continue
                }
                let length = Int(low) | Int(byte) << 8
                let limit = currentTuples[tupleIndex].maxLength ?? configuration.unlimitedValueLength
                if length > limit {
                    fail(.valueTooLong(attribute: id, length: length, maxLength: limit), at: offset - 2, handler)
                }
                beginValue(id: id, length: length, handler)

            case .value(let id, let length, let received):
                let take = min(count - index, length - received)
                if !failed && current?.abandoned == false {
                    collect(UnsafeRawBufferPointer(rebasing: fragment[index..<(index + take)]), at: valuesLength + received)
                }
                index += take
                offset += take
                if received + take == length {
                    store(id: id, length: length)
                    finishTuple(handler)
                } else {
                    phase = .value(id: id, length: length, received: received + take)
                }
            }
        }
    }

    /// Copies bytes of the value being received to their offset in `scratch`
    /// (`beginValue` made room for the whole value).
    private mutating func collect(_ bytes: UnsafeRawBufferPointer, at position: Int) {
        guard let source = bytes.baseAddress else { return }
        scratch.withUnsafeMutableBytes { buffer in
            buffer.baseAddress!.advanced(by: position).copyMemory(from: source, byteCount: bytes.count)
        }
    }

    /// True when the current response is no longer wanted (abandoned or
    /// failed) and `fragment` begins with the whole header of the next
    /// registered request. A live response never resynchronizes: a fragment
    /// that begins with 0x00 or 0x01 in its middle is data.
    private func shouldResynchronize(at fragment: UnsafeRawBufferPointer) -> Bool {
        // Checked without copying `current`: this runs for every notification.
        guard failed || current?.abandoned == true, current != nil, let next = queue.first else { return false }
        let header = next.request.header, headerCount = next.request.headerCount
        guard fragment.count >= headerCount else { return false }
        for index in 0..<headerCount where fragment[index] != header[index] { return false }
        return true
    }

    /// Whether `fragment` begins with the header of the first live request,
    /// or of an abandoned one ahead of it: the whole header, or as much as a
    /// notification holds at the smallest ATT MTU (20 bytes) when it is
    /// longer. (A response's first notification is never shorter: it is
    /// either the whole response or a full one.)
    private func beginsResponse(_ fragment: UnsafeRawBufferPointer) -> Bool {
        for pending in queue {
            let header = pending.request.header, headerCount = pending.request.headerCount
            var matches = fragment.count >= min(headerCount, DataSourceResponse.mtuRange.lowerBound - 3)
            for index in 0..<min(headerCount, fragment.count) where fragment[index] != header[index] {
                matches = false
                break
            }
            if matches { return true }
            if !pending.abandoned { return answersWrongly(pending.request, fragment) }
        }
        return false
    }

    /// Whether `fragment` begins like a response to `request` for another
    /// notification or app: its CommandID, then (after the UID, or the
    /// AppIdentifier's NUL) the first attribute the request asked for.
    /// Responses come in command order (spec: "Data Source"), so such a
    /// notification is the oldest live request's answer, wrong: it fails
    /// that request at once instead of being dropped as unsolicited while
    /// the request waits for its timeout.
    private func answersWrongly(_ request: DataSourceRequest, _ fragment: UnsafeRawBufferPointer) -> Bool {
        guard request.tupleCount > 0, fragment.count > 0, fragment[0] == request.commandID.rawValue else { return false }
        var tuplesStart = 5
        if request.commandID == .getAppAttributes {
            var index = 1
            while index < fragment.count && fragment[index] != 0 { index += 1 }
            tuplesStart = index + 1
        }
        return fragment.count > tuplesStart && fragment[tuplesStart] == request.tuples[0].id
    }

    // MARK: - Header

    /// The header's length when `fragment` holds, from `index`, the whole
    /// header of the request at the head of the queue; else nil.
    private func wholeHeaderLength(in fragment: UnsafeRawBufferPointer, at index: Int) -> Int? {
        queue.withUnsafeBufferPointer { pending -> Int? in
            guard !pending.isEmpty, let first = pending.baseAddress else { return nil }
            let header = first.pointee.request.header, headerCount = first.pointee.request.headerCount
            guard fragment.count - index >= headerCount else { return nil }
            for position in 0..<headerCount where fragment[index + position] != header[position] { return nil }
            return headerCount
        }
    }

    private mutating func matchHeader(byte: UInt8, at matched: Int, _ handler: (ReassemblyEvent) -> Void) {
        // The common case, the head of the queue matching, read in place.
        let head = queue.withUnsafeBufferPointer { pending -> (matches: Bool, complete: Bool) in
            guard !pending.isEmpty, let first = pending.baseAddress else { return (false, false) }
            return (first.pointee.request.header[matched] == byte, matched + 1 == first.pointee.request.headerCount)
        }
        if head.matches {
            if head.complete {
                current = queue.removeFirst()
                startTuples(handler)
            } else {
                phase = .header(matched: matched + 1)
            }
            return
        }
        guard var head = queue.first else {
            handler(.unsolicited(DecodingError(.unsolicitedResponse, at: 0)))
            phase = .discardingFragment
            resynchronizing = true
            return
        }
        if head.request.header[matched] != byte {
            // An abandoned request may never be answered: let the next
            // request claim these bytes if its header starts the same way.
            let previousHeader = head.request.header[..<matched]
            while head.abandoned {
                queue.removeFirst()
                guard let next = queue.first else {
                    handler(.unsolicited(DecodingError(.unsolicitedResponse, at: 0)))
                    phase = .discardingFragment
                    resynchronizing = true
                    return
                }
                head = next
                let header = head.request.header
                if head.request.headerCount > matched && header[..<matched].elementsEqual(previousHeader) && header[matched] == byte {
                    break
                }
            }
            let header = head.request.header
            if head.request.headerCount <= matched || !header[..<matched].elementsEqual(previousHeader) || header[matched] != byte {
                mismatch(head, byte: byte, prefix: previousHeader, matched: matched, handler)
                return
            }
        }
        if matched + 1 == head.request.headerCount {
            current = queue.removeFirst()
            startTuples(handler)
        } else {
            phase = .header(matched: matched + 1)
        }
    }

    /// The live request at the head of the queue does not match the header bytes received.
    private mutating func mismatch(_ head: Pending, byte: UInt8, prefix: ArraySlice<UInt8>, matched: Int, _ handler: (ReassemblyEvent) -> Void) {
        let header = head.request.header
        var position = 0
        while position < matched && position < head.request.headerCount && header[position] == prefix[position] { position += 1 }
        current = queue.removeFirst()
        failed = false
        if position == 0 {
            let actual = matched == 0 ? byte : prefix[0]
            fail(.wrongCommandID(expected: head.request.commandID, actual: CommandID(rawValue: actual)), at: 0, handler)
            resetResponse()
            phase = .discardingFragment
            resynchronizing = true
            return
        }
        if head.request.commandID == .getNotificationAttributes {
            if matched == 4 {
                reportUIDMismatch(handler)
            } else {
                phase = .collectingUID(received: matched)
            }
        } else {
            fail(DecodingError(wrongAppIdentifier: Array(header[1..<(head.request.headerCount - 1)]), at: position), handler)
            if byte == 0 { startTuples(handler) } else { phase = .skippingAppIdentifier }
        }
    }

    private mutating func reportUIDMismatch(_ handler: (ReassemblyEvent) -> Void) {
        if current?.request.commandID == .getNotificationAttributes, let expected = current?.request.notificationUID {
            fail(.wrongNotificationUID(expected: expected, actual: NotificationUID(receivedUID)), at: 1, handler)
        }
        startTuples(handler)
    }

    // MARK: - Tuples

    private mutating func startTuples(_ handler: (ReassemblyEvent) -> Void) {
        tupleIndex = 0
        // Read through optional chaining: `current!` would copy the request.
        currentTuples = current?.request.tuples ?? .app([])
        currentIsApp = current?.request.commandID == .getAppAttributes
        if !stored.isEmpty { stored.removeAll(keepingCapacity: true) }
        valuesLength = 0
        if currentTuples.count == 0 { completeResponse(handler) } else { phase = .tupleID }
    }

    /// After a tuple's AttributeID and Length: makes room for the value in
    /// `scratch` (when it is to be stored) and waits for its bytes.
    @inline(never)
    private mutating func beginValue(id: UInt8, length: Int, _ handler: (ReassemblyEvent) -> Void) {
        guard length > 0 else {
            store(id: id, length: 0)
            finishTuple(handler)
            return
        }
        let end = valuesLength + length
        if end > scratch.count, !failed, current?.abandoned == false {
            // At least doubles (a response's values are met one by one), keeping the values so far.
            var grown = [UInt8](repeating: 0, count: max(end, 2 * scratch.count))
            grown.withUnsafeMutableBytes { target in
                scratch.withUnsafeBytes { source in target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<valuesLength])) }
            }
            scratch = grown
        }
        phase = .value(id: id, length: length, received: 0)
    }

    /// The value of `length` bytes just collected after the previous one.
    @inline(never)
    private mutating func store(id: UInt8, length: Int) {
        guard !failed, current?.abandoned == false else { return }
        valuesLength += length
        stored.append(StoredValue(id: id, end: valuesLength))
    }

    @inline(never)
    private mutating func finishTuple(_ handler: (ReassemblyEvent) -> Void) {
        tupleIndex += 1
        if tupleIndex == currentTuples.count {
            completeResponse(handler)
        } else {
            phase = .tupleID
        }
    }

    @inline(never)
    private mutating func completeResponse(_ handler: (ReassemblyEvent) -> Void) {
        let finished = current!
        if !failed && !finished.abandoned {
            // The response's values in one allocation; each value is its part.
            let values = valuesLength == 0 ? [] : scratch.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[0..<valuesLength])) }
            var start = 0
            if finished.request.commandID == .getNotificationAttributes {
                var attributes: [NotificationAttribute] = []
                attributes.reserveCapacity(stored.count)
                for value in stored {
                    attributes.append(NotificationAttribute(NotificationAttributeID(rawValue: value.id), AttributeValue(in: values, start: start, count: value.end - start)))
                    start = value.end
                }
                let response = NotificationAttributesResponse(notificationUID: finished.request.notificationUID, attributes: attributes)
                handler(.response(finished.id, .notificationAttributes(response)))
            } else {
                var attributes: [AppAttribute] = []
                attributes.reserveCapacity(stored.count)
                for value in stored {
                    attributes.append(AppAttribute(AppAttributeID(rawValue: value.id), AttributeValue(in: values, start: start, count: value.end - start)))
                    start = value.end
                }
                let response = AppAttributesResponse(appIdentifierBytes: Array(finished.request.header[1..<(finished.request.headerCount - 1)]), attributes: attributes)
                handler(.response(finished.id, .appAttributes(response)))
            }
        }
        resetResponse()
    }

    /// Fails the current request once; the rest of its response is framed and dropped.
    private mutating func fail(_ reason: DecodingError.Reason, at offset: Int, _ handler: (ReassemblyEvent) -> Void) {
        fail(DecodingError(reason, at: offset), handler)
    }

    @inline(never)
    private mutating func fail(_ error: DecodingError, _ handler: (ReassemblyEvent) -> Void) {
        guard !failed, let current else { return }
        failed = true
        if !current.abandoned {
            handler(.failed(current.id, error))
        }
    }

    private mutating func resetResponse() {
        current = nil
        currentTuples = .app([])
        failed = false
        tupleIndex = 0
        offset = 0
        phase = .header(matched: 0)
        if !stored.isEmpty { stored.removeAll(keepingCapacity: true) }
        valuesLength = 0
    }
}
