#if os(Linux)
import ANCS
import ANCSDBus
import Synchronization

/// The phone's player as an MPRIS player (`org.mpris.MediaPlayer2` on the
/// session bus): the desktop's media keys, `playerctl` and the desktop's
/// widgets show what the phone plays and control it. What it shows comes
/// from `update`; what the person asks for goes to `perform` as an AMS
/// remote command (`PlayPause` is Toggle Play/Pause, `Stop` is Pause).
///
/// The bus name is `org.mpris.MediaPlayer2.<name>`; the object
/// `/org/mpris/MediaPlayer2` answers `org.mpris.MediaPlayer2`,
/// `org.mpris.MediaPlayer2.Player`, `org.freedesktop.DBus.Properties` and
/// `org.freedesktop.DBus.Introspectable`, and emits `PropertiesChanged`
/// when what it shows changes. Seeking, positions and track lists are not
/// AMS's to give: `CanSeek` is false, and those calls are answered with
/// `NotSupported`.
public final class MPRISPlayer: Sendable {
    public static let objectPath = "/org/mpris/MediaPlayer2"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The bus name taken: `org.mpris.MediaPlayer2.<name>`.
    public let busName: String
    private let bus: DBusConnection
    private let identity: String
    private let perform: @Sendable (RemoteCommandID) -> Void
    private let shown = Mutex(Shown())

    /// What the player shows now, in MPRIS's terms.
    struct Shown: Equatable {
        var status = "Stopped"
        var metadata: [String: DBusValue] = [:]
        var volume = 0.0
        var position: Int64 = 0
        var supported: Set<UInt8> = []
    }

    /// Connects to `bus`, takes the name and serves the player. Throws when
    /// there is no bus or the name is taken (another `ancs listen`).
    public static func start(name: String = "ancs", identity: String = "iPhone (ancs listen)",
                             bus: DBusConnection.Bus = .session,
                             perform: @escaping @Sendable (RemoteCommandID) -> Void) async throws(DBusError) -> MPRISPlayer {
        let connection = try DBusConnection(bus)
        let player = MPRISPlayer(connection, busName: "\(root).\(name)", identity: identity, perform: perform)
        connection.export(objectPath) { [weak player] call in
            guard let player else { return call.fail("org.freedesktop.DBus.Error.UnknownObject", "the player is closed") }
            player.handle(call)
        }
        let owned: Bool
        do {
            owned = try await connection.requestName(player.busName)
        } catch {
            connection.close()
            throw error
        }
        guard owned else {
            connection.close()
            throw DBusError(name: "org.freedesktop.DBus.Error.AddressInUse", message: "\(player.busName) is taken on the bus")
        }
        return player
    }

    private init(_ bus: DBusConnection, busName: String, identity: String, perform: @escaping @Sendable (RemoteCommandID) -> Void) {
        self.bus = bus
        self.busName = busName
        self.identity = identity
        self.perform = perform
    }

    public func close() { bus.close() }

    /// Shows what the phone plays now; a change is signalled with `PropertiesChanged`.
    /// `supported`: the player's commands (nil: not told yet, taken as the common five).
    public func update(_ playing: NowPlaying, elapsed: Double?, supported: [RemoteCommandID]?) {
        let next = Self.shown(playing, elapsed: elapsed, supported: supported)
        let changed: [String: DBusValue] = shown.withLock { shown in
            defer { shown = next }
            var changed: [String: DBusValue] = [:]
            if next.status != shown.status { changed["PlaybackStatus"] = .string(next.status) }
            if next.metadata != shown.metadata { changed["Metadata"] = .properties(next.metadata) }
            if next.volume != shown.volume { changed["Volume"] = .double(next.volume) }
            if next.supported != shown.supported {
                for (key, value) in Self.capabilities(next.supported) { changed[key] = value }
            }
            return changed
        }
        guard !changed.isEmpty else { return }
        bus.emit(path: Self.objectPath, interface: Self.propertiesInterface, member: "PropertiesChanged",
                 [.string(Self.player), .properties(changed), .strings([])])
    }

    static func shown(_ playing: NowPlaying, elapsed: Double?, supported: [RemoteCommandID]?) -> Shown {
        var shown = Shown()
        switch playing.playback?.state {
        case .playing?, .rewinding?, .fastForwarding?: shown.status = "Playing"
        case .paused?: shown.status = "Paused"
        default: shown.status = "Stopped"
        }
        var metadata: [String: DBusValue] = [:]
        if playing.title != nil || playing.artist != nil {
            // One track at a time: its id follows the queue's index.
            metadata["mpris:trackid"] = .objectPath("/org/ancs/track/\(playing.queueIndex ?? 0)")
        }
        if let title = playing.title?.string { metadata["xesam:title"] = .string(title) }
        if let artist = playing.artist?.string, !artist.isEmpty { metadata["xesam:artist"] = .strings([artist]) }
        if let album = playing.album?.string, !album.isEmpty { metadata["xesam:album"] = .string(album) }
        if let duration = playing.duration, duration.isFinite, duration > 0 {
            metadata["mpris:length"] = .int64(Int64(duration * 1_000_000))
        }
        shown.metadata = metadata
        shown.volume = playing.volume ?? 0
        shown.position = Int64(max(elapsed ?? 0, 0) * 1_000_000)
        let common: [RemoteCommandID] = [.play, .pause, .togglePlayPause, .nextTrack, .previousTrack]
        shown.supported = Set((supported ?? common).map(\.rawValue))
        return shown
    }

    static func capabilities(_ supported: Set<UInt8>) -> [String: DBusValue] {
        func has(_ command: RemoteCommandID) -> Bool { supported.contains(command.rawValue) }
        return [
            "CanGoNext": .boolean(has(.nextTrack)),
            "CanGoPrevious": .boolean(has(.previousTrack)),
            "CanPlay": .boolean(has(.play) || has(.togglePlayPause)),
            "CanPause": .boolean(has(.pause) || has(.togglePlayPause)),
        ]
    }

    private func properties(of interface: String) -> [String: DBusValue]? {
        switch interface {
        case Self.root:
            return ["Identity": .string(identity), "CanQuit": .boolean(false), "CanRaise": .boolean(false),
                    "HasTrackList": .boolean(false), "SupportedUriSchemes": .strings([]), "SupportedMimeTypes": .strings([])]
        case Self.player:
            let shown = shown.withLock { $0 }
            var values: [String: DBusValue] = [
                "PlaybackStatus": .string(shown.status), "Metadata": .properties(shown.metadata),
                "Volume": .double(shown.volume), "Position": .int64(shown.position), "Rate": .double(1),
                "MinimumRate": .double(1), "MaximumRate": .double(1), "CanSeek": .boolean(false), "CanControl": .boolean(true),
            ]
            for (key, value) in Self.capabilities(shown.supported) { values[key] = value }
            return values
        default:
            return nil
        }
    }

    private func handle(_ call: DBusIncomingCall) {
        switch (call.interface, call.member) {
        case (Self.propertiesInterface, "Get"):
            guard let interface = call.arguments.first?.string, let name = call.arguments.dropFirst().first?.string,
                  let value = properties(of: interface)?[name] else {
                return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "no such property")
            }
            call.reply([.variant(value)])
        case (Self.propertiesInterface, "GetAll"):
            guard let interface = call.arguments.first?.string, let values = properties(of: interface) else {
                return call.reply([.properties([:])])
            }
            call.reply([.properties(values)])
        case (Self.propertiesInterface, "Set"):
            call.fail("org.freedesktop.DBus.Error.PropertyReadOnly", "the phone's player is changed by its commands")
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            call.reply([.string(Self.introspection)])
        case (Self.root, "Raise"), (Self.root, "Quit"):
            call.reply()
        case (Self.player, let member):
            let commands: [String: RemoteCommandID] = [
                "Play": .play, "Pause": .pause, "PlayPause": .togglePlayPause, "Stop": .pause,
                "Next": .nextTrack, "Previous": .previousTrack,
            ]
            guard let command = commands[member] else {
                return call.fail("org.freedesktop.DBus.Error.NotSupported", "\(member) is not an AMS command")
            }
            call.reply()
            perform(command)
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.interface).\(call.member)")
        }
    }

    static let introspection = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" \
    "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
    <node>
      <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg type="s" direction="out"/></method></interface>
      <interface name="org.freedesktop.DBus.Properties">
        <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
        <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
        <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
        <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
      </interface>
      <interface name="org.mpris.MediaPlayer2">
        <method name="Raise"/><method name="Quit"/>
        <property name="CanQuit" type="b" access="read"/><property name="CanRaise" type="b" access="read"/>
        <property name="HasTrackList" type="b" access="read"/><property name="Identity" type="s" access="read"/>
        <property name="SupportedUriSchemes" type="as" access="read"/><property name="SupportedMimeTypes" type="as" access="read"/>
      </interface>
      <interface name="org.mpris.MediaPlayer2.Player">
        <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/><method name="Stop"/><method name="Play"/>
        <method name="Seek"><arg type="x" direction="in"/></method>
        <method name="SetPosition"><arg type="o" direction="in"/><arg type="x" direction="in"/></method>
        <method name="OpenUri"><arg type="s" direction="in"/></method>
        <signal name="Seeked"><arg type="x"/></signal>
        <property name="PlaybackStatus" type="s" access="read"/><property name="Rate" type="d" access="read"/>
        <property name="Metadata" type="a{sv}" access="read"/><property name="Volume" type="d" access="read"/>
        <property name="Position" type="x" access="read"/><property name="MinimumRate" type="d" access="read"/>
        <property name="MaximumRate" type="d" access="read"/><property name="CanGoNext" type="b" access="read"/>
        <property name="CanGoPrevious" type="b" access="read"/><property name="CanPlay" type="b" access="read"/>
        <property name="CanPause" type="b" access="read"/><property name="CanSeek" type="b" access="read"/>
        <property name="CanControl" type="b" access="read"/>
      </interface>
    </node>
    """
}

#endif
