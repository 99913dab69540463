import ANCS
@testable import ANCSCapture
import Foundation
import Testing

/// BlueZ's monitor format (btsnoop datalink 2001, `btmon -w`):
/// listen-nc-monitor.btsnoop is listen-nc.btsnoop's HCI traffic rewritten by
/// make_monitor_fixture.py, with the records a monitor capture has besides
/// HCI (system notes, new/open/delete index, index info, logs, management
/// traffic, an unknown opcode) and a second controller whose link has the
/// same handle.
@Suite("btmon captures (Linux monitor format)")
struct MonitorCaptureTests {
    @Test func readsTheHCIPacketsOfEveryControllerAndSkipsTheRest() throws {
        let h4 = try BTSnoop.parse(try fixture("listen-nc.btsnoop"))
        let monitor = try BTSnoop.parse(try fixture("listen-nc-monitor.btsnoop"))
        let hci0 = monitor.filter { $0.controller == 0 }
        let hci1 = monitor.filter { $0.controller == 1 }
        // hci0: the same packets, types and directions as the H4 capture.
        #expect(hci0.count == h4.count)
        for (record, original) in zip(hci0, h4) {
            #expect(record.type == original.type && record.direction == original.direction)
            #expect(record.payload == original.payload && record.timestamp == original.timestamp)
        }
        // hci1: its connection, an MTU exchange each way, its disconnection; nothing else.
        #expect(hci1.map(\.type) == [.event, .acl, .acl, .event])
        #expect(hci1.map(\.direction) == [.received, .sent, .received, .received])
        #expect(!monitor.contains { $0.controller != 0 && $0.controller != 1 })
        // Record numbers are places in the file, the skipped records counted:
        // 6 before the first HCI packet, 4 more before the fourth.
        #expect(hci0.first?.number == 7)
        #expect(hci0[3].number == 14)
        #expect(zip(monitor, monitor.dropFirst()).allSatisfy { $0.number < $1.number })
    }

    @Test func theTranscriptOfEachControllerIsItsOwn() throws {
        let h4 = try transcript("listen-nc.btsnoop")
        let monitor = try transcript("listen-nc-monitor.btsnoop")
        // hci0's transcript is the H4 capture's, entry for entry, time for time.
        let hci0 = monitor.entries.filter { ($0.connection ?? 0) < 4096 }
        #expect(hci0.map(\.event) == h4.entries.map(\.event))
        #expect(hci0.map(\.line) == h4.entries.map(\.line))
        #expect(monitor.handles == h4.handles)
        // hci1's link (handle 1 as well) is a connection of its own, 1 × 4096 + 1.
        let hci1 = monitor.entries.filter { ($0.connection ?? 0) >= 4096 }
        #expect(hci1.map(\.event) == ["connected", "mtuRequest", "mtuResponse", "disconnected"])
        #expect(hci1.allSatisfy { $0.connection == 4097 })
        #expect(hci1.first?.text == "connected to F1:F1:F1:F1:F1:F1 as central")
        // The notifications of the session are all there.
        let titles = monitor.entries.filter { $0.event == "dataSource" }.map(\.text)
        #expect(titles.contains { $0.contains("Team stand-up") })
        #expect(events(monitor, "notificationSource").count == events(h4, "notificationSource").count)
        #expect(events(monitor, "notificationSource").count > 2)
    }

    @Test func aMonitorHeaderIsNoLongerRefused() throws {
        // Only the header and a System Note: no HCI, no error.
        var bytes = Array("btsnoop\0".utf8) + [0, 0, 0, 1, 0, 0, 0x07, 0xD1]
        let note = Array("Bluetooth monitor ver 5.66\0".utf8)
        bytes += [0, 0, 0, UInt8(note.count), 0, 0, 0, UInt8(note.count), 0xFF, 0xFF, 0, 12, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + note
        #expect(try BTSnoop.parse(bytes).isEmpty)
        bytes[15] = 0xD2  // 2002: not a datalink anyone writes
        #expect { try BTSnoop.parse(bytes) } throws: { "\($0)".contains("2001 (Linux monitor, btmon)") }
    }
}
