import ANCS
@testable import ANCSCapture
import Foundation
import Testing

/// Two captures made by Bumble's snooper on virtual controllers:
/// - provide-ancsclient-mtu23: the NP side (`ancs provide`) of Bumble's
///   AncsClient interop run at MTU 23 (long writes, 0x0F before pairing, 0xA2);
/// - listen-nc: the NC side (`ancs listen --mtu 23`) against `ancs provide`,
///   with what `ancs listen --json` printed during it (listen-nc.jsonl).
func fixture(_ name: String) throws -> [UInt8] {
    let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
    return Array(try Data(contentsOf: url))
}

func transcript(_ name: String) throws -> TranscriptBuilder {
    TranscriptBuilder.transcript(of: try BTSnoop.parse(try fixture(name)))
}

func events(_ builder: TranscriptBuilder, _ event: String) -> [TranscriptEntry] {
    builder.entries.filter { $0.event == event }
}

/// The string value of a member of a JSON object, by path.
func member(_ json: JSON, _ path: String...) -> JSON? {
    var current = json
    for key in path {
        guard case .object(let members) = current, let next = members.first(where: { $0.0 == key })?.1 else { return nil }
        current = next
    }
    return current
}

import ANCSFormat

@Suite("btsnoop captures")
struct CaptureTests {
    @Test func readsRecords() throws {
        let records = try BTSnoop.parse(try fixture("listen-nc.btsnoop"))
        #expect(records.count > 50)
        #expect(records.first?.number == 1)
        #expect(records.contains { $0.type == .command && $0.direction == .sent })
        #expect(records.contains { $0.type == .event && $0.direction == .received })
        #expect(records.contains { $0.type == .acl && $0.direction == .sent })
        #expect(records.contains { $0.type == .acl && $0.direction == .received })
        // Timestamps never go back.
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
    }

    @Test func refusesWhatIsNotBTSnoop() {
        #expect(throws: CaptureError.self) { try BTSnoop.parse(Array("not a capture at all".utf8)) }
        var header = Array("btsnoop\0".utf8) + [0, 0, 0, 2, 0, 0, 0x03, 0xEA]
        #expect { try BTSnoop.parse(header) } throws: { "\($0)".contains("version 2") }
        header[11] = 1
        header[15] = 0xFF
        #expect { try BTSnoop.parse(header) } throws: { "\($0)".contains("datalink") }
    }

    @Test func aCutFileEndsWithTheLastWholeRecord() throws {
        let bytes = try fixture("listen-nc.btsnoop")
        let whole = try BTSnoop.parse(bytes)
        let cut = try BTSnoop.parse(Array(bytes.dropLast(3)))
        #expect(cut.count == whole.count - 1)
        #expect(cut == Array(whole.dropLast()))
    }

    /// ACL fragments of one L2CAP frame, in either order of directions, are joined.
    @Test func reassemblesACLFragments() {
        var hci = HCIReassembler()
        // L2CAP length 6, ATT channel, payload 1B 10 00 AA BB CC, split 3 + 7 bytes.
        let frame: [UInt8] = [6, 0, 4, 0, 0x1B, 0x10, 0x00, 0xAA, 0xBB, 0xCC]
        func acl(_ start: Bool, _ bytes: ArraySlice<UInt8>, _ number: Int) -> BTSnoopRecord {
            let header = 0x0001 | (start ? 0x2000 : 0x1000)
            return BTSnoopRecord(number: number, type: .acl, direction: .received, timestamp: UInt64(number),
                                 payload: [UInt8(header & 0xFF), UInt8(header >> 8), UInt8(bytes.count), 0] + bytes)
        }
        #expect(hci.feed(acl(true, frame[0..<3], 1)).isEmpty)
        let items = hci.feed(acl(false, frame[3...], 2))
        #expect(items == [.frame(L2CAPFrame(handle: 1, direction: .received, channel: 4, payload: [0x1B, 0x10, 0x00, 0xAA, 0xBB, 0xCC],
                                            record: 2, timestamp: 2))])
        let orphan = hci.feed(acl(false, frame[3...], 3))
        #expect(orphan.count == 1)
        if case .malformed(_, 3, let reason)? = orphan.first { #expect(reason.contains("continuation")) } else { Issue.record("\(orphan)") }
    }

    /// ATT PDUs of every opcode, cut short or filled with random bytes (a
    /// damaged or hostile capture): each is read within its bytes.
    @Test func shortAndRandomATTPDUsOfEveryOpcode() throws {
        var generator = SystemRandomNumberGenerator()
        func record(_ pdu: [UInt8], _ number: Int, _ direction: BTSnoopRecord.Direction) -> BTSnoopRecord {
            let l2cap = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 4, 0] + pdu
            return BTSnoopRecord(number: number, type: .acl, direction: direction, timestamp: UInt64(number),
                                 payload: [0x01, 0x20, UInt8(l2cap.count), 0] + l2cap)
        }
        // The discovery of a real capture first, so that handles are known.
        var records = try BTSnoop.parse(try fixture("listen-nc.btsnoop"))
        var number = records.count
        for opcode in 0...255 {
            for length in 1...24 {
                for direction in [BTSnoopRecord.Direction.sent, .received] {
                    number += 1
                    let pdu = [UInt8(opcode)] + (1..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    records.append(record(pdu, number, direction))
                }
            }
        }
        let builder = TranscriptBuilder.transcript(of: records)
        #expect(builder.entries.count >= events(try transcript("listen-nc.btsnoop"), "dataSource").count)
    }

    @Test func findsTheANCSHandlesFromDiscovery() throws {
        for name in ["listen-nc.btsnoop", "provide-ancsclient-mtu23.btsnoop"] {
            let builder = try transcript(name)
            // The host reported these value handles (`ready F0:… 16 19 21`).
            #expect(builder.handles.notificationSource == 16)
            #expect(builder.handles.controlPoint == 19)
            #expect(builder.handles.dataSource == 21)
            #expect(builder.handles.notificationSourceCCCD == 17)
            #expect(builder.handles.dataSourceCCCD == 22)
            #expect(builder.handles.source == .discovery)
            #expect(events(builder, "ancsHandles").count == 1)
        }
    }

    /// Without the discovery PDUs, the handles are recognized from ANCS traffic.
    @Test func recognizesTheHandlesWithoutDiscovery() throws {
        let discovery: Set<UInt8> = [0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x10, 0x11]
        let records = try BTSnoop.parse(try fixture("listen-nc.btsnoop")).filter { record in
            // Single-fragment ATT PDUs at MTU 23: the opcode follows the ACL and L2CAP headers.
            !(record.type == .acl && record.payload.count > 8 && record.payload[6] == 4 && discovery.contains(record.payload[8]))
        }
        let builder = TranscriptBuilder.transcript(of: records)
        #expect(builder.handles.source == .recognized)
        #expect(builder.handles.notificationSource == 16)
        #expect(builder.handles.controlPoint == 19)
        #expect(builder.handles.dataSource == 21)
        let full = try transcript("listen-nc.btsnoop")
        #expect(events(builder, "dataSource").count == events(full, "dataSource").count)
        #expect(events(builder, "notificationSource").count == events(full, "notificationSource").count)
    }

    /// The NC's capture says what `ancs listen --json` printed: the same
    /// Notification Source events and the same attribute values.
    @Test func theNCCaptureMatchesWhatListenLogged() throws {
        let builder = try transcript("listen-nc.btsnoop")
        let logged = String(decoding: try fixture("listen-nc.jsonl"), as: UTF8.self).split(separator: "\n")
        let loggedAdded = logged.filter { $0.contains("\"event\":\"added\"") }.count
        let captured = events(builder, "notificationSource").compactMap { member($0.json, "notificationSource", "event") }
        #expect(captured.filter { $0 == .string("added") }.count == loggedAdded)
        // Every title the consumer logged is in a Data Source response of the capture, in the same order.
        let loggedTitles = logged.filter { $0.contains("\"event\":\"attributes\"") }.compactMap { line -> String? in
            guard let range = line.range(of: "{\"id\":\"title\",\"value\":\"") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        let capturedTitles = events(builder, "dataSource").compactMap { entry -> String? in
            guard case .array(let attributes)? = member(entry.json, "response", "attributes") else { return nil }
            for attribute in attributes where member(attribute, "id") == .string("title") {
                if case .string(let title)? = member(attribute, "value") { return title }
            }
            return nil
        }
        #expect(!loggedTitles.isEmpty)
        #expect(Array(capturedTitles.prefix(loggedTitles.count)) == loggedTitles)
        // The provider answers every write before the Data Source response it causes.
        let ordered = builder.entries.filter { ["controlPoint", "controlPointResult", "dataSource"].contains($0.event) }.map(\.event)
        for (index, event) in ordered.enumerated() where event == "dataSource" {
            #expect(index >= 2 && ordered[index - 1] == "controlPointResult", "\(ordered)")
        }
    }

    /// The NP's capture of Bumble's AncsClient: encryption refused before
    /// pairing, long writes (MTU 23) decoded, both actions, two 0xA2.
    @Test func theNPCaptureOfBumblesClient() throws {
        let builder = try transcript("provide-ancsclient-mtu23.btsnoop")
        let results = events(builder, "controlPointResult").map { member($0.json, "error") }
        #expect(results.first == .integer(0x0F))
        #expect(results.filter { $0 == .integer(0xA2) }.count == 2)
        let commands = events(builder, "controlPoint").compactMap { member($0.json, "command", "kind") }
        #expect(commands.contains(.string("getAppAttributes")))  // 22 bytes: a long write at MTU 23
        #expect(commands.filter { $0 == .string("performNotificationAction") }.count == 3)
        let responses = events(builder, "dataSource")
        #expect(responses.count == 6)
        #expect(events(builder, "dataSourceError").isEmpty)
        let subscriptions = events(builder, "subscribe").compactMap { member($0.json, "characteristic") }
        #expect(subscriptions == [.string("notificationSource"), .string("dataSource")])
        #expect(builder.entries.first?.event == "connected")
        #expect(builder.entries.last?.event == "disconnected")
        #expect(builder.entries.allSatisfy { !$0.line.isEmpty })
    }
}
