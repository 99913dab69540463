#if os(Linux)
import ANCS
import ANCSDBus
import ANCSDesktop
import Foundation
import Synchronization
import Testing

/// The phone's player as an MPRIS player on a private session bus: what a
/// D-Bus client reads and what its calls become, then the same through
/// `playerctl` (Debian's package; skipped where it is not installed).
@Suite("MPRIS player on a private session bus", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")))
struct MPRISPlayerTests {
    static let title = "Ça plane pour moi — a title longer than one notification"

    static func playing(_ state: PlaybackState = .playing) -> NowPlaying {
        var playing = NowPlaying()
        playing.title = AttributeValue(title)
        playing.artist = AttributeValue("Émilie Sørensen")
        playing.album = AttributeValue("Nordlys")
        playing.duration = 215.5
        playing.volume = 0.5
        playing.queueIndex = 2
        playing.playback = PlaybackInfo(state: state, rate: state == .playing ? 1 : 0, elapsed: 12)
        return playing
    }

    @Test("properties as MPRIS names them, methods as AMS commands, changes signalled")
    func throughTheBus() async throws {
        let bus = try PrivateBus()
        let asked = Mutex<[RemoteCommandID]>([])
        let player = try await MPRISPlayer.start(name: "test", bus: .address(bus.address)) { command in
            asked.withLock { $0.append(command) }
        }
        defer { player.close() }
        let client = try bus.connect()
        defer { client.close() }
        let signals = try await client.signals([DBusMatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                                              path: MPRISPlayer.objectPath)])
        player.update(Self.playing(), elapsed: 12, supported: [.play, .pause, .togglePlayPause, .nextTrack])

        let reply = try await client.call(destination: player.busName, path: MPRISPlayer.objectPath,
                                          interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                                          [.string("org.mpris.MediaPlayer2.Player")], timeout: .seconds(5))
        let properties = try #require(reply.first?.dictionary)
        #expect(properties["PlaybackStatus"]?.string == "Playing")
        #expect(properties["CanGoNext"]?.bool == true)
        #expect(properties["CanGoPrevious"]?.bool == false)  // not in the player's list
        #expect(properties["CanSeek"]?.bool == false)
        let metadata = try #require(properties["Metadata"]?.dictionary)
        #expect(metadata["xesam:title"]?.string == Self.title)
        #expect(metadata["xesam:artist"]?.strings == ["Émilie Sørensen"])
        #expect(metadata["mpris:length"]?.integer == 215_500_000)
        #expect(metadata["mpris:trackid"]?.string == "/org/ancs/track/2")

        // The update was signalled; a change of state only names what changed.
        var received = signals.makeAsyncIterator()
        let first = try #require(await received.next())
        #expect(first.arguments.first?.string == "org.mpris.MediaPlayer2.Player")
        player.update(Self.playing(.paused), elapsed: 12, supported: [.play, .pause, .togglePlayPause, .nextTrack])
        let second = try #require(await received.next())
        #expect(second.arguments.dropFirst().first?.dictionary.map { Set($0.keys) } == ["PlaybackStatus"])

        for member in ["Next", "PlayPause", "Stop"] {
            _ = try await client.call(destination: player.busName, path: MPRISPlayer.objectPath,
                                      interface: "org.mpris.MediaPlayer2.Player", member: member, timeout: .seconds(5))
        }
        #expect(asked.withLock { $0 } == [.nextTrack, .togglePlayPause, .pause])
        await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: player.busName, path: MPRISPlayer.objectPath,
                                      interface: "org.mpris.MediaPlayer2.Player", member: "Seek", [.int64(1_000_000)], timeout: .seconds(5))
        }
        // A second player under the same name is refused, with the reason.
        await #expect { _ = try await MPRISPlayer.start(name: "test", bus: .address(bus.address)) { _ in } } throws: { error in
            "\(error)".contains("taken")
        }
    }

    @Test("playerctl reads the track and its commands reach the phone", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/playerctl")))
    func playerctl() async throws {
        let bus = try PrivateBus()
        let asked = Mutex<[RemoteCommandID]>([])
        let player = try await MPRISPlayer.start(name: "ancs", bus: .address(bus.address)) { command in
            asked.withLock { $0.append(command) }
        }
        defer { player.close() }
        player.update(Self.playing(), elapsed: 12, supported: nil)
        func playerctl(_ arguments: String...) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/playerctl")
            process.arguments = ["--player", "ancs"] + arguments
            process.environment = ["DBUS_SESSION_BUS_ADDRESS": bus.address]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try playerctl("metadata", "xesam:title") == Self.title)
        #expect(try playerctl("metadata", "xesam:artist") == "Émilie Sørensen")
        #expect(try playerctl("status") == "Playing")
        _ = try playerctl("next")
        _ = try playerctl("play-pause")
        #expect(asked.withLock { $0 } == [.nextTrack, .togglePlayPause])
    }
}

#endif
