// AMSServer — the phone's side of the Apple Media Service: a media player
// model that answers as an iPhone does, sans-I/O, for `ancs provide` and
// for tests of accessories.
//
// Per link: which of the two notifying characteristics are on, what each
// entity is registered for, and the attribute Entity Attribute selected.
//   - A registration replaces the entity's last one, and the registered
//     attributes' values are notified at once.
//   - A change to the player (`update`, a command performed) notifies each
//     registered attribute whose value changed, cut to the link's MTU and
//     flagged truncated when it does not fit; Remote Command's list is
//     notified when it changes.
//   - Entity Update and Entity Attribute writes before Entity Update's
//     notifications are on are refused 0xA0 Invalid State; malformed ones
//     0xA1 Invalid Command; a read of an empty value 0xA2 Absent Attribute.

/// One track of the player's queue.
public struct MediaTrack: Hashable, Sendable {
    public var artist: String
    public var album: String
    public var title: String
    /// Seconds.
    public var duration: Double

    public init(artist: String, album: String = "", title: String, duration: Double) {
        self.artist = artist
        self.album = album
        self.title = title
        self.duration = duration
    }
}

/// The player an `AMSServer` serves: the values of every attribute.
public struct MediaPlayer: Hashable, Sendable {
    public var name: String
    public var state: PlaybackState
    /// The rate while playing (1 normal speed).
    public var rate: Double
    /// Seconds into the track at `elapsedTold`.
    public var elapsed: Double
    var elapsedTold = Timestamp.zero
    /// 0 to 1.
    public var volume: Double
    public var tracks: [MediaTrack]
    /// The playing track's index in `tracks`.
    public var index: Int
    public var shuffleMode: QueueMode
    public var repeatMode: QueueMode
    /// What Remote Command's notifications list.
    public var supportedCommands: [RemoteCommandID]

    public init(name: String = "Music", tracks: [MediaTrack] = [], state: PlaybackState = .paused, volume: Double = 0.5,
                supportedCommands: [RemoteCommandID] = RemoteCommandID.all) {
        self.name = name
        self.state = state
        rate = state == .playing ? 1 : 0
        elapsed = 0
        self.volume = volume
        self.tracks = tracks
        index = 0
        shuffleMode = .off
        repeatMode = .off
        self.supportedCommands = supportedCommands
    }

    /// The playing track, if the queue has one.
    public var track: MediaTrack? { tracks.indices.contains(index) ? tracks[index] : nil }

    /// Seconds into the track at `now`.
    public func elapsed(at now: Timestamp) -> Double {
        var value = elapsed
        if state == .playing, now > elapsedTold { value += rate * Double(now.nanoseconds - elapsedTold.nanoseconds) / 1e9 }
        if let track, track.duration > 0 { value = min(value, track.duration) }
        return max(value, 0)
    }

    /// Sets the elapsed time as of `now`.
    public mutating func setElapsed(_ seconds: Double, at now: Timestamp) {
        elapsed = seconds
        elapsedTold = now
    }

    /// The attribute's value as an iPhone sends it (empty when there is none).
    public func value(of attribute: MediaAttribute, at now: Timestamp) -> AttributeValue {
        func text(_ string: String) -> AttributeValue { AttributeValue(string) }
        switch attribute {
        case .playerName: return text(name)
        case .playbackInfo:
            return PlaybackInfo(state: state, rate: state == .playing ? rate : 0, elapsed: elapsed(at: now)).value
        case .volume: return AttributeValue(bytes: MediaNumber.text(volume))
        case .queueIndex: return AttributeValue(bytes: tracks.isEmpty ? [] : MediaNumber.text(index))
        case .queueCount: return AttributeValue(bytes: MediaNumber.text(tracks.count))
        case .shuffleMode: return AttributeValue(bytes: MediaNumber.text(shuffleMode.rawValue))
        case .repeatMode: return AttributeValue(bytes: MediaNumber.text(repeatMode.rawValue))
        case .artist: return text(track?.artist ?? "")
        case .album: return text(track?.album ?? "")
        case .title: return text(track?.title ?? "")
        case .duration: return AttributeValue(bytes: track.map { MediaNumber.text($0.duration) } ?? [])
        default: return .empty
        }
    }

    /// Performs a command as the Music app does: false when it is not
    /// supported now (nothing changes).
    public mutating func perform(_ command: RemoteCommandID, at now: Timestamp) -> Bool {
        guard supportedCommands.contains(command) else { return false }
        let position = elapsed(at: now)
        switch command {
        case .play:
            state = .playing
            rate = 1
            setElapsed(position, at: now)
        case .pause:
            state = .paused
            setElapsed(position, at: now)
        case .togglePlayPause:
            return perform(state == .playing ? .pause : .play, at: now)
        case .nextTrack, .previousTrack:
            if command == .previousTrack && position > 3 {
                setElapsed(0, at: now)  // back to the track's start first, as iOS does
            } else if !tracks.isEmpty {
                let step = command == .nextTrack ? 1 : -1
                index = repeatMode == .off ? min(max(index + step, 0), tracks.count - 1) : (index + step + tracks.count) % tracks.count
                setElapsed(0, at: now)
            }
        case .volumeUp: volume = min(volume + 0.0625, 1)
        case .volumeDown: volume = max(volume - 0.0625, 0)
        case .advanceRepeatMode: repeatMode = QueueMode(rawValue: (repeatMode.rawValue + 1) % 3)
        case .advanceShuffleMode: shuffleMode = QueueMode(rawValue: (shuffleMode.rawValue + 1) % 3)
        case .skipForward: setElapsed(position + 15, at: now)
        case .skipBackward: setElapsed(max(position - 15, 0), at: now)
        default: break  // like, dislike, bookmark: performed, nothing shown changes
        }
        return true
    }
}

/// What the AMS server tells its application.
public enum AMSServerEvent: Hashable, Sendable {
    /// An accessory sent a command; `performed` is false when the player does not support it now.
    case command(ConnectionID, RemoteCommandID, performed: Bool)
    /// An accessory registered for these attributes.
    case registered(ConnectionID, EntityRegistration)
    /// A write refused, with the code answered.
    case refused(ConnectionID, AMSCharacteristic, ATTErrorCode)
}

/// What the AMS server asks its caller to do, in order.
public enum AMSServerAction: Hashable, Sendable {
    /// Send one GATT notification of this characteristic to this accessory.
    case notify(ConnectionID, AMSCharacteristic, [UInt8])
    /// Answer that accessory's pending write.
    case respond(ConnectionID, ATTResult)
    case emit(AMSServerEvent)
}

/// The phone's AMS engine (see the top of the file).
public struct AMSServer: Sendable {
    struct Link: Sendable {
        var id: ConnectionID
        var mtu: Int
        var remoteCommandOn = false
        var entityUpdateOn = false
        var registrations: [EntityRegistration] = []
        var selected: MediaAttribute?

        func isRegistered(_ attribute: MediaAttribute) -> Bool {
            registrations.contains { $0.entity == attribute.entity && $0.attributeIDs.contains(attribute.attributeID) }
        }
    }

    public private(set) var player: MediaPlayer
    var links: [Link] = []

    public init(player: MediaPlayer = MediaPlayer()) {
        self.player = player
    }

    func linkIndex(_ connection: ConnectionID) -> Int? { links.firstIndex { $0.id == connection } }

    /// What the accessory on `connection` registered for.
    public func registrations(of connection: ConnectionID) -> [EntityRegistration] {
        linkIndex(connection).map { links[$0].registrations } ?? []
    }

    public mutating func linkUp(_ connection: ConnectionID, mtu: Int) {
        if let index = linkIndex(connection) { links.remove(at: index) }
        links.append(Link(id: connection, mtu: mtu))
    }

    public mutating func mtuChanged(_ connection: ConnectionID, _ mtu: Int) {
        if let index = linkIndex(connection) { links[index].mtu = mtu }
    }

    public mutating func linkDown(_ connection: ConnectionID) {
        if let index = linkIndex(connection) { links.remove(at: index) }
    }

    /// A CCCD written. Remote Command's list is notified when it is turned on.
    public mutating func setSubscription(_ connection: ConnectionID, _ characteristic: AMSCharacteristic, enabled: Bool) -> [AMSServerAction] {
        guard let index = linkIndex(connection) else { return [] }
        switch characteristic {
        case .remoteCommand:
            links[index].remoteCommandOn = enabled
            return enabled ? [.notify(connection, .remoteCommand, RemoteCommandList.encode(player.supportedCommands))] : []
        case .entityUpdate:
            links[index].entityUpdateOn = enabled
            if !enabled { links[index].registrations = [] }
            return []
        case .entityAttribute:
            return []
        }
    }

    /// A write from an accessory: answered (`.respond`) first, then what it causes.
    public mutating func receivedWrite(_ connection: ConnectionID, _ characteristic: AMSCharacteristic, _ bytes: [UInt8], at now: Timestamp) -> [AMSServerAction] {
        guard let index = linkIndex(connection) else { return [.respond(connection, .attError(.unlikelyError))] }
        func refuse(_ code: AMSErrorCode) -> [AMSServerAction] {
            [.respond(connection, .attError(code.code)), .emit(.refused(connection, characteristic, code.code))]
        }
        switch characteristic {
        case .remoteCommand:
            guard let command = try? RemoteCommandID.decode(write: bytes), command.name != nil else { return refuse(.invalidCommand) }
            var performed = false
            let changes = update(at: now) { performed = $0.perform(command, at: now) }
            return [.respond(connection, .success)] + changes + [.emit(.command(connection, command, performed: performed))]
        case .entityUpdate:
            guard links[index].entityUpdateOn else { return refuse(.invalidState) }
            guard let registration = try? EntityRegistration.decode(bytes), registration.entity.name != nil else { return refuse(.invalidCommand) }
            links[index].registrations.removeAll { $0.entity == registration.entity }
            links[index].registrations.append(registration)
            var actions: [AMSServerAction] = [.respond(connection, .success), .emit(.registered(connection, registration))]
            for attribute in registration.attributes where attribute.name != nil {
                actions.append(notification(attribute, on: links[index], at: now))
            }
            return actions
        case .entityAttribute:
            guard links[index].entityUpdateOn else { return refuse(.invalidState) }
            guard let attribute = try? MediaAttribute.decode(selection: bytes), attribute.name != nil else { return refuse(.invalidCommand) }
            links[index].selected = attribute
            return [.respond(connection, .success)]
        }
    }

    /// A read from an accessory: Entity Attribute's selected value, whole.
    public func read(_ connection: ConnectionID, _ characteristic: AMSCharacteristic, at now: Timestamp) -> ATTReadResult {
        guard let index = linkIndex(connection) else { return .attError(.unlikelyError) }
        guard characteristic == .entityAttribute else { return .attError(.readNotPermitted) }
        guard links[index].entityUpdateOn else { return .attError(AMSErrorCode.invalidState.code) }
        guard let attribute = links[index].selected else { return .attError(AMSErrorCode.invalidCommand.code) }
        let value = player.value(of: attribute, at: now)
        return value.isEmpty ? .attError(AMSErrorCode.absentAttribute.code) : .value(value.bytes)
    }

    /// Changes the player (a script's step, or a command): each accessory
    /// is notified of the registered values that changed.
    public mutating func update(at now: Timestamp, _ change: (inout MediaPlayer) -> Void) -> [AMSServerAction] {
        let before = MediaAttribute.all.map { player.value(of: $0, at: now) }
        let commandsBefore = player.supportedCommands
        change(&player)
        var actions: [AMSServerAction] = []
        if player.supportedCommands != commandsBefore {
            for link in links where link.remoteCommandOn {
                actions.append(.notify(link.id, .remoteCommand, RemoteCommandList.encode(player.supportedCommands)))
            }
        }
        for (position, attribute) in MediaAttribute.all.enumerated() where player.value(of: attribute, at: now) != before[position] {
            for link in links where link.entityUpdateOn && link.isRegistered(attribute) {
                actions.append(notification(attribute, on: link, at: now))
            }
        }
        return actions
    }

    func notification(_ attribute: MediaAttribute, on link: Link, at now: Timestamp) -> AMSServerAction {
        .notify(link.id, .entityUpdate, EntityUpdate.fitting(attribute, player.value(of: attribute, at: now), mtu: link.mtu).encode())
    }
}
