// DataSourceReassembler — turns Data Source GATT notifications back into
// responses (spec: "Data Source", rules).
//
// The NP sends each response as a run of notifications with no fragment
// header; the NC knows where a response ends only from the request it sent.
// So every request is registered with `expect` before (or as) its Control
// Point write goes out, and responses are matched to requests in order.
//
// Phases, per response (`offset` counts its bytes received):
//
//   header (offset 0)  ── first byte ──►  header (offset k)  ── last header byte ──►  tupleID
//   tupleID  ──►  lengthLow  ──►  lengthHigh  ──►  value  ──►  tupleID | (complete) header
//   header mismatch on the CommandID byte, or bytes with nothing outstanding  ──►  resynchronizing
//   the request whose header is coming forgotten (`cancel`)  ──►  discardingFragment
//   wrong NotificationUID  ──►  collectingUID  ──►  tupleID (failed: framing kept, nothing stored)
//   wrong AppIdentifier    ──►  skippingAppIdentifier  ──►  tupleID (failed)
//
// The request being answered stays at the head of the queue while its
// tuples arrive (`streaming`): nothing is moved or copied per response.
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
// Per-tuple and per-response steps (finishTuple, completeResponse,
// fail) are kept out of line: inlined into every phase that reaches them
// they made the byte loop much larger in a firmware image, for a few per
// cent fewer instructions per response. So are the header's step
// (matchHeader), a wrong UID's report and the check of a notification
// after unframeable bytes (beginsResponse), for a call per such byte
// (BENCHMARKS.md section 5, "Why the core is shaped for size"). A header
// is matched one byte at a time even when its notification holds it
// whole: a step that took a whole header at once was 158 bytes of the
// consumer's firmware for 3 % fewer instructions per response (287 at
// MTU 23).
// The counters of the byte loop wrap (`&+`) instead of trapping on
// overflow: an index stays below its fragment's count, a value's bytes
// below its Length (at most 65 535), the values kept below the buffer's
// size; a response's offset stays below its header's length while the
// header is matched, grows by at most 65 538 bytes per tuple asked, and
// past a wrong AppIdentifier (bytes up to a NUL, without bound) it only
// places an error. Each checked step was a branch to a trap in firmware
// (0.3 KB of the byte loop, section 5). So were the checks of indices the
// framing itself keeps in range: a header's bytes are read within its
// request's header, the attribute walk within the command's bytes (it ends
// the response at their end), the tuples of a complete response within
// the values kept for it; these are read in place, through unsafe
// buffers, without a check of each index (0.2 KB of the whole consumer's
// firmware). Bytes are framed one at a time
// outside values (a header or a tuple's AttributeID and Length), and
// values are copied in bulk: at MTU 23 nearly every notification lies
// inside a value.
//
// Cost: each byte is looked at once; values are copied in bulk into one
// buffer the reassembler keeps, where a response's tuples lie one after the
// other (each value after its AttributeID and Length); a complete response
// takes them in one allocation (each value is its part of it) plus its
// attribute array. The tuples expected are read from the request's command
// bytes as they come. Memory is bounded by the largest response: the sum of
// the max lengths asked (attributes without one are bounded by
// `Configuration.unlimitedValueLength`) and 3 bytes per attribute
// (`DataSourceRequest.valueBound`). A feed handler cannot call back into
// the reassembler: Swift's exclusivity checks refuse it (`feed`).

extension DataSourceReassembler {
    /// What the reassembler reports while it is fed.
    public enum Event: Hashable, Sendable {
        /// A complete, valid response to the request registered under this ID.
        case response(DataSourceReassembler.RequestID, DataSourceResponse)
        /// The request's response was invalid or incomplete; it ends here.
        case failed(DataSourceReassembler.RequestID, DecodingError)
        /// Bytes no outstanding request explains; dropped up to the end of their fragment.
        case unsolicited(DecodingError)
    }
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

    /// Between responses the phase is one of the first three; past them,
    /// a response's header is complete (or failed to match) and its tuples
    /// are being received (`streaming`): one comparison tells which.
    enum Phase: UInt8, Sendable {
        case header
        case discardingFragment
        /// Discarding after bytes that could not be framed (a wrong
        /// CommandID, bytes no request explains): a notification that does
        /// not begin like the response of an outstanding request is
        /// dropped as unsolicited.
        case resynchronizing
        case collectingUID
        case skippingAppIdentifier
        case tupleID
        case lengthLow
        case lengthHigh
        case value
    }

    public let configuration: Configuration
    /// Requests registered and not yet answered, in the order their
    /// responses come; while `streaming`, the first is being answered.
    var queue: [Pending] = []
    var phase = Phase.header
    /// The header of the first request's response is complete (or failed
    /// to match): its tuples are being received. (Said by the phase, not
    /// stored besides it.)
    var streaming: Bool { phase.rawValue > Phase.resynchronizing.rawValue }
    /// Bytes of the current response seen so far: in the header phase, the
    /// header bytes matched (against the first request's), 0 between responses.
    var offset = 0
    /// The last four header bytes received, each shifted in from the top,
    /// for the error message of a wrong NotificationUID: after its last
    /// byte, it is the NotificationUID received. (No branch on which byte
    /// goes where, and nothing to clear between responses.)
    var receivedUID: UInt32 = 0
    /// The current tuple: its AttributeID, its Length and the value bytes received.
    var attributeID: UInt8 = 0
    var length = 0
    var received = 0
    /// The tuples of the current response, one after the other, each as
    /// its AttributeID, its Length (2 bytes, little-endian) and its value,
    /// collected at its offset (the values of a response are one buffer,
    /// their tuples' IDs and lengths say where each is): it keeps the size
    /// of the largest response so far, and only the first `valuesLength`
    /// bytes mean anything.
    var scratch: [UInt8] = []
    var valuesLength = 0
    /// The current request's bytes, copied out of the queue when its
    /// tuples start, so the per-byte path reads them without copying the
    /// request; the walk over its attributes, at the current tuple's
    /// AttributeID (at the next one's, once the current one's value has begun).
    var currentBytes: [UInt8] = []
    var attributes = AttributeCursor()
    /// A Get Notification Attributes response shares `scratch` for its
    /// values instead of a copy: once whoever took it lets it go, the next
    /// response reuses it in place, and one that is still held makes the
    /// copy then (the Consumer sets this when it keeps no values:
    /// `keepsAttributes`). A response held holds the whole buffer, as long
    /// as the largest response so far.
    let lendsBuffers: Bool
    /// The attribute list of the last Get Notification Attributes response
    /// (it shares it), emptied as the next response's tuples begin, before
    /// `scratch` is written, whose values it may hold: reused in place when
    /// that response was let go (`lendsBuffers`).
    var lentAttributes: [NotificationAttribute] = []

    public init(configuration: Configuration = .default) {
        self.init(configuration: configuration, lendsBuffers: false)
    }

    init(configuration: Configuration, lendsBuffers: Bool) {
        self.configuration = configuration
        self.lendsBuffers = lendsBuffers
    }

    /// Requests registered and not yet answered (the one streaming included).
    public var outstandingCount: Int { queue.count }

    /// True between the first and the last byte of a response.
    public var isInsideResponse: Bool {
        phase == .header ? offset > 0 : streaming
    }

    /// While streaming: the response is still wanted, so its values are
    /// kept and a failure of it is reported. False once it has failed
    /// (framing goes on, nothing is stored) or when its request was
    /// abandoned, before its response began (the queue entry's flag) or
    /// during it; false between responses. One flag for all of these, read
    /// by every notification (the queue's element is not read that cheaply).
    var collecting = false

    /// Registers the request the next unclaimed response answers.
    public mutating func expect(_ request: DataSourceRequest, id: RequestID) {
        expect(request, id: id, abandoned: false)
    }

    /// Registers a request already abandoned: its response, if it comes, is
    /// consumed and dropped (a request written again: the consumer's).
    mutating func expect(_ request: DataSourceRequest, id: RequestID, abandoned: Bool) {
        queue.append(Pending(id: id, request: request, abandoned: abandoned))
    }

    /// Ends a request on the caller's side. With `responseMayFollow` (a
    /// timeout, a cancellation after the write went out) its response is
    /// still consumed if it comes; without (the write failed: no response
    /// follows, spec "Errors") it is forgotten. Returns false for an unknown ID.
    @discardableResult
    public mutating func cancel(_ id: RequestID, responseMayFollow: Bool) -> Bool {
        guard let index = queue.firstIndex(where: { $0.id == id }) else { return false }
        if responseMayFollow || (index == 0 && streaming) {
            // A response already arriving is consumed whatever the caller says.
            queue[index].abandoned = true
            if index == 0 && streaming { collecting = false }
        } else {
            if index == 0 && phase == .header {
                // Bytes already matched against it belong to nothing now.
                // (Between fragments, discarding is the same as a header
                // not begun: the next fragment starts one.)
                phase = .discardingFragment
            }
            removeRequest(at: index)
        }
        return true
    }

    /// Ends everything (link loss, session end, or the caller giving up):
    /// each live request fails with `incomplete`, and the state is reset.
    public mutating func finish(_ handler: (Event) -> Void) {
        for index in queue.indices where !queue[index].abandoned {
            let pending = queue[index]
            if index == 0 && streaming {
                if collecting {
                    handler(.failed(pending.id, DecodingError(.incomplete(expectedTuples: pending.request.tupleCount, receivedTuples: tuplesReceived), at: offset)))
                }
            } else {
                let received = index == 0 && isInsideResponse ? offset : 0
                handler(.failed(pending.id, DecodingError(.incomplete(expectedTuples: pending.request.tupleCount, receivedTuples: 0), at: received)))
            }
        }
        reset()
    }

    /// The tuples of the current response received whole: the attributes
    /// walked, but the one whose value is coming (none walked before its
    /// tuples start: the walk is at 0 then). Counted when asked, here only,
    /// not per tuple: a complete response has as many as its request asks.
    private var tuplesReceived: Int {
        var walked = AttributeCursor(offset: queue[0].request.headerCount, notification: attributes.notification)
        var tuples = 0
        while walked.offset < attributes.offset {
            _ = walked.next(in: currentBytes)
            tuples &+= 1
        }
        return phase == .value ? tuples &- 1 : tuples
    }

    /// Forgets every request and the response being received (its buffer
    /// is kept for the next responses).
    mutating func reset() {
        phase = .header  // (not streaming: nothing to remove)
        queue = []
        resetResponse()
    }

    public mutating func feed(_ fragment: [UInt8], _ handler: (Event) -> Void) {
        fragment.withUnsafeBytes { feed($0, handler) }
    }

    /// Feeds one Data Source notification. Complete responses and failures
    /// are passed to `handler` as they are found, each request exactly once.
    /// The handler cannot call back into this reassembler, whose state is
    /// half updated then: Swift's exclusivity checks refuse that access
    /// (the consumer's handler is given only its session: `Consumer.Session.take`).
    public mutating func feed(_ fragment: UnsafeRawBufferPointer, _ handler: (Event) -> Void) {
        assert(streaming || !collecting, "DataSourceReassembler: collecting out of step")
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
        guard phase == .value, length &- received > fragment.count, collecting else { return false }
        takeValueBytes(fragment)
        return true
    }

    /// The next bytes of the value being received (all of them or its
    /// rest): collected when the response is kept. The one step of a value
    /// for this fast path and for `feedAnyFragment`.
    @inline(__always)
    private mutating func takeValueBytes(_ bytes: UnsafeRawBufferPointer) {
        if collecting { collect(bytes, at: valuesLength &+ received) }
        received &+= bytes.count
        offset &+= bytes.count
    }

    /// `feed` for every notification but the plain middle of a value (kept
    /// out of line, so that the common case above stays small). The
    /// consumer calls it itself, after its own `absorbInsideValue`.
    @inline(never)
    mutating func feedAnyFragment(_ fragment: UnsafeRawBufferPointer, _ handler: (Event) -> Void) {
        if phase != .header && !streaming {
            // Discarding ends with its fragment: this one may start a
            // header. (Resynchronizing, no response has begun: the bytes
            // that could not be framed ended their fragment; this one must
            // begin like an outstanding request's response.)
            if phase == .resynchronizing && !beginsResponse(fragment) {
                if fragment.count > 0 { handler(.unsolicited(DecodingError(.unsolicitedResponse, at: 0))) }
                return
            }
            phase = .header
            offset = 0
        }
        if streaming && !collecting && queue.count > 1 && begins(fragment, withHeaderAt: 1, upTo: .max) {
            // The response being skipped was given up on (timed out or
            // invalid) and this notification starts exactly like the next
            // request's response: an NP that sent fewer tuples than asked
            // must not take the next response down with it.
            resetResponse()
        }
        var index = 0
        let count = fragment.count
        while index < count {
            let byte = fragment[index]
            switch phase {
            case .discardingFragment, .resynchronizing:
                return

            case .header:
                receivedUID = receivedUID &>> 8 | UInt32(byte) &<< 24
                matchHeader(byte, handler)

            case .collectingUID:
                receivedUID = receivedUID &>> 8 | UInt32(byte) &<< 24
                offset &+= 1
                if offset == 5 { reportUIDMismatch(handler) }  // the NotificationUID's last byte

            case .skippingAppIdentifier:
                offset &+= 1
                if byte == 0 { startTuples(handler) }

            case .tupleID:
                // (No check of the index: the walk is inside the command's
                // bytes until it ends, and then the response is complete.)
                let at = attributes.offset
                let expected = currentBytes.withUnsafeBufferPointer { $0[at] }
                if byte != expected {
                    fail(.unexpectedAttribute(expected: expected, actual: byte), at: offset, handler)
                }
                attributeID = byte
                if count &- index >= 3 {
                    // The Length is here too: what the two phases below
                    // do byte by byte, in one step.
                    length = Int(fragment[index &+ 1]) | Int(fragment[index &+ 2]) << 8
                    index &+= 3
                    offset &+= 3
                    beginValue(handler)
                    continue
                }
                offset &+= 1
                phase = .lengthLow

            case .lengthLow:
                offset &+= 1
                length = Int(byte)
                phase = .lengthHigh

            case .lengthHigh:
                offset &+= 1
                length |= Int(byte) << 8
                beginValue(handler)

            case .value:
                let take = min(count &- index, length &- received)
                // (The fragment holds bytes, so it has an address: no check of it.)
                takeValueBytes(UnsafeRawBufferPointer(start: fragment.baseAddress.unsafelyUnwrapped + index, count: take))
                index &+= take
                if received == length {
                    finishTuple(handler)
                }
                continue
            }
            index &+= 1
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

    /// Whether `fragment` begins with the header of the first live request,
    /// or of an abandoned one ahead of it: the whole header, or as much as a
    /// notification holds at the smallest ATT MTU (20 bytes) when it is
    /// longer. (A response's first notification is never shorter: it is
    /// either the whole response or a full one.)
    @inline(never)
    private func beginsResponse(_ fragment: UnsafeRawBufferPointer) -> Bool {
        for index in queue.indices {
            if begins(fragment, withHeaderAt: index, upTo: DataSourceResponse.mtuRange.lowerBound - 3) { return true }
            let pending = queue[index]
            if !pending.abandoned { return answersWrongly(pending.request, fragment) }
        }
        return false
    }

    /// Whether `fragment` begins with as much of the header of the request
    /// at `index` of the queue as it holds, and holds the whole header or at
    /// least `limit` bytes. (Out of line: the one copy of this loop for the
    /// two checks of how a notification begins.)
    @inline(never)
    private func begins(_ fragment: UnsafeRawBufferPointer, withHeaderAt index: Int, upTo limit: Int) -> Bool {
        // (Read in place: a copy of the request costs a retain and a release.)
        queue.withUnsafeBufferPointer { pending in
            let headerCount = pending[index].request.headerCount
            guard fragment.count >= min(headerCount, limit) else { return false }
            // (Without a check of each index: a request's header lies within its bytes.)
            return pending[index].request.bytes.withUnsafeBufferPointer { header in
                let end = min(headerCount, fragment.count)
                var position = 0
                while position < end {
                    if fragment[position] != header[position] { return false }
                    position &+= 1
                }
                return true
            }
        }
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
            while index < fragment.count && fragment[index] != 0 { index &+= 1 }
            tuplesStart = index &+ 1
        }
        // (The first AttributeID asked follows the header: `tupleCount` is not 0.)
        return fragment.count > tuplesStart && fragment[tuplesStart] == request.bytes.withUnsafeBufferPointer { $0[request.headerCount] }
    }

    // MARK: - Header

    /// Whether the request at `index` of the queue has `byte` as its header
    /// byte number `matched`, after the header bytes matched so far (those
    /// of the first request).
    private func extendsHeader(_ index: Int, _ byte: UInt8, _ matched: Int) -> Bool {
        // Read in place: copying a request out of the queue costs a retain
        // and a release of each of its arrays, for every header byte.
        queue.withUnsafeBufferPointer { pending in
            guard pending[index].request.headerCount > matched else { return false }
            // (Without a check of each index: a request's header lies within its bytes.)
            return pending[index].request.bytes.withUnsafeBufferPointer { header in
                guard header[matched] == byte else { return false }
                // The bytes so far matched the first request's header (no need to compare them again).
                if index == 0 { return true }
                return pending[0].request.bytes.withUnsafeBufferPointer { first in
                    var position = 0
                    while position < matched {
                        if header[position] != first[position] { return false }
                        position &+= 1
                    }
                    return true
                }
            }
        }
    }

    /// The header byte number `offset` has come. It must extend the header
    /// of the first request; an abandoned request may never be answered, so
    /// the next one may claim the bytes if its header starts the same way.
    @inline(never)
    private mutating func matchHeader(_ byte: UInt8, _ handler: (Event) -> Void) {
        let matched = offset
        offset = matched &+ 1
        var head = 0
        while head < queue.count && !extendsHeader(head, byte, matched) {
            if !queue[head].abandoned {
                mismatch(head, byte: byte, matched, handler)
                return
            }
            head &+= 1
        }
        // (One at a time: one removal code for the queue in firmware, where
        // `removeFirst(_:)` was another; a request is passed over so only
        // when it was abandoned and its response never came.)
        for _ in 0..<head { removeRequest(at: 0) }
        guard !queue.isEmpty else {
            // Every request passed over: nothing explains the bytes.
            handler(.unsolicited(DecodingError(.unsolicitedResponse, at: 0)))
            phase = .resynchronizing
            return
        }
        if offset == queue.withUnsafeBufferPointer({ $0[0].request.headerCount }) { beginTuples(handler) }
    }

    /// The first request's header is complete: its tuples come next.
    private mutating func beginTuples(_ handler: (Event) -> Void) {
        collecting = !queue[0].abandoned
        startTuples(handler)
    }

    /// The live request at `head` of the queue (the abandoned ones before it
    /// to be dropped) does not match the header bytes received (`matched` of
    /// them, then `byte`).
    private mutating func mismatch(_ head: Int, byte: UInt8, _ matched: Int, _ handler: (Event) -> Void) {
        // (Read in place, as in extendsHeader.)
        let (commandID, position, actual) = queue.withUnsafeBufferPointer { pending in
            let request = pending[head].request
            return request.bytes.withUnsafeBufferPointer { header in
                pending[0].request.bytes.withUnsafeBufferPointer { first in
                    var position = 0
                    while position < matched && position < request.headerCount && header[position] == first[position] { position &+= 1 }
                    return (request.commandID, position, matched == 0 ? byte : first[0])
                }
            }
        }
        for _ in 0..<head { removeRequest(at: 0) }  // (as in matchHeader)
        phase = .tupleID  // streaming (each way below sets its phase)
        collecting = true
        if position == 0 {
            fail(.wrongCommandID(expected: commandID, actual: CommandID(rawValue: actual)), at: 0, handler)
            resetResponse()
            phase = .resynchronizing
            return
        }
        if commandID == .getNotificationAttributes {
            if offset == 5 {  // the NotificationUID's last byte
                reportUIDMismatch(handler)
            } else {
                phase = .collectingUID
            }
        } else {
            fail(.wrongAppIdentifier, at: position, handler)
            if byte == 0 { startTuples(handler) } else { phase = .skippingAppIdentifier }
        }
    }

    /// The last byte of a wrong NotificationUID has come (the request
    /// answered is a Get Notification Attributes: only its header has one).
    @inline(never)
    private mutating func reportUIDMismatch(_ handler: (Event) -> Void) {
        let expected = queue.withUnsafeBufferPointer { $0[0].request.notificationUID }
        fail(.wrongNotificationUID(expected: expected, actual: NotificationUID(receivedUID)), at: 1, handler)
        startTuples(handler)
    }

    // MARK: - Tuples

    private mutating func startTuples(_ handler: (Event) -> Void) {
        // Emptied from its end (removeAll(keepingCapacity:) is 100 bytes
        // more of firmware); let go when responses are kept (the model
        // holds the list: emptied, it would be copied first).
        if lendsBuffers {
            while !lentAttributes.isEmpty { lentAttributes.removeLast() }
        } else {
            lentAttributes = []
        }
        currentBytes = queue[0].request.bytes
        attributes = AttributeCursor(offset: queue[0].request.headerCount, notification: queue[0].request.commandID == .getNotificationAttributes)
        valuesLength = 0
        phase = .tupleID  // (streaming: a response complete at once leaves the queue)
        if attributes.offset >= currentBytes.count { completeResponse(handler) }
    }

    /// After a tuple's AttributeID and Length: checks the length, makes room
    /// for the value in `scratch` (when it is to be stored) and waits for its bytes.
    @inline(never)
    private mutating func beginValue(_ handler: (Event) -> Void) {
        // (The walk goes on to the next tuple's AttributeID, read when this one is finished.)
        let limit = attributes.next(in: currentBytes) ?? configuration.unlimitedValueLength
        if length > limit {
            fail(.valueTooLong(attribute: attributeID, length: length, maxLength: limit), at: offset &- 2, handler)
        }
        received = 0
        if collecting {
            // The value's AttributeID and Length first, then its bytes.
            let end = valuesLength &+ 3 &+ length
            if end > scratch.count {
                // Exactly to the end of this tuple, keeping the tuples so far
                // (the buffer is kept from response to response, so it
                // grows only until it holds the largest response; doubling
                // could pass the bound of the requests' max lengths).
                let kept = valuesLength
                scratch = scratch.withUnsafeBytes { old in
                    [UInt8](unsafeUninitializedCapacity: end) { grown, initialized in
                        grown.initialize(repeating: 0)
                        UnsafeMutableRawBufferPointer(grown).copyMemory(from: UnsafeRawBufferPointer(start: old.baseAddress, count: kept))
                        initialized = end
                    }
                }
            }
            // (In place: the buffer holds them, no check of each index.)
            let start = valuesLength, id = attributeID, length = self.length
            scratch.withUnsafeMutableBytes { tuple in
                tuple[start] = id
                tuple[start &+ 1] = UInt8(truncatingIfNeeded: length)
                tuple[start &+ 2] = UInt8(truncatingIfNeeded: length >> 8)
            }
            valuesLength = start &+ 3
        }
        guard length > 0 else {
            finishTuple(handler)
            return
        }
        phase = .value
    }

    @inline(never)
    private mutating func finishTuple(_ handler: (Event) -> Void) {
        // The value of `length` bytes just collected after its tuple's ID
        // and Length is complete: the response's values now end after it
        // (when the response is being kept at all).
        if collecting { valuesLength &+= length }
        if attributes.offset >= currentBytes.count {
            completeResponse(handler)
        } else {
            phase = .tupleID
        }
    }

    @inline(never)
    private mutating func completeResponse(_ handler: (Event) -> Void) {
        if collecting {
            // (Read in place: a copy of the request costs a retain and a release.)
            // (Complete: every tuple the request asks for has come.)
            let (id, uid, tuples) = queue.withUnsafeBufferPointer { ($0[0].id, $0[0].request.notificationUID, $0[0].request.tupleCount) }
            let notification = attributes.notification  // (set from the request's CommandID)
            // The response's values in one allocation, each value its part
            // (none for no bytes: the array made of an empty buffer is the
            // empty one); or lent.
            let values = notification && lendsBuffers ? scratch
                : scratch.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[0..<valuesLength])) }
            if notification {
                Self.attributes(in: values, valuesLength, tuples, into: &lentAttributes)
                let response = NotificationAttributesResponse(notificationUID: uid, attributes: lentAttributes)
                handler(.response(id, .notificationAttributes(response)))
            } else {
                var list: [AppAttribute] = []
                Self.attributes(in: values, valuesLength, tuples, into: &list)
                let response = AppAttributesResponse(appIdentifierBytes: queue[0].request.appIdentifierBytes ?? [], attributes: list)
                handler(.response(id, .appAttributes(response)))
            }
        }
        resetResponse()
    }

    /// The attributes of the current response, from `values` (its tuples
    /// as `scratch` holds them), in order, appended to `attributes` (empty,
    /// its capacity kept when lent); `length` bytes of tuples, `tuples` of
    /// them. (Static: a method of the reassembler writing to one of its
    /// fields copied the whole reassembler first.) One copy for both kinds of response
    /// (the two specializations are the same code).
    @inline(never)
    private static func attributes<Attribute: AttributeTuple>(in values: [UInt8], _ length: Int, _ tuples: Int, into attributes: inout [Attribute]) {
        attributes.reserveCapacity(tuples)
        // (Read in place, without a check of each index: the tuples were
        // framed as they came, each within the first `length` bytes.)
        values.withUnsafeBufferPointer { tuple in
            var start = 0
            while start < length {
                let count = Int(tuple[start &+ 1]) | Int(tuple[start &+ 2]) << 8
                attributes.append(Attribute(rawID: tuple[start], value: AttributeValue(in: values, start: start &+ 3, count: count)))
                start &+= 3 &+ count
            }
        }
    }

    /// Fails the current request once; the rest of its response is framed and dropped.
    @inline(never)
    private mutating func fail(_ reason: DecodingError.Reason, at offset: Int, _ handler: (Event) -> Void) {
        // (Not collecting: failed already, or abandoned, reported by no one.)
        guard collecting else { return }
        collecting = false
        handler(.failed(queue[0].id, DecodingError(reason, at: offset)))
    }

    /// Removes a request from the queue: the one removal code for the queue
    /// in firmware (the standard library's removals are each specialized
    /// for the queue's element), out of line for its four callers.
    @inline(never)
    private mutating func removeRequest(at index: Int) {
        queue.remove(at: index)
    }

    /// Ends the response being received (its request leaves the queue) and
    /// waits for the next one's header.
    @inline(never)
    private mutating func resetResponse() {
        if streaming { removeRequest(at: 0) }
        collecting = false
        currentBytes = []
        attributes.offset = 0
        offset = 0
        phase = .header
        valuesLength = 0
    }
}
