// Round-trip properties over generated PDUs, from fixed seeds: decode(encode(x))
// == x for every PDU, and Data Source responses survive being split anywhere.
// Every failure message names the seed and iteration that reproduce it.

import ANCS
import Testing

/// SplitMix64: a small, fast, seedable generator with a stable sequence.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `range`, by rejection (independent of the standard library's algorithm).
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound) &+ 1
        if span == 0 { return Int(truncatingIfNeeded: next()) }
        let limit = UInt64.max - UInt64.max % span
        var value = next()
        while value >= limit { value = next() }
        return range.lowerBound + Int(value % span)
    }

    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
    mutating func bool(_ percent: Int = 50) -> Bool { int(0...99) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }
}

/// One generated input: a seed for each iteration, derived from the suite seed.
struct PropertySeed: Sendable, CustomTestStringConvertible {
    var seed: UInt64
    var testDescription: String { "seed 0x" + String(seed, radix: 16) }

    static let all: [PropertySeed] = [0x5EED_0001, 0xA0C5_2014, 0xDEAD_BEEF_CAFE_F00D, 0x0123_4567_89AB_CDEF].map { PropertySeed(seed: $0) }
    static let iterations = 100

    /// Runs `body` once per iteration with its own generator; `context` names the seed and iteration.
    func forEachIteration(_ body: (inout SplitMix64, String) throws -> Void) rethrows {
        for iteration in 0..<PropertySeed.iterations {
            var mixer = SplitMix64(seed: seed ^ (UInt64(iteration) &* 0x9E37_79B9_7F4A_7C15))
            let iterationSeed = mixer.next()
            var generator = SplitMix64(seed: iterationSeed)
            try body(&generator, "seed 0x\(String(seed, radix: 16)) iteration \(iteration) (generator seed 0x\(String(iterationSeed, radix: 16)))")
        }
    }
}

// MARK: - Generators

extension SplitMix64 {
    mutating func uid() -> NotificationUID {
        switch int(0...9) {
        case 0: NotificationUID(0)
        case 1: NotificationUID(.max)
        default: NotificationUID(UInt32(truncatingIfNeeded: next()))
        }
    }

    mutating func event() -> NotificationSourceEvent {
        NotificationSourceEvent(
            eventID: EventID(rawValue: bool(70) ? UInt8(int(0...2)) : byte()),
            eventFlags: EventFlags(rawValue: byte()),
            categoryID: CategoryID(rawValue: bool(70) ? UInt8(int(0...11)) : byte()),
            categoryCount: byte(),
            notificationUID: uid()
        )
    }

    /// A NotificationAttributeID: mostly defined ones, sometimes reserved.
    mutating func notificationAttributeID() -> NotificationAttributeID {
        NotificationAttributeID(rawValue: bool(80) ? UInt8(int(0...7)) : UInt8(int(8...255)))
    }

    mutating func maxLength() -> UInt16 {
        switch int(0...9) {
        case 0: 0
        case 1: 0xFFFF
        case 2: UInt16(int(0...0xFFFF))
        case 3, 4: UInt16(int(100...700))
        default: UInt16(int(1...64))
        }
    }

    mutating func notificationAttributeRequests(count: ClosedRange<Int> = 1...10) -> [NotificationAttributeRequest] {
        (0..<int(count)).map { _ in
            let id = notificationAttributeID()
            return NotificationAttributeRequest(id, maxLength: id.takesMaxLength ? maxLength() : (bool(20) ? maxLength() : nil))
        }
    }

    mutating func appAttributeIDs(count: ClosedRange<Int> = 1...5) -> [AppAttributeID] {
        (0..<int(count)).map { _ in AppAttributeID(rawValue: bool(70) ? 0 : byte()) }
    }

    /// Valid UTF-8 without NUL: ASCII, 2-, 3- and 4-byte scalars.
    mutating func appIdentifier(maxScalars: Int = 40) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<int(0...maxScalars) {
            let value: UInt32
            switch int(0...9) {
            case 0: value = UInt32(int(0x80...0x7FF))
            case 1: value = UInt32(bool() ? int(0x800...0xD7FF) : int(0xE000...0xFFFD))
            case 2: value = UInt32(int(0x10000...0x10FFFF))
            default: value = UInt32(pick(Array("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789.-_".unicodeScalars)).value)
            }
            scalars.append(Unicode.Scalar(value)!)
        }
        return String(scalars)
    }

    /// A value of at most `limit` bytes: valid text, possibly cut inside a
    /// character, or arbitrary bytes (invalid UTF-8 included).
    mutating func value(limit: Int) -> AttributeValue {
        let length = bool(10) ? 0 : int(0...min(limit, bool(90) ? 48 : 2000))
        if bool(50) {
            // Text cut to `length` bytes, as an NP truncating to a max length does.
            var text = Array(appIdentifier(maxScalars: length).utf8)
            if text.count > length { text.removeLast(text.count - length) }
            return AttributeValue(bytes: text)
        }
        return AttributeValue(bytes: (0..<length).map { _ in byte() })
    }

    /// A Data Source request and a response that answers it within its max lengths.
    mutating func exchange(unlimited: Int) -> (DataSourceRequest, DataSourceResponse) {
        let (command, response) = commandExchange(unlimited: unlimited)
        return (DataSourceRequest(command)!, response)
    }

    /// The same as the command that asks (Get Notification or App Attributes).
    mutating func commandExchange(unlimited: Int) -> (ControlPointCommand, DataSourceResponse) {
        if bool(65) {
            let uid = uid()
            let requests = notificationAttributeRequests()
            let command = GetNotificationAttributes(notificationUID: uid, attributes: requests)
            let attributes = requests.map { NotificationAttribute($0.id, value(limit: $0.maxLength.map(Int.init) ?? unlimited)) }
            return (.getNotificationAttributes(command), .notificationAttributes(NotificationAttributesResponse(notificationUID: uid, attributes: attributes)))
        } else {
            let identifier = appIdentifier()
            let ids = appAttributeIDs()
            let command = GetAppAttributes(appIdentifier: identifier, attributes: ids)
            let attributes = ids.map { AppAttribute($0, value(limit: unlimited)) }
            return (.getAppAttributes(command), .appAttributes(AppAttributesResponse(appIdentifier: identifier, attributes: attributes)))
        }
    }

    /// Splits bytes at random points: 1-byte pieces, MTU-sized ones, empty ones, anything.
    mutating func split(_ bytes: [UInt8]) -> [[UInt8]] {
        let style = int(0...3)
        var pieces: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            let size: Int
            switch style {
            case 0: size = 1
            case 1: size = pick([20, 21, 182, 244, 514])
            case 2: size = bool(5) ? 0 : int(1...8)
            default: size = bool(30) ? 1 : int(0...300)
            }
            let end = min(start + size, bytes.count)
            pieces.append(Array(bytes[start..<end]))
            start = end
        }
        return pieces
    }
}

// MARK: - Properties

@Suite("Round-trip properties")
struct PropertyTests {
    @Test("Notification Source: decode(encode(x)) == x", arguments: PropertySeed.all)
    func notificationSource(_ seed: PropertySeed) throws {
        try seed.forEachIteration { generator, context in
            let event = generator.event()
            let bytes = event.encode()
            #expect(bytes.count == NotificationSourceEvent.length, "\(context)")
            let decoded = try NotificationSourceEvent.decode(bytes)
            #expect(decoded == event, "\(context): \(event) → \(bytes) → \(decoded)")
            #expect(decoded.encode() == bytes, "\(context)")
        }
    }

    @Test("Get Notification Attributes: decode(encode(x)) == x, reserved IDs included", arguments: PropertySeed.all)
    func getNotificationAttributes(_ seed: PropertySeed) throws {
        try seed.forEachIteration { generator, context in
            let command = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
                notificationUID: generator.uid(), attributes: generator.notificationAttributeRequests(count: 1...40)
            ))
            try roundTrip(command, context)
        }
    }

    @Test("Get App Attributes: decode(encode(x)) == x for UTF-8 AppIdentifiers without NUL", arguments: PropertySeed.all)
    func getAppAttributes(_ seed: PropertySeed) throws {
        try seed.forEachIteration { generator, context in
            let command = ControlPointCommand.getAppAttributes(GetAppAttributes(
                appIdentifier: generator.appIdentifier(maxScalars: generator.bool(90) ? 40 : 200), attributes: generator.appAttributeIDs(count: 1...12)
            ))
            try roundTrip(command, context)
        }
    }

    @Test("Perform Notification Action: decode(encode(x)) == x, reserved ActionIDs included", arguments: PropertySeed.all)
    func performNotificationAction(_ seed: PropertySeed) throws {
        try seed.forEachIteration { generator, context in
            let command = ControlPointCommand.performNotificationAction(PerformNotificationAction(
                notificationUID: generator.uid(), actionID: ActionID(rawValue: generator.bool() ? UInt8(generator.int(0...1)) : generator.byte())
            ))
            try roundTrip(command, context)
            #expect(try command.encode().count == 6, "\(context)")
        }
    }

    /// decode(encode(x)) == x, or, for a command over 512 bytes, the encoding error.
    private func roundTrip(_ command: ControlPointCommand, _ context: String) throws {
        let size = wireSize(command)
        if size > ControlPointCommand.maximumLength {
            #expect(throws: EncodingError(.commandTooLong(length: size)), "\(context)") { try command.encode() }
            return
        }
        let bytes = try command.encode()
        #expect(bytes.count == size, "\(context)")
        #expect(bytes.first == command.commandID.rawValue, "\(context)")
        let decoded = try ControlPointCommand.decode(bytes)
        #expect(decoded == command, "\(context): \(command) → \(bytes) → \(decoded)")
        #expect(try decoded.encode() == bytes, "\(context)")
    }

    /// The encoded size, computed from the spec's layout.
    private func wireSize(_ command: ControlPointCommand) -> Int {
        switch command {
        case .getNotificationAttributes(let command): 5 + command.attributes.reduce(0) { $0 + ($1.maxLength == nil ? 1 : 3) }
        case .getAppAttributes(let command): 2 + command.appIdentifier.utf8.count + command.attributes.count
        case .performNotificationAction: 6
        }
    }

    @Test("Data Source: encode → split anywhere → reassemble gives each response once, in order", arguments: PropertySeed.all)
    func dataSourceReassembly(_ seed: PropertySeed) {
        let unlimited = DataSourceReassembler.Configuration.default.unlimitedValueLength
        seed.forEachIteration { generator, context in
            let exchanges = (0..<generator.int(1...6)).map { _ in generator.exchange(unlimited: unlimited) }
            var reassembler = DataSourceReassembler()
            for (index, exchange) in exchanges.enumerated() {
                reassembler.expect(exchange.0, id: UInt32(index) &+ 100)
            }
            // All responses back to back, re-split across their boundaries.
            let wire = exchanges.flatMap { $0.1.encode() }
            let fragments = generator.split(wire)
            var events: [DataSourceReassembler.Event] = []
            for fragment in fragments {
                reassembler.feed(fragment) { events.append($0) }
            }
            let expected = exchanges.enumerated().map { DataSourceReassembler.Event.response(UInt32($0.offset) &+ 100, $0.element.1) }
            #expect(events == expected, "\(context): \(fragments.count) fragments of \(wire.count) bytes")
            #expect(reassembler.outstandingCount == 0, "\(context)")
            #expect(!reassembler.isInsideResponse, "\(context)")
            var late: [DataSourceReassembler.Event] = []
            reassembler.finish { late.append($0) }
            #expect(late.isEmpty, "\(context): \(late)")
        }
    }

    @Test("Data Source: fragments(mtu:) at a random MTU reassemble to the response", arguments: PropertySeed.all)
    func dataSourceFragments(_ seed: PropertySeed) {
        seed.forEachIteration { generator, context in
            let (request, response) = generator.exchange(unlimited: 1024)
            let mtu = generator.bool(80) ? generator.pick([23, 24, 185, 247, 517]) : generator.int(-10...600)
            let fragments = response.fragments(mtu: mtu)
            let size = min(max(mtu, 23), 517) - 3
            #expect(fragments.dropLast().allSatisfy { $0.count == size }, "\(context): MTU \(mtu)")
            #expect(fragments.flatMap { $0 } == response.encode(), "\(context)")
            var reassembler = DataSourceReassembler()
            reassembler.expect(request, id: 1)
            var events: [DataSourceReassembler.Event] = []
            for fragment in fragments { reassembler.feed(fragment) { events.append($0) } }
            #expect(events == [.response(1, response)], "\(context): MTU \(mtu)")
        }
    }

    @Test("Data Source: whatever the NP sends and whenever the caller cancels, every request ends at most once, an uncancelled one exactly once",
          arguments: PropertySeed.all)
    func everyRequestEndsOnce(_ seed: PropertySeed) {
        seed.forEachIteration { generator, context in
            let exchanges = (0..<generator.int(1...5)).map { _ in generator.exchange(unlimited: 64) }
            var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: 64))
            for (index, exchange) in exchanges.enumerated() { reassembler.expect(exchange.0, id: UInt32(index)) }

            // The right responses, damaged: bytes flipped, dropped, inserted, the tail cut or junk appended.
            var wire = exchanges.flatMap { $0.1.encode() }
            for _ in 0..<generator.int(0...3) {
                guard !wire.isEmpty else { break }
                let position = generator.int(0...(wire.count - 1))
                switch generator.int(0...4) {
                case 0: wire[position] ^= UInt8(generator.int(1...255))
                case 1: wire.remove(at: position)
                case 2: wire.insert(contentsOf: (0..<generator.int(1...4)).map { _ in generator.byte() }, at: position)
                case 3: wire.removeLast(generator.int(1...min(8, wire.count)))
                default: wire += (0..<generator.int(1...30)).map { _ in generator.byte() }
                }
            }

            var ended: [UInt32: Int] = [:]
            var cancelled: Set<UInt32> = []
            var endedAfterCancel: [UInt32] = []
            let record: (DataSourceReassembler.Event) -> Void = { event in
                switch event {
                case .response(let id, _), .failed(let id, _):
                    ended[id, default: 0] += 1
                    if cancelled.contains(id) { endedAfterCancel.append(id) }
                case .unsolicited:
                    break
                }
            }
            for fragment in generator.split(wire) {
                if generator.bool(10) {
                    let id = UInt32(generator.int(0...(exchanges.count - 1)))
                    if reassembler.cancel(id, responseMayFollow: generator.bool()) { cancelled.insert(id) }
                }
                reassembler.feed(fragment, record)
            }
            reassembler.finish(record)

            #expect(reassembler.outstandingCount == 0, "\(context)")
            #expect(endedAfterCancel.isEmpty, "\(context): ended after cancel: \(endedAfterCancel)")
            for id in 0..<UInt32(exchanges.count) {
                let count = ended[id, default: 0]
                if cancelled.contains(id) {
                    #expect(count <= 1, "\(context): request \(id) cancelled, ended \(count) times")
                } else {
                    #expect(count == 1, "\(context): request \(id) ended \(count) times")
                }
            }
        }
    }

    @Test("the generator is deterministic")
    func generatorIsDeterministic() {
        var first = SplitMix64(seed: 42)
        var second = SplitMix64(seed: 42)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in second.next() })
        // The reference sequence of SplitMix64 from seed 0.
        var zero = SplitMix64(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)
        #expect(zero.next() == 0x6E78_9E6A_A1B9_65F4)
        var ranged = SplitMix64(seed: 7)
        for _ in 0..<1000 { #expect((3...9).contains(ranged.int(3...9))) }
    }
}
