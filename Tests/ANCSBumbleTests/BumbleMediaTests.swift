import ANCS
@testable import ANCSBumble
import ANCSRuntime
import Foundation
import Testing

@Suite("Bumble line protocol: AMS and CTS")
struct BumbleMediaLineTests {
    func parse(_ line: String) -> BumbleHostLine? { BumbleHostLine(line.split(separator: " "), line: line) }

    @Test("the consume role's media lines parse to their cases; a malformed one to nil")
    func mediaLines() {
        let link = LinkInfo(mtu: 23, peer: "AA:BB", isEncrypted: true, isBonded: false)
        #expect(parse("link-up 23 AA:BB 1 0") == .linkUp(link, media: nil))
        #expect(parse("link-up 23 AA:BB 1 0 ams,cts") == .linkUp(link, media: BumbleMediaServices(ams: true, cts: true)))
        #expect(parse("link-up 23 AA:BB 1 0 cts") == .linkUp(link, media: BumbleMediaServices(ams: false, cts: true)))
        #expect(parse("link-up 23 AA:BB 1 0 -") == .linkUp(link, media: BumbleMediaServices(ams: false, cts: false)))
        #expect(parse("notify eu 020200") == .mediaNotification(.ams(.entityUpdate), [2, 2, 0]))
        #expect(parse("notify ct -") == .mediaNotification(.cts(.currentTime), []))
        #expect(parse("media-changed ams") == .mediaChanged(BumbleMediaServices(ams: true, cts: false)))
        #expect(parse("result 4 ok 6869") == .result(id: 4, .value([0x68, 0x69])))
        #expect(parse("result 4 ok") == .result(id: 4, .value([])))
        #expect(parse("result 4 att 0xA1") == .result(id: 4, .attError(0xA1)))
        #expect(parse("result 4 failed") == .result(id: 4, .transportFailure))
        for bad in ["link-up 23 AA:BB 1 0 ams,xyz", "link-up 23 AA:BB 1 0 ,", "notify zz 00", "notify eu 0g", "media-changed", "media-changed anc"] {
            #expect(parse(bad) == nil, "\(bad)")
        }
    }

    @Test func readResults() {
        #expect(parseReadResult(["ok", "00ff"]) == .value([0, 0xFF]))
        #expect(parseReadResult(["ok", "-"]) == .value([]))
        #expect(parseReadResult(["ok", "0"]) == .transportFailure)  // not hex: no value to trust
        #expect(parseReadResult(["att", "0xA2"]) == .attError(0xA2))
        #expect(parseReadResult(["failed"]) == .transportFailure)
    }

    @Test("every characteristic's short name reads back; the UUIDs go to the host in its order")
    func names() {
        let all: [MediaCharacteristic] = AMSCharacteristic.allCases.map { .ams($0) } + CTSCharacteristic.allCases.map { .cts($0) }
        #expect(all.map(\.bumbleName) == ["rc", "eu", "ea", "ct", "lt"])
        for characteristic in all { #expect(MediaCharacteristic(bumbleName: Substring(characteristic.bumbleName)) == characteristic) }
        #expect(MediaCharacteristic(bumbleName: "ns") == nil)
        let uuids = MediaCharacteristic.bumbleUUIDArgument.split(separator: ",").map(String.init)
        #expect(uuids == [AMSUUID.service, AMSUUID.remoteCommand, AMSUUID.entityUpdate, AMSUUID.entityAttribute,
                          CTSUUID.service, CTSUUID.currentTime, CTSUUID.localTimeInformation].map(\.description))
        var options = BumbleHostOptions(transport: "none")
        #expect(!options.arguments(role: "consume").contains("--media-uuids"))
        options.media = true
        #expect(options.arguments(role: "consume").contains("--media-uuids"))
        #expect(options.arguments(role: "serve").contains("--media-uuids"))
    }
}

/// The transport's side of the line protocol against a scripted host (plain
/// Python, no Bumble): what `MediaClient` asks becomes the documented lines,
/// and the host's answers (values, ATT errors, notifications, the link's
/// end) reach the engines.
@Suite("Bumble transport: AMS and CTS against a scripted host", .enabled(if: BumbleTestEnvironment.anyPython != nil, "needs a Python"))
struct BumbleMediaScriptedHostTests {
    /// A consume host that has AMS and CTS on its one link: it answers every
    /// operation, cuts the title in its notification (the whole of it read
    /// from Entity Attribute), refuses every Remote Command but next track with 0xA1, logs
    /// each line it is sent on stderr, and ends the link after `next`.
    static let script = #"""
    import sys
    def out(*fields):
        print(' '.join(str(f) for f in fields), flush=True)
    TITLE = 'Süßes Lied, das länger ist als eine Benachrichtigung'.encode()
    out('ancs-bumble 2 consume')
    out('ready F1:F1:F1:F1:F1:F1 -')
    out('link-up 23 AA:BB:CC:DD:EE:FF 1 1 ams,cts')
    selected = None
    for line in sys.stdin:
        sys.stderr.write('got ' + line)
        sys.stderr.flush()
        f = line.split()
        verb, rid = f[0], f[1]
        if verb in ('subscribe', 'unsubscribe'):
            out('result', rid, 'ok')
            if verb == 'subscribe' and f[2] == 'rc':
                out('notify rc 0001020304')
        elif verb == 'write-to' and f[2] == 'eu':
            value = bytes.fromhex(f[3])
            out('result', rid, 'ok')
            if value[0] == 2:
                out('notify eu', (bytes([2, 2, 1]) + TITLE[:14]).hex())
                out('notify eu', (bytes([2, 0, 0]) + b'Die Band').hex())
            if value[0] == 0:
                out('notify eu', (bytes([0, 1, 0]) + b'1,1.0,12.5').hex())
        elif verb == 'write-to' and f[2] == 'ea':
            selected = f[3]
            out('result', rid, 'ok')
        elif verb == 'read' and f[2] == 'ea':
            out('result', rid, 'ok', TITLE.hex() if selected == '0202' else '-')
        elif verb == 'read' and f[2] == 'ct':
            out('result', rid, 'ok', 'ea070b1c0e3507060000')
        elif verb == 'read' and f[2] == 'lt':
            out('result', rid, 'ok', '0400')
        elif verb == 'write-to' and f[2] == 'rc':
            if f[3] == '03':
                out('result', rid, 'ok')
                out('link-down')  # at once: the answer still reaches the engine first
            else:
                out('result', rid, 'att', '0xA1')
        else:
            out('result', rid, 'failed')
    """#

    /// The scripted host behind a transport, a `MediaClient` running over it
    /// and its outputs; closed, and the client's run awaited, after `body`.
    func withScriptedHost(_ body: (BumbleClientTransport, MediaClient, EventLog<MediaClientOutput>) async throws -> Void) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-media-host-\(UInt32.random(in: 0...UInt32.max)).py")
        try Data(Self.script.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let python = BumbleEnvironment(python: try #require(BumbleTestEnvironment.anyPython), script: file.path)
        var options = BumbleHostOptions(transport: "none", startTimeout: .seconds(20))
        options.media = true
        let transport = try await BumbleClientTransport.start(options, environment: python)
        defer { transport.close() }
        let media = MediaClient(transport: transport)
        let run = Task { try await media.run() }
        let outputs = EventLog<MediaClientOutput>()
        let reader = Task { for await output in media.events { outputs.append(output) } }
        try await body(transport, media, outputs)
        transport.close()
        try await withTimeout(.seconds(20), "run() after close") { try await run.value }
        await reader.value
    }

    @Test("the consumer's stream ending (its client stopped first) leaves the host to the media client, still leaving")
    func hostOutlivesTheConsumersStream() async throws {
        try await withScriptedHost { transport, media, outputs in
            let ancs = Task { for try await _ in transport.events {} }
            _ = try await outputs.wait(timeout: .seconds(20), "AMS ready") { all in all.contains(.ams(.ready)) ? true : nil }
            // The consumer's run ends first (listen stops both; ANCS's unsubscriptions are quicker).
            ancs.cancel()
            _ = await ancs.result
            try await Task.sleep(for: .milliseconds(300))
            // The host still answers the media client: a command goes through.
            #expect(await media.perform(.nextTrack) == nil)
        }
    }

    @Test("now playing, a cut title read whole, the clock and zone, a command, the link's end")
    func mediaClientOverTheLines() async throws {
        try await withScriptedHost { transport, media, outputs in
            let ancs = Task { for try await _ in transport.events {} }  // the consumer's stream, read as listen's client would
            defer { ancs.cancel() }

            let title = "Süßes Lied, das länger ist als eine Benachrichtigung"
            _ = try await outputs.wait(timeout: .seconds(20), "the whole title") { all in
                all.contains(.ams(.updated(.title, AttributeValue(title), isTruncated: false))) ? true : nil
            }
            _ = try await outputs.wait(timeout: .seconds(20), "the zone") { all in
                all.contains { if case .cts(.localTimeInformation) = $0 { true } else { false } } ? true : nil
            }
            #expect(await media.nowPlaying.artist == AttributeValue("Die Band"))
            #expect(await media.nowPlaying.playback?.state == .playing)
            #expect(await media.localTimeInformation?.utcOffsetMinutes == 60)
            let time = try #require(await media.phoneTime)
            #expect(time.date.iso8601(in: LocalTimeInformation(utcOffsetMinutes: 60))?.hasPrefix("2026-11-28T14:53:") == true)

            // Not in the player's list (0…4): refused without a write.
            #expect(await media.perform(.likeTrack) == .unsupported)
            // In the list but refused by the phone: its ATT error.
            #expect(await media.perform(.togglePlayPause) == .attError(0xA1))
            // Performed; then the host ends the link.
            let next = await media.perform(.nextTrack)
            #expect(next == nil)
            _ = try await outputs.wait(timeout: .seconds(20), "the session's end") { all in
                all.contains(.ams(.ended(.linkDown))) ? true : nil
            }
        }
    }
}
