// AMS and CTS in a capture: the discovery names the characteristics, and
// writes, notifications and reads (a long read of a cut title included)
// become transcript lines, as ANCS's do.

import Testing
import ANCS
import ANCSFormat
@testable import ANCSCapture

@Suite struct MediaCaptureTests {
    /// An ATT PDU on connection 1, as the accessory (the GATT client) captured it.
    static func att(_ pdu: [UInt8], _ direction: BTSnoopRecord.Direction, _ number: Int) -> BTSnoopRecord {
        let l2cap = [UInt8(pdu.count & 0xFF), UInt8(pdu.count >> 8), 4, 0] + pdu
        return BTSnoopRecord(number: number, type: .acl, direction: direction, timestamp: UInt64(number) * 1000,
                             payload: [0x01, 0x20, UInt8(l2cap.count), 0] + l2cap)
    }

    static func le(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    static func declaration128(_ declaration: Int, _ uuid: BluetoothUUID) -> [UInt8] {
        le(declaration) + [0x1A] + le(declaration + 1) + uuid.bytes.reversed()
    }

    static let title = "Bohemian Rhapsody (Remastered 2011)"  // 35 bytes: two read parts at MTU 23

    static var capture: [BTSnoopRecord] {
        var pdus: [([UInt8], BTSnoopRecord.Direction)] = [
            // Discovery: AMS (128-bit UUIDs), CTS (16-bit), the CCCDs.
            ([0x09, 21] + declaration128(0x30, AMSUUID.remoteCommand) + declaration128(0x33, AMSUUID.entityUpdate)
                + declaration128(0x36, AMSUUID.entityAttribute), .received),
            ([0x09, 7] + le(0x40) + [0x12] + le(0x41) + le(0x2A2B) + le(0x43) + [0x02] + le(0x44) + le(0x2A0F), .received),
            ([0x05, 1] + le(0x32) + le(0x2902) + le(0x35) + le(0x2902) + le(0x42) + le(0x2902), .received),
            // Entity Update on, a registration, a cut title.
            ([0x12] + le(0x35) + [1, 0], .sent), ([0x13], .received),
            ([0x12] + le(0x34) + [2, 0, 1, 2, 3], .sent), ([0x13], .received),
            ([0x1B] + le(0x34) + [2, 2, 1] + Array(title.utf8.prefix(17)), .received),
            // The whole title: selected, then read in two parts (22 bytes, then the rest).
            ([0x12] + le(0x37) + [2, 2], .sent), ([0x13], .received),
            ([0x0A] + le(0x37), .sent), ([0x0B] + Array(title.utf8.prefix(22)), .received),
            ([0x0C] + le(0x37) + le(22), .sent), ([0x0D] + Array(title.utf8.dropFirst(22)), .received),
            // A command refused, the supported list.
            ([0x12] + le(0x31) + [9], .sent), ([0x01, 0x12] + le(0x31) + [0xA1], .received),
            ([0x1B] + le(0x31) + [0, 1, 2], .received),
            // CTS: the time and the zone read, then a time notified.
            ([0x0A] + le(0x41), .sent), ([0x0B, 0xEA, 0x07, 0x0B, 0x1C, 0x0E, 0x35, 0x07, 0x06, 0x80, 0x02], .received),
            ([0x0A] + le(0x44), .sent), ([0x0B, 0x04, 0x00], .received),
            ([0x12] + le(0x42) + [1, 0], .sent), ([0x13], .received),
            ([0x1B] + le(0x41) + [0xEA, 0x07, 0x0B, 0x1C, 0x0F, 0x00, 0x00, 0x06, 0x00, 0x01], .received),
            // Malformed: an Entity Update of two bytes, a Current Time of three.
            ([0x1B] + le(0x34) + [2, 2], .received),
            ([0x1B] + le(0x41) + [1, 2, 3], .received),
        ]
        pdus.append(([0x1B] + le(0x34) + [0, 1, 0] + Array("1,1.0,12.5".utf8), .received))
        return pdus.enumerated().map { att($0.element.0, $0.element.1, $0.offset + 1) }
    }

    @Test func theDiscoveryNamesEveryCharacteristic() {
        let builder = TranscriptBuilder.transcript(of: Self.capture)
        let handles = builder.mediaHandles
        #expect(handles.characteristic(at: 0x31) == .ams(.remoteCommand))
        #expect(handles.characteristic(at: 0x34) == .ams(.entityUpdate))
        #expect(handles.characteristic(at: 0x37) == .ams(.entityAttribute))
        #expect(handles.characteristic(at: 0x41) == .cts(.currentTime))
        #expect(handles.characteristic(at: 0x44) == .cts(.localTimeInformation))
        #expect(handles.cccd(at: 0x32) == .ams(.remoteCommand))
        #expect(handles.cccd(at: 0x35) == .ams(.entityUpdate))
        #expect(handles.cccd(at: 0x42) == .cts(.currentTime))
        #expect(builder.handles.notificationSource == nil)  // no ANCS in this capture
    }

    @Test func everyPDUBecomesALine() {
        let lines = TranscriptBuilder.transcript(of: Self.capture).entries.map { $0.event + ": " + $0.text }
        #expect(lines == [
            "subscribe: AMS Entity Update notifications on",
            "mediaResult: AMS Entity Update CCCD: written",
            "amsRegistration: AMS Entity Update: register track artist, album, title, duration",
            "mediaResult: AMS Entity Update: written",
            "amsEntityUpdate: AMS title = \"Bohemian Rhapsody\" (truncated)",
            "amsSelection: AMS Entity Attribute: select title",
            "mediaResult: AMS Entity Attribute: written",
            "amsEntityAttribute: AMS Entity Attribute: title = \"\(Self.title)\" (35 bytes)",
            "amsCommand: AMS Remote Command: skipForward",
            "mediaResult: AMS Remote Command: error Invalid Command (0xA1)",
            "amsSupportedCommands: AMS supported commands: play, pause, togglePlayPause",
            "ctsCurrentTime: CTS Current Time: 2026-11-28 14:53:07",
            "ctsLocalTimeInformation: CTS Local Time Information: UTC+01:00",
            "subscribe: CTS Current Time notifications on",
            "mediaResult: CTS Current Time CCCD: written",
            "ctsCurrentTime: CTS Current Time (notified): 2026-11-28 15:00:00",
            "mediaError: AMS Entity Update: undecodable 0202: offset 2: an Entity Update notification is at least 3 bytes, got 2",
            "mediaError: CTS Current Time: undecodable 010203: offset 3: a Current Time value is exactly 10 bytes, got 3",
            "amsEntityUpdate: AMS playbackInfo = \"1,1.0,12.5\"",
        ])
    }

    @Test func theJSONCarriesTheFields() {
        let entries = TranscriptBuilder.transcript(of: Self.capture).entries
        let read = entries.first { $0.event == "amsEntityAttribute" }
        #expect(read?.json.rendered.contains("\"attribute\":\"title\",\"value\":\"\(Self.title)\"") == true)
        let zone = entries.first { $0.event == "ctsLocalTimeInformation" }
        #expect(zone?.json.rendered.contains("\"utcOffsetMinutes\":60,\"timeZone\":4,\"dstOffset\":0") == true)
        let update = entries.first { $0.event == "amsEntityUpdate" }
        #expect(update?.json.rendered.contains("\"truncated\":true") == true)
    }
}
