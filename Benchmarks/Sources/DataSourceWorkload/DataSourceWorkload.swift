// The standard Data Source workload (scripts/gen_ds_workload.py):
// 1000 Get Notification Attributes responses (AppIdentifier, Title,
// Subtitle, Message, Date) split into GATT notifications at ATT MTU 23, 185
// and 517. `scripts/bench.sh` generates it into `.build/bench-workload` at
// the repository root; set ANCS_BENCH_WORKLOAD to read it from elsewhere.
//
// File format, per record: u8 kind 0 + u32le uid (a new response), or
// u8 kind 1 + u16le length + bytes (one Data Source notification).

import ANCS
import Foundation

public struct WorkloadError: Error, CustomStringConvertible {
    public var description: String
}

public struct DataSourceWorkload: Sendable {
    public static let mtus = [23, 185, 517]

    /// What every workload request asks for, in the order the responses carry it.
    public static let attributes: [NotificationAttributeRequest] = [
        .init(.appIdentifier), .init(.title, maxLength: 0xFFFF), .init(.subtitle, maxLength: 0xFFFF),
        .init(.message, maxLength: 0xFFFF), .init(.date),
    ]

    /// Longest value kept without a heap block: values are kept as byte
    /// arrays, so every non-empty value has one.
    public static let inlineValueCapacity = 0

    public let mtu: Int
    /// Request registered before each response, built ahead (the consumer
    /// builds it when it writes the command, not when the answer arrives).
    public let requests: [DataSourceRequest]
    /// Every Data Source notification of the workload, back to back.
    public let bytes: [UInt8]
    /// End offset in `bytes` of each notification.
    public let fragmentEnds: [Int]
    /// For each response, the index in `fragmentEnds` one past its last notification.
    public let responseEnds: [Int]
    /// Bytes of all responses (the throughput denominator).
    public let responseBytes: Int
    /// Bytes of all attribute values.
    public let valueBytes: Int
    /// Attribute tuples in all responses.
    public let valueCount: Int
    /// Values longer than `inlineValueCapacity`: each needs one heap block.
    public let heapValueCount: Int
    /// The manifest's FNV-1a 64 checksum of the decoded values.
    public let checksum: UInt64

    public var responseCount: Int { requests.count }
    public var fragmentCount: Int { fragmentEnds.count }

    /// The folder holding the workload files.
    public static var folder: String {
        if let folder = ProcessInfo.processInfo.environment["ANCS_BENCH_WORKLOAD"], !folder.isEmpty { return folder }
        // Benchmarks/Sources/DataSourceWorkload/<this file> → repository root.
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent(".build/bench-workload").path
    }

    /// Loads the workload for one MTU and checks it against the manifest:
    /// counts, response bytes, and the checksum recomputed straight from the
    /// wire bytes (independently of the library under test).
    public init(mtu: Int, folder: String = DataSourceWorkload.folder) throws(WorkloadError) {
        let hint = "run scripts/bench.sh (or python3 scripts/gen_ds_workload.py --out .build/bench-workload from the repository root)"
        guard let manifestData = FileManager.default.contents(atPath: "\(folder)/ds_workload.json"),
              let manifest = (try? JSONSerialization.jsonObject(with: manifestData)) as? [String: Any],
              let mtus = manifest["mtus"] as? [String: Any], let entry = mtus[String(mtu)] as? [String: Any],
              let file = entry["file"] as? String, let expectedFragments = entry["fragments"] as? Int,
              let responses = manifest["responses"] as? Int, let responseBytes = manifest["response_bytes"] as? Int,
              let valueBytes = manifest["attribute_value_bytes"] as? Int,
              let checksumText = manifest["checksum_fnv1a64"] as? String, checksumText.hasPrefix("0x"),
              let checksum = UInt64(checksumText.dropFirst(2), radix: 16)
        else { throw WorkloadError(description: "no workload for MTU \(mtu) in \(folder): \(hint)") }
        guard let data = FileManager.default.contents(atPath: "\(folder)/\(file)") else {
            throw WorkloadError(description: "missing \(folder)/\(file): \(hint)")
        }
        let records = [UInt8](data)

        var requests: [DataSourceRequest] = []
        var bytes: [UInt8] = []
        var fragmentEnds: [Int] = []
        var responseEnds: [Int] = []
        var uids: [UInt32] = []
        var index = 0
        while index < records.count {
            switch records[index] {
            case 0 where index + 5 <= records.count:
                let uid = UInt32(records[index + 1]) | UInt32(records[index + 2]) << 8
                    | UInt32(records[index + 3]) << 16 | UInt32(records[index + 4]) << 24
                if !uids.isEmpty { responseEnds.append(fragmentEnds.count) }
                uids.append(uid)
                requests.append(DataSourceRequest(GetNotificationAttributes(
                    notificationUID: NotificationUID(uid), attributes: DataSourceWorkload.attributes)))
                index += 5
            case 1 where index + 3 <= records.count && !uids.isEmpty:
                let length = Int(records[index + 1]) | Int(records[index + 2]) << 8
                guard index + 3 + length <= records.count else { throw WorkloadError(description: "\(file): truncated record") }
                bytes.append(contentsOf: records[(index + 3)..<(index + 3 + length)])
                fragmentEnds.append(bytes.count)
                index += 3 + length
            default:
                throw WorkloadError(description: "\(file): bad record at byte \(index)")
            }
        }
        if !uids.isEmpty { responseEnds.append(fragmentEnds.count) }

        // Independent reference decode of the concatenated responses.
        var hash = FNV1a64()
        var values = 0, heapValues = 0, valueTotal = 0, position = 0
        for (number, uid) in uids.enumerated() {
            let end = responseEnds[number] == 0 ? 0 : fragmentEnds[responseEnds[number] - 1]
            position += 5  // CommandID + NotificationUID
            while position < end {
                let length = Int(bytes[position + 1]) | Int(bytes[position + 2]) << 8
                hash.tuple(uid: uid, id: bytes[position], length: length)
                hash.add(bytes[(position + 3)..<(position + 3 + length)])
                values += 1
                valueTotal += length
                if length > DataSourceWorkload.inlineValueCapacity { heapValues += 1 }
                position += 3 + length
            }
        }
        guard uids.count == responses, fragmentEnds.count == expectedFragments, bytes.count == responseBytes,
              valueTotal == valueBytes, values == responses * DataSourceWorkload.attributes.count, hash.value == checksum
        else { throw WorkloadError(description: "\(file) does not match ds_workload.json: \(hint)") }

        self.mtu = mtu
        self.requests = requests
        self.bytes = bytes
        self.fragmentEnds = fragmentEnds
        self.responseEnds = responseEnds
        self.responseBytes = responseBytes
        self.valueBytes = valueBytes
        self.valueCount = values
        self.heapValueCount = heapValues
        self.checksum = checksum
    }

    /// Feeds every notification of the workload, in order, to `reassembler`,
    /// registering each response's request just before its first byte, and
    /// passes each decoded response to `body`. Any failure stops the process.
    /// `fragmentDone` is called after each notification (allocation accounting).
    public func run(
        _ reassembler: inout DataSourceReassembler,
        fragmentDone: ((_ fragment: Int) -> Void)? = nil,
        _ body: (NotificationAttributesResponse) -> Void
    ) {
        bytes.withUnsafeBytes { raw in
            var fragment = 0
            var start = 0
            for number in 0..<requests.count {
                reassembler.expect(requests[number], id: UInt32(truncatingIfNeeded: number))
                let last = responseEnds[number]
                while fragment < last {
                    let end = fragmentEnds[fragment]
                    reassembler.feed(UnsafeRawBufferPointer(rebasing: raw[start..<end])) { event in
                        guard case .response(_, .notificationAttributes(let response)) = event else {
                            fatalError("MTU \(mtu): the workload did not decode: \(event)")
                        }
                        body(response)
                    }
                    fragmentDone?(fragment)
                    start = end
                    fragment += 1
                }
            }
        }
        if reassembler.outstandingCount != 0 || reassembler.isInsideResponse {
            fatalError("MTU \(mtu): \(reassembler.outstandingCount) responses left undecoded")
        }
    }

    /// One pass whose result is the FNV-1a checksum of every value as a String.
    public func checksumPass() -> UInt64 {
        var reassembler = DataSourceReassembler()
        var hash = FNV1a64()
        run(&reassembler) { response in
            for attribute in response.attributes {
                var text = attribute.value.string
                text.withUTF8 { utf8 in
                    hash.tuple(uid: response.notificationUID.rawValue, id: attribute.id.rawValue, length: utf8.count)
                    hash.add(utf8)
                }
            }
        }
        return hash.value
    }

    /// Fails loudly unless the library decodes the workload to the manifest's checksum.
    public func verify() {
        let decoded = checksumPass()
        guard decoded == checksum else {
            fatalError("MTU \(mtu): decoded checksum 0x\(String(decoded, radix: 16)) != manifest 0x\(String(checksum, radix: 16))")
        }
    }
}

/// The cheap consumer of a timed pass: reads every value (its bytes, as a
/// display that copies them out would; with `strings`, as a `String`) and
/// tallies values and bytes, so nothing can be optimized away and a pass
/// that lost or changed a value's length is caught.
public struct Tally: Sendable {
    public var values = 0
    public var bytes = 0
    public var strings: Bool
    public init(strings: Bool = false) { self.strings = strings }

    @inline(__always)
    public mutating func add(_ response: NotificationAttributesResponse) {
        for attribute in response.attributes {
            values &+= 1
            if strings {
                bytes &+= attribute.value.string.utf8.count
            } else {
                bytes &+= attribute.value.withBytes { $0.count }
            }
        }
    }

    public func check(against workload: DataSourceWorkload, passes: Int = 1) {
        guard values == workload.valueCount * passes, bytes == workload.valueBytes * passes else {
            fatalError("MTU \(workload.mtu): \(values) values / \(bytes) bytes decoded, expected \(workload.valueCount * passes) / \(workload.valueBytes * passes)")
        }
    }
}

/// FNV-1a 64 as the workload manifest defines it.
public struct FNV1a64: Sendable {
    public private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325
    public init() {}

    @inline(__always)
    public mutating func add(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    public mutating func add<S: Sequence<UInt8>>(_ bytes: S) {
        for byte in bytes { add(byte) }
    }

    /// u32le uid, u8 attribute id, u16le length.
    public mutating func tuple(uid: UInt32, id: UInt8, length: Int) {
        for shift in stride(from: 0, to: 32, by: 8) { add(UInt8(truncatingIfNeeded: uid >> UInt32(shift))) }
        add(id)
        add(UInt8(truncatingIfNeeded: length))
        add(UInt8(truncatingIfNeeded: length >> 8))
    }
}
