// What every part of the firmware test shares: the runtime's C functions,
// the check log, and small helpers that need no Unicode tables.
import ANCS

@_extern(c, "fw_exit") func fwExit(_ status: Int32)
@_extern(c, "fw_instructions") func fwInstructions() -> UInt64
@_extern(c, "fw_count_loop") func fwCountLoop(_ iterations: UInt32) -> UInt64
@_extern(c, "fw_heap_in_use") func fwHeapInUse() -> Int
@_extern(c, "fw_heap_peak") func fwHeapPeak() -> Int
@_extern(c, "fw_heap_mark") func fwHeapMark() -> Int
@_extern(c, "fw_heap_requested") func fwHeapRequested() -> Int
@_extern(c, "fw_heap_requested_peak") func fwHeapRequestedPeak() -> Int
@_extern(c, "fw_heap_size") func fwHeapSize() -> Int
@_extern(c, "fw_heap_allocations") func fwHeapAllocations() -> Int
@_extern(c, "fw_stack_peak") func fwStackPeak() -> Int
@_extern(c, "fw_stack_mark") func fwStackMark()
@_extern(c, "fw_stack_size") func fwStackSize() -> Int
@_extern(c, "fw_session_heap_budget") func fwSessionHeapBudget() -> Int

/// Every check the image makes, printed as it is made.
struct Log {
    var checks = 0
    var failures = 0

    mutating func check(_ passed: Bool, _ what: String) {
        checks += 1
        if passed {
            print("  ok   \(what)")
        } else {
            failures += 1
            print("  FAIL \(what)")
        }
    }

    /// Reports a value for firmware/measure.sh: `figure <key> <value>`.
    func figure(_ key: String, _ value: Int) {
        print("figure \(key) \(value)")
    }
}

extension StaticString {
    var text: String { withUTF8Buffer { String(decoding: $0, as: UTF8.self) } }
}

/// Byte-wise containment: no Unicode normalization tables on the device.
func contains(_ haystack: String, _ needle: StaticString) -> Bool {
    needle.withUTF8Buffer { want in
        let have = Array(haystack.utf8)
        if want.isEmpty { return true }
        guard have.count >= want.count else { return false }
        for start in 0...(have.count - want.count) where have[start..<(start + want.count)].elementsEqual(want) {
            return true
        }
        return false
    }
}

func sameText(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

func hex(_ bytes: [UInt8]) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}

func joined(_ parts: [String], _ separator: String) -> String {
    var out = ""
    for (index, part) in parts.enumerated() {
        if index > 0 { out += separator }
        out += part
    }
    return out
}

func eventLine(_ event: NotificationSourceEvent) -> String {
    "\(event.eventID) flags=[\(joined(event.eventFlags.names, ","))] category=\(event.categoryID) count=\(event.categoryCount) uid=\(event.notificationUID)"
}

func eventLine(_ id: EventID, _ notification: ConsumerNotification) -> String {
    eventLine(NotificationSourceEvent(eventID: id, eventFlags: notification.eventFlags, categoryID: notification.categoryID,
                                      categoryCount: notification.categoryCount, notificationUID: notification.uid))
}

func uidBytes(_ uid: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: uid), UInt8(truncatingIfNeeded: uid >> 8),
     UInt8(truncatingIfNeeded: uid >> 16), UInt8(truncatingIfNeeded: uid >> 24)]
}

/// A Notification Source event as an NP sends it.
func sourceEvent(_ id: EventID, _ flags: EventFlags, _ category: CategoryID, count: UInt8, uid: UInt32) -> [UInt8] {
    [id.rawValue, flags.rawValue, category.rawValue, count] + uidBytes(uid)
}

/// A consumer in a live session (both subscriptions done) at this MTU.
func connectedConsumer(_ configuration: ConsumerConfiguration = ConsumerConfiguration(eagerAttributes: [], eagerAppNames: false),
                       mtu: Int = 23, log: inout Log) -> Consumer {
    var consumer = Consumer(configuration: configuration)
    _ = consumer.linkUp(mtu: mtu, at: .zero)
    _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
    _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
    if !consumer.isInSession || !consumer.dataSourceAvailable {
        log.check(false, "the consumer's session did not start")
    }
    return consumer
}

/// The Control Point writes among a consumer's actions.
func writes(_ actions: [ConsumerAction]) -> [(bytes: [UInt8], token: WriteToken)] {
    var out: [(bytes: [UInt8], token: WriteToken)] = []
    for action in actions {
        if case .writeControlPoint(let bytes, let token) = action { out.append((bytes, token)) }
    }
    return out
}

/// How request `id` ended among these actions, if it did.
func completion(of id: ConsumerRequestID, in actions: [ConsumerAction]) -> ConsumerResult? {
    for action in actions {
        if case .emit(.completed(let done, let result)) = action, done == id { return result }
    }
    return nil
}

/// The bytes a provider sent on one characteristic, in order.
func notified(_ actions: [ProviderAction], on characteristic: ANCSCharacteristic) -> [[UInt8]] {
    var out: [[UInt8]] = []
    for action in actions {
        if case .notify(_, let which, let bytes) = action, which == characteristic { out.append(bytes) }
    }
    return out
}

/// The write response among a provider's actions (it is always the first).
func answer(_ actions: [ProviderAction]) -> ATTResult? {
    if case .respond(_, let result)? = actions.first { return result }
    return nil
}

func describe(_ result: ATTResult?) -> String {
    switch result {
    case .success?: "success"
    case .attError(let code)?: "error \(code)"
    case .transportFailure?: "transport failure"
    case nil: "no write response"
    }
}

/// Response values as lines, for printing and comparing.
func valueLines(_ response: DataSourceResponse) -> [String] {
    switch response {
    case .notificationAttributes(let value):
        var lines = ["uid=\(value.notificationUID)"]
        for attribute in value.attributes { lines.append("\(attribute.id)=\(attribute.value.string)") }
        return lines
    case .appAttributes(let value):
        var lines = ["app=\(value.appIdentifier)"]
        for attribute in value.attributes { lines.append("\(attribute.id)=\(attribute.value.string)") }
        return lines
    }
}

func flatten(_ fragments: [[UInt8]]) -> [UInt8] {
    var out: [UInt8] = []
    for fragment in fragments { out += fragment }
    return out
}

/// Embedded Swift cannot print an arbitrary enum: these say what matters.
func describe(_ result: ConsumerResult?) -> String {
    switch result {
    case .success(.notificationAttributes(let value))?: "notification attributes, \(value.attributes.count) values"
    case .success(.appAttributes(let value))?: "app attributes, \(value.attributes.count) values"
    case .success(.actionPerformed)?: "action performed"
    case .failure(let error)?: "failed: \(error)"
    case nil: "not ended"
    }
}

func describe(_ event: DataSourceReassembler.Event?) -> String {
    switch event {
    case .response(let id, _)?: "response for request \(id)"
    case .failed(let id, let error)?: "request \(id) failed: \(error)"
    case .unsolicited(let error)?: "unsolicited: \(error)"
    case nil: "no event"
    }
}
