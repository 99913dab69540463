// A slice of the standard Data Source workload (scripts/gen_ds_workload.py),
// decoded on the device: through the DataSourceReassembler alone (what the host's
// ds-throughput and Nordic's parser figures measure) and through the
// Consumer engine (request, write, fragments, completion). Every value is
// taken as a String; the values are checked against the slice's FNV-1a 64
// checksum in a pass of their own, outside the counted passes.
import ANCS

@_extern(c, "fw_workload_records") func fwWorkloadRecords(_ index: UInt32, _ count: UnsafeMutablePointer<Int>, _ mtu: UnsafeMutablePointer<UInt32>) -> UnsafePointer<UInt8>?
@_extern(c, "fw_workload_responses") func fwWorkloadResponses() -> UInt32
@_extern(c, "fw_workload_values") func fwWorkloadValues() -> UInt32
@_extern(c, "fw_workload_value_bytes") func fwWorkloadValueBytes() -> UInt32
@_extern(c, "fw_workload_checksum") func fwWorkloadChecksum() -> UInt64

/// What the workload asks for (the comment at the top of scripts/gen_ds_workload.py).
let workloadAttributes: [NotificationAttributeRequest] = [
    NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 0xFFFF),
    NotificationAttributeRequest(.subtitle, maxLength: 0xFFFF), NotificationAttributeRequest(.message, maxLength: 0xFFFF),
    NotificationAttributeRequest(.date),
]

struct FNV1a64 {
    var value: UInt64 = 0xCBF2_9CE4_8422_2325
    mutating func add(_ byte: UInt8) { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    mutating func add(_ response: NotificationAttributesResponse) {
        let uid = response.notificationUID.rawValue
        for attribute in response.attributes {
            let text = attribute.value.string
            let length = text.utf8.count
            for shift in [0, 8, 16, 24] as [UInt32] { add(UInt8(truncatingIfNeeded: uid >> shift)) }
            add(attribute.id.rawValue)
            add(UInt8(truncatingIfNeeded: length))
            add(UInt8(truncatingIfNeeded: length >> 8))
            for byte in text.utf8 { add(byte) }
        }
    }
}

/// What a counted pass does with each response: every value as a String.
struct Tally {
    var values = 0
    var bytes = 0
    mutating func add(_ response: NotificationAttributesResponse) {
        for attribute in response.attributes {
            let text = attribute.value.string
            values &+= 1
            bytes &+= text.utf8.count
        }
    }
}

/// Walks the records: `start(uid)` at each response, `fragment(bytes)` per notification.
func walk(_ records: UnsafeRawBufferPointer, start: (UInt32) -> Void, fragment: (UnsafeRawBufferPointer) -> Void) {
    var at = 0
    while at < records.count {
        if records[at] == 0 {
            let uid = UInt32(records[at + 1]) | UInt32(records[at + 2]) << 8 | UInt32(records[at + 3]) << 16 | UInt32(records[at + 4]) << 24
            start(uid)
            at += 5
        } else {
            let length = Int(records[at + 1]) | Int(records[at + 2]) << 8
            fragment(UnsafeRawBufferPointer(rebasing: records[(at + 3)..<(at + 3 + length)]))
            at += 3 + length
        }
    }
}

func reassemblerPass(_ records: UnsafeRawBufferPointer, _ body: (NotificationAttributesResponse) -> Void) -> Int {
    var reassembler = DataSourceReassembler()
    var failures = 0
    var number: UInt32 = 0
    walk(records, start: { uid in
        number &+= 1
        reassembler.expect(DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(uid), attributes: workloadAttributes)), id: number)
    }, fragment: { bytes in
        reassembler.feed(bytes) { event in
            if case .response(_, .notificationAttributes(let response)) = event { body(response) } else { failures += 1 }
        }
    })
    return failures
}

func consumerPass(_ records: UnsafeRawBufferPointer, mtu: Int, _ log: inout Log, _ body: (NotificationAttributesResponse) -> Void) -> Int {
    // As the C API configures it: responses not kept in the model
    // (`keepsAttributes` false, which the C API always sets).
    var configuration = ConsumerConfiguration(eagerAttributes: [], eagerAppNames: false)
    configuration.keepsAttributes = false
    var consumer = connectedConsumer(configuration, mtu: mtu, log: &log)
    var failures = 0
    var request = ConsumerRequestID(rawValue: 0)
    // As the C API drives it: one action buffer for every input, emptied
    // after an input only when it holds actions.
    var actions: [ConsumerAction] = []
    actions.reserveCapacity(16)
    walk(records, start: { uid in
        request = consumer.fetchAttributes(workloadAttributes, for: NotificationUID(uid), at: .zero, into: &actions)
        let token = writes(actions).first?.token
        actions.removeAll(keepingCapacity: true)
        if let token {
            consumer.writeCompleted(token, .success, at: .zero, into: &actions)
            if !actions.isEmpty { actions.removeAll(keepingCapacity: true) }
        } else {
            failures += 1
        }
    }, fragment: { bytes in
        consumer.received(dataSource: bytes, at: .zero, into: &actions)
        for action in actions {
            guard case .emit(.completed(let id, let result)) = action, id == request else { continue }
            if case .success(.notificationAttributes(let response)) = result { body(response) } else { failures += 1 }
        }
        if !actions.isEmpty { actions.removeAll(keepingCapacity: true) }
    })
    return failures
}

struct WorkloadFigures {
    var mtu = 0
    var reassemblerPerResponse = 0
    var consumerPerResponse = 0
}

func runWorkload(_ log: inout Log) -> [WorkloadFigures] {
    let responses = Int(fwWorkloadResponses())
    print("Standard Data Source workload, first \(responses) responses, every value as a String")
    var out: [WorkloadFigures] = []
    var index: UInt32 = 0
    while true {
        var count = 0
        var mtu: UInt32 = 0
        guard let base = fwWorkloadRecords(index, &count, &mtu) else { break }
        index += 1
        let records = UnsafeRawBufferPointer(start: base, count: count)
        var figures = WorkloadFigures()
        figures.mtu = Int(mtu)

        var hash = FNV1a64()
        var failures = reassemblerPass(records) { hash.add($0) }
        log.check(failures == 0 && hash.value == fwWorkloadChecksum(), "MTU \(mtu), reassembler: values match the slice's checksum")
        hash = FNV1a64()
        failures = consumerPass(records, mtu: Int(mtu), &log) { hash.add($0) }
        log.check(failures == 0 && hash.value == fwWorkloadChecksum(), "MTU \(mtu), consumer: values match the slice's checksum")

        var tally = Tally()
        var start = fwInstructions()
        failures = reassemblerPass(records) { tally.add($0) }
        figures.reassemblerPerResponse = Int(truncatingIfNeeded: fwInstructions() &- start) / responses
        log.check(failures == 0 && tally.values == Int(fwWorkloadValues()) && tally.bytes == Int(fwWorkloadValueBytes()),
                  "MTU \(mtu), reassembler: \(tally.values) values, \(tally.bytes) bytes; \(figures.reassemblerPerResponse) instructions per response")
        tally = Tally()
        start = fwInstructions()
        failures = consumerPass(records, mtu: Int(mtu), &log) { tally.add($0) }
        figures.consumerPerResponse = Int(truncatingIfNeeded: fwInstructions() &- start) / responses
        log.check(failures == 0 && tally.values == Int(fwWorkloadValues()) && tally.bytes == Int(fwWorkloadValueBytes()),
                  "MTU \(mtu), consumer: \(tally.values) values, \(tally.bytes) bytes; \(figures.consumerPerResponse) instructions per response")
        out.append(figures)
    }
    log.check(!out.isEmpty, "the workload slice is linked in")
    return out
}
