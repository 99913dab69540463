import ANCS
import Benchmark
import Foundation

// The standard Data Source workload (../shared/bench): 1000 Get Notification
// Attributes responses split at ATT MTU 23, 185 and 517. scripts/bench.sh
// generates it into .build/bench-workload before running.

struct Workload {
    /// Per response: its uid and its fragments.
    var responses: [(uid: UInt32, fragments: [[UInt8]])] = []
    var responseBytes = 0
    var fragmentCount = 0
    var checksum: UInt64 = 0

    init(mtu: Int) {
        let folder = ProcessInfo.processInfo.environment["ANCS_BENCH_WORKLOAD"] ?? "../.build/bench-workload"
        let data = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: "\(folder)/ds_workload_mtu\(mtu).bin"))) ?? Data())
        precondition(!data.isEmpty, "workload missing in \(folder): run scripts/bench.sh")
        var index = 0
        while index < data.count {
            if data[index] == 0 {
                let uid = UInt32(data[index + 1]) | UInt32(data[index + 2]) << 8 | UInt32(data[index + 3]) << 16 | UInt32(data[index + 4]) << 24
                responses.append((uid, []))
                index += 5
            } else {
                let length = Int(data[index + 1]) | Int(data[index + 2]) << 8
                responses[responses.count - 1].fragments.append(Array(data[(index + 3)..<(index + 3 + length)]))
                responseBytes += length
                fragmentCount += 1
                index += 3 + length
            }
        }
        let manifest = try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(folder)/ds_workload.json"))) as? [String: Any]
        let text = (manifest?["checksum_fnv1a64"] as? String) ?? "\(manifest?["checksum_fnv1a64"] ?? "0")"
        checksum = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) ?? 0 : UInt64(text) ?? UInt64(text, radix: 16) ?? 0
    }

    static let attributes: [NotificationAttributeRequest] = [
        .init(.appIdentifier), .init(.title, maxLength: 0xFFFF), .init(.subtitle, maxLength: 0xFFFF),
        .init(.message, maxLength: 0xFFFF), .init(.date),
    ]

    /// Reassembles and decodes every response (every value materialized as
    /// a String, or raw bytes when not UTF-8), returning the FNV-1a checksum.
    func decodeAll() -> UInt64 {
        var hash: UInt64 = 0xcbf29ce484222325
        @inline(__always) func mix(_ byte: UInt8) { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        var reassembler = DataSourceReassembler()
        for response in responses {
            reassembler.expect(DataSourceRequest(GetNotificationAttributes(notificationUID: NotificationUID(response.uid), attributes: Workload.attributes)), id: response.uid)
            for fragment in response.fragments {
                reassembler.feed(fragment) { event in
                    guard case .response(_, .notificationAttributes(let decoded)) = event else { fatalError("workload response failed: \(event)") }
                    let uid = decoded.notificationUID.rawValue
                    for attribute in decoded.attributes {
                        for shift in stride(from: 0, to: 32, by: 8) { mix(UInt8(truncatingIfNeeded: uid >> UInt32(shift))) }
                        mix(attribute.id.rawValue)
                        mix(UInt8(truncatingIfNeeded: attribute.value.count))
                        mix(UInt8(truncatingIfNeeded: attribute.value.count >> 8))
                        attribute.value.withBytes { for byte in $0 { mix(byte) } }
                    }
                }
            }
        }
        return hash
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        maxDuration: .seconds(3), maxIterations: 1_000_000)

    let event: [UInt8] = [0x00, 0x0A, 0x04, 0x03, 0x78, 0x56, 0x34, 0x12]
    Benchmark("Notification Source decode") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? NotificationSourceEvent.decode(event))
        }
    }

    let command = ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(
        notificationUID: NotificationUID(67), attributes: [.init(.appIdentifier), .init(.title, maxLength: 64), .init(.message, maxLength: 256), .init(.date)]))
    Benchmark("Control Point encode (Get Notification Attributes)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? command.encode())
        }
    }

    for mtu in [23, 185, 517] {
        let workload = Workload(mtu: mtu)
        let checksum = workload.decodeAll()
        precondition(checksum == workload.checksum, "MTU \(mtu): checksum \(String(checksum, radix: 16)) != manifest \(String(workload.checksum, radix: 16))")
        // One iteration = the whole workload (1000 responses).
        Benchmark("Data Source workload, MTU \(mtu) (\(workload.fragmentCount) fragments, \(workload.responseBytes) bytes)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 200)) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(workload.decodeAll()) }
        }
    }

    // The consumer engine per notification, end to end: Added event, the
    // fetch it triggers, the write result and the response fragments at MTU 185.
    let response = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: NotificationUID(1), attributes: [
        .init(.appIdentifier, "com.apple.MobileSMS"), .init(.title, "Alice"), .init(.message, "On my way — 5 min 🚲 see you at the café"), .init(.date, "20261122T093102"),
    ]))
    Benchmark("Consumer engine per notification (added → fetched, MTU 185)") { benchmark in
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes, eagerAppNames: false))
        _ = consumer.linkUp(mtu: 185, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        for iteration in benchmark.scaledIterations {
            let uid = NotificationUID(UInt32(truncatingIfNeeded: iteration))
            let added = NotificationSourceEvent(eventID: .added, eventFlags: [], categoryID: .social, categoryCount: 1, notificationUID: uid).encode()
            let actions = consumer.received(notificationSource: added, at: .zero)
            guard case .writeControlPoint(_, let token)? = actions.last else { fatalError("no fetch") }
            _ = consumer.writeCompleted(token, .success, at: .zero)
            guard case .notificationAttributes(var body) = response else { fatalError() }
            body.notificationUID = uid
            for fragment in DataSourceResponse.notificationAttributes(body).fragments(mtu: 185) {
                blackHole(consumer.received(dataSource: fragment, at: .zero))
            }
            _ = consumer.received(notificationSource: NotificationSourceEvent(eventID: .removed, eventFlags: [], categoryID: .social, categoryCount: 0, notificationUID: uid).encode(), at: .zero)
        }
    }

    Benchmark("Provider engine per command (Get Notification Attributes, MTU 185)") { benchmark in
        var provider = Provider()
        provider.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages")
        let (uid, _) = try! provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Alice", message: "On my way — 5 min 🚲 see you at the café", date: ANCSDate(year: 2026, month: 11, day: 22, hour: 9, minute: 31, second: 2)))
        _ = provider.connect(ConnectionID(1), mtu: 185)
        _ = provider.setSubscription(ConnectionID(1), .dataSource, enabled: true)
        let write = try! ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: ConsumerConfiguration.displayAttributes)).encode()
        for _ in benchmark.scaledIterations {
            blackHole(provider.controlPointWritten(ConnectionID(1), write))
        }
    }
}
