// Host program for instruction counts (valgrind --tool=callgrind): the
// standard Data Source workload at one MTU through the DataSourceReassembler
// alone (as ds-throughput runs it), through the Consumer engine (request,
// write, fragments, completion) as the C API drives it (the `into:` forms,
// one action buffer reused), or through the one-response DataSourceParser
// (a command encoded per response, as Nordic's client does; values handed
// over in pieces), every value taken as a String (`strings`) or read as its
// bytes in place (`bytes`, what the C API hands to firmware; the only form
// of `parser`, which keeps no value).
// One pass is checked against the workload's FNV-1a 64 checksum first; then
// `countedPasses` runs the passes callgrind counts
// (--toggle-collect=<its exact symbol>: see firmware/measure.sh).
//
//   ds-instructions FILE.bin reassembler|consumer|parser PASSES CHECKSUM [strings|bytes]
import ANCS

#if canImport(Glibc)
import Glibc
#endif

let attributes: [NotificationAttributeRequest] = [
    NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 0xFFFF),
    NotificationAttributeRequest(.subtitle, maxLength: 0xFFFF), NotificationAttributeRequest(.message, maxLength: 0xFFFF),
    NotificationAttributeRequest(.date),
]

func fail(_ message: String) -> Never {
    print("ds-instructions: \(message)")
    exit(1)
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if count == 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

struct Workload {
    var uids: [UInt32] = []
    var bytes: [UInt8] = []
    /// Per response: the end offsets of its notifications in `bytes`.
    var fragmentEnds: [[Int]] = []

    init(records: [UInt8]) {
        var at = 0
        while at < records.count {
            switch records[at] {
            case 0 where at + 5 <= records.count:
                uids.append(UInt32(records[at + 1]) | UInt32(records[at + 2]) << 8 | UInt32(records[at + 3]) << 16 | UInt32(records[at + 4]) << 24)
                fragmentEnds.append([])
                at += 5
            case 1 where at + 3 <= records.count && !uids.isEmpty:
                let length = Int(records[at + 1]) | Int(records[at + 2]) << 8
                guard at + 3 + length <= records.count else { fail("truncated record at byte \(at)") }
                bytes += records[(at + 3)..<(at + 3 + length)]
                fragmentEnds[fragmentEnds.count - 1].append(bytes.count)
                at += 3 + length
            default:
                fail("bad record at byte \(at)")
            }
        }
    }
}

func reassemblerPass(_ workload: Workload, _ body: (NotificationAttributesResponse) -> Void) {
    var reassembler = DataSourceReassembler()
    workload.bytes.withUnsafeBytes { raw in
        var start = 0
        for (number, uid) in workload.uids.enumerated() {
            reassembler.expect(DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(uid), attributes: attributes)),
                               id: UInt32(truncatingIfNeeded: number))
            for end in workload.fragmentEnds[number] {
                reassembler.feed(UnsafeRawBufferPointer(rebasing: raw[start..<end])) { event in
                    guard case .response(_, .notificationAttributes(let response)) = event else { fail("response \(number) did not decode") }
                    body(response)
                }
                start = end
            }
        }
    }
}

func consumerPass(_ workload: Workload, mtu: Int, _ body: (NotificationAttributesResponse) -> Void) {
    // As the C API configures it: responses not kept in the model
    // (`keepsAttributes` false, which the C API always sets).
    var configuration = ConsumerConfiguration(eagerAttributes: [], eagerAppNames: false)
    configuration.keepsAttributes = false
    var consumer = Consumer(configuration: configuration)
    // One buffer for every input's actions, emptied after each when it holds
    // any, as the C API does.
    var actions: [ConsumerAction] = []
    actions.reserveCapacity(16)
    consumer.linkUp(mtu: mtu, at: .zero, into: &actions)
    consumer.subscriptionCompleted(.dataSource, .success, at: .zero, into: &actions)
    consumer.subscriptionCompleted(.notificationSource, .success, at: .zero, into: &actions)
    actions.removeAll(keepingCapacity: true)
    workload.bytes.withUnsafeBytes { raw in
        var start = 0
        for (number, uid) in workload.uids.enumerated() {
            let request = consumer.fetchAttributes(attributes, for: NotificationUID(uid), at: .zero, into: &actions)
            var token: WriteToken?
            for action in actions { if case .writeControlPoint(_, let written) = action { token = written } }
            guard let token else { fail("no Control Point write for response \(number)") }
            actions.removeAll(keepingCapacity: true)
            consumer.writeCompleted(token, .success, at: .zero, into: &actions)
            if !actions.isEmpty { actions.removeAll(keepingCapacity: true) }
            for end in workload.fragmentEnds[number] {
                consumer.received(dataSource: UnsafeRawBufferPointer(rebasing: raw[start..<end]), at: .zero, into: &actions)
                for action in actions {
                    guard case .emit(.completed(let id, let result)) = action, id == request else { continue }
                    guard case .success(.notificationAttributes(let response)) = result else { fail("response \(number) failed") }
                    body(response)
                }
                if !actions.isEmpty { actions.removeAll(keepingCapacity: true) }
                start = end
            }
        }
    }
}

/// One response at a time through DataSourceParser; `body` gets each
/// response's NotificationUID, then each tuple (id, length) and its value's
/// pieces as the parser hands them over.
func parserPass(_ workload: Workload, _ body: (ParserItem) -> Void) {
    var parser = DataSourceParser()
    workload.bytes.withUnsafeBytes { raw in
        var start = 0
        for (number, uid) in workload.uids.enumerated() {
            let command: [UInt8]
            do { command = try ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(uid), attributes: attributes)).encode() } catch { fail("\(error)") }
            var complete = false
            command.withUnsafeBytes { commandBytes in
                do { try parser.begin(commandBytes) } catch { fail("\(error)") }
                body(.response(uid))
                for end in workload.fragmentEnds[number] {
                    parser.feed(UnsafeRawBufferPointer(rebasing: raw[start..<end]), answering: commandBytes) { event in
                        switch event {
                        case .attribute(let id, let length): body(.attribute(id, length))
                        case .value(let piece): body(.value(piece))
                        case .complete: complete = true
                        case .failed(let error): fail("response \(number): \(error)")
                        }
                    }
                    start = end
                }
            }
            guard complete else { fail("response \(number) did not complete") }
        }
    }
}

enum ParserItem {
    case response(UInt32)
    case attribute(UInt8, Int)
    case value(UnsafeRawBufferPointer)
}

func pass(_ mode: String, _ workload: Workload, mtu: Int, _ body: (NotificationAttributesResponse) -> Void) {
    if mode == "consumer" { consumerPass(workload, mtu: mtu, body) } else { reassemblerPass(workload, body) }
}

/// A value's bytes: through a `String` (`strings`), or read in place.
@inline(__always)
func withValue<R>(_ value: AttributeValue, asString: Bool, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    if asString {
        var text = value.string
        return text.withUTF8 { body($0) }
    }
    return value.withBytes(body)
}

@inline(never)
func countedPasses(_ mode: String, _ workload: Workload, mtu: Int, passes: Int, asString: Bool) -> (values: Int, bytes: Int) {
    var values = 0, bytes = 0
    if mode == "parser" {
        for _ in 0..<passes {
            parserPass(workload) { item in
                switch item {
                case .response: break
                case .attribute: values &+= 1
                case .value(let piece): bytes &+= piece.count
                }
            }
        }
        return (values, bytes)
    }
    for _ in 0..<passes {
        pass(mode, workload, mtu: mtu) { response in
            for attribute in response.attributes {
                values &+= 1
                bytes &+= withValue(attribute.value, asString: asString) { $0.count }
            }
        }
    }
    return (values, bytes)
}

let arguments = CommandLine.arguments
guard arguments.count == 5 || (arguments.count == 6 && ["strings", "bytes"].contains(arguments[5])),
      ["reassembler", "consumer", "parser"].contains(arguments[2]),
      arguments[2] != "parser" || (arguments.count == 6 && arguments[5] == "bytes"),
      let passes = Int(arguments[3]), passes > 0, let expected = UInt64(arguments[4].hasPrefix("0x") ? String(arguments[4].dropFirst(2)) : arguments[4], radix: 16)
else { fail("usage: ds-instructions FILE.bin reassembler|consumer PASSES CHECKSUM [strings|bytes], or FILE.bin parser PASSES CHECKSUM bytes") }
let asString = arguments.count == 5 || arguments[5] == "strings"
let path = arguments[1]
guard let mtuText = path.split(separator: "mtu").last?.split(separator: ".").first, let mtu = Int(mtuText) else {
    fail("\(path): the file name does not give the MTU (ds_workload_mtuN.bin)")
}
let workload = Workload(records: readFile(path))
struct FNV1a64 {
    var value: UInt64 = 0xCBF2_9CE4_8422_2325
    mutating func add(_ byte: UInt8) { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    /// What the manifest hashes before each value: NotificationUID, AttributeID and length, little-endian.
    mutating func addTuple(uid: UInt32, id: UInt8, length: Int) {
        for shift in [0, 8, 16, 24] as [UInt32] { add(UInt8(truncatingIfNeeded: uid >> shift)) }
        add(id)
        add(UInt8(truncatingIfNeeded: length))
        add(UInt8(truncatingIfNeeded: length >> 8))
    }
}
var hash = FNV1a64()
if arguments[2] == "parser" {
    var uid: UInt32 = 0
    parserPass(workload) { item in
        switch item {
        case .response(let next): uid = next
        case .attribute(let id, let length): hash.addTuple(uid: uid, id: id, length: length)
        case .value(let piece): for byte in piece { hash.add(byte) }
        }
    }
} else {
    pass(arguments[2], workload, mtu: mtu) { response in
        for attribute in response.attributes {
            withValue(attribute.value, asString: asString) { value in
                hash.addTuple(uid: response.notificationUID.rawValue, id: attribute.id.rawValue, length: value.count)
                for byte in value { hash.add(byte) }
            }
        }
    }
}
guard hash.value == expected else { fail("decoded checksum 0x\(String(hash.value, radix: 16)) is not the manifest's 0x\(String(expected, radix: 16))") }
let counted = countedPasses(arguments[2], workload, mtu: mtu, passes: passes, asString: asString)
print("\(workload.uids.count) responses, \(passes) passes, \(counted.values) values, \(counted.bytes) value bytes")
