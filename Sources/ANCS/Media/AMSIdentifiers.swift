// Identifiers of the Apple Media Service (AMS): the service, its three
// characteristics, and the IDs carried in their bytes. As for ANCS, each
// ID is an open struct over its wire byte: a value from a newer iOS is
// kept, printed as its number and sent back unchanged.

/// The AMS service and characteristic UUIDs.
public enum AMSUUID {
    public static let service = BluetoothUUID(high: 0x89D3_502B_0F36_433A, low: 0x8EF4_C502_AD55_F8DC)
    public static let remoteCommand = BluetoothUUID(high: 0x9B3C_81D8_57B1_4A8A, low: 0xB8DF_0E56_F7CA_51C2)
    public static let entityUpdate = BluetoothUUID(high: 0x2F7C_ABCE_808D_411F, low: 0x9A0C_BB92_BA96_C102)
    public static let entityAttribute = BluetoothUUID(high: 0xC6B2_F38C_23AB_46D8, low: 0xA6AB_A3A8_70BB_D5D7)
}

/// The three AMS characteristics, as the AMS engines name them to a transport.
public enum AMSCharacteristic: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Write a command; its notifications list the commands the player supports now.
    case remoteCommand
    /// Write (with response) a registration; its notifications carry the values.
    case entityUpdate
    /// Write an entity and attribute, then read the whole value.
    case entityAttribute

    public var uuid: BluetoothUUID {
        switch self {
        case .remoteCommand: AMSUUID.remoteCommand
        case .entityUpdate: AMSUUID.entityUpdate
        case .entityAttribute: AMSUUID.entityAttribute
        }
    }

    /// The characteristic a UUID names, or nil.
    public init?(uuid: BluetoothUUID) {
        switch uuid {
        case AMSUUID.remoteCommand: self = .remoteCommand
        case AMSUUID.entityUpdate: self = .entityUpdate
        case AMSUUID.entityAttribute: self = .entityAttribute
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .remoteCommand: "Remote Command"
        case .entityUpdate: "Entity Update"
        case .entityAttribute: "Entity Attribute"
        }
    }

    /// `remoteCommand`, `entityUpdate`, `entityAttribute` (JSON).
    public var identifier: String {
        switch self {
        case .remoteCommand: "remoteCommand"
        case .entityUpdate: "entityUpdate"
        case .entityAttribute: "entityAttribute"
        }
    }
}

/// The errors an AMS server answers a write with (0xA0–0xA2; AMS gives
/// these codes other meanings than ANCS does).
public enum AMSErrorCode: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// The accessory has not set AMS up: it wrote to Entity Update or
    /// Entity Attribute before enabling Entity Update's notifications.
    case invalidState = 0xA0
    /// The command was malformed.
    case invalidCommand = 0xA1
    /// The attribute is empty.
    case absentAttribute = 0xA2

    public init?(_ code: ATTErrorCode) { self.init(rawValue: code.rawValue) }
    public var code: ATTErrorCode { ATTErrorCode(rawValue: rawValue) }

    public var description: String {
        switch self {
        case .invalidState: "Invalid State (0xA0)"
        case .invalidCommand: "Invalid Command (0xA1)"
        case .absentAttribute: "Absent Attribute (0xA2)"
        }
    }
}

/// A RemoteCommandID: 0 Play … 13 Bookmark Track; 14–255 reserved.
public struct RemoteCommandID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let play = RemoteCommandID(rawValue: 0)
    public static let pause = RemoteCommandID(rawValue: 1)
    public static let togglePlayPause = RemoteCommandID(rawValue: 2)
    public static let nextTrack = RemoteCommandID(rawValue: 3)
    public static let previousTrack = RemoteCommandID(rawValue: 4)
    public static let volumeUp = RemoteCommandID(rawValue: 5)
    public static let volumeDown = RemoteCommandID(rawValue: 6)
    public static let advanceRepeatMode = RemoteCommandID(rawValue: 7)
    public static let advanceShuffleMode = RemoteCommandID(rawValue: 8)
    public static let skipForward = RemoteCommandID(rawValue: 9)
    public static let skipBackward = RemoteCommandID(rawValue: 10)
    public static let likeTrack = RemoteCommandID(rawValue: 11)
    public static let dislikeTrack = RemoteCommandID(rawValue: 12)
    public static let bookmarkTrack = RemoteCommandID(rawValue: 13)

    /// The fourteen commands AMS defines, in ID order.
    public static var all: [RemoteCommandID] { (0...13).map { RemoteCommandID(rawValue: $0) } }

    public var name: String? {
        switch rawValue {
        case 0: "play"
        case 1: "pause"
        case 2: "togglePlayPause"
        case 3: "nextTrack"
        case 4: "previousTrack"
        case 5: "volumeUp"
        case 6: "volumeDown"
        case 7: "advanceRepeatMode"
        case 8: "advanceShuffleMode"
        case 9: "skipForward"
        case 10: "skipBackward"
        case 11: "likeTrack"
        case 12: "dislikeTrack"
        case 13: "bookmarkTrack"
        default: nil
        }
    }

    /// The command a name (`play`, `nextTrack`, …) or a number names, or nil.
    public init?(name: String) {
        if let value = UInt8(name) { self.init(rawValue: value); return }
        guard let found = RemoteCommandID.all.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    public var description: String { name ?? "\(rawValue)" }
}

/// An EntityID: 0 Player, 1 Queue, 2 Track; 3–255 reserved.
public struct EntityID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let player = EntityID(rawValue: 0)
    public static let queue = EntityID(rawValue: 1)
    public static let track = EntityID(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 0: "player"
        case 1: "queue"
        case 2: "track"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// An attribute of an entity: its EntityID and its AttributeID (whose
/// meaning depends on the entity). Written to Entity Attribute as these two
/// bytes.
public struct MediaAttribute: Hashable, Sendable, CustomStringConvertible {
    public var entity: EntityID
    public var attributeID: UInt8

    public init(_ entity: EntityID, _ attributeID: UInt8) {
        self.entity = entity
        self.attributeID = attributeID
    }

    /// Player: the app's name (`Music`).
    public static let playerName = MediaAttribute(.player, 0)
    /// Player: `state,rate,elapsed` (`PlaybackInfo`).
    public static let playbackInfo = MediaAttribute(.player, 1)
    /// Player: the volume, 0 to 1 (`0.5`).
    public static let volume = MediaAttribute(.player, 2)
    /// Queue: the playing item's index in the queue (from 0).
    public static let queueIndex = MediaAttribute(.queue, 0)
    /// Queue: the number of items in the queue.
    public static let queueCount = MediaAttribute(.queue, 1)
    /// Queue: `ShuffleMode`.
    public static let shuffleMode = MediaAttribute(.queue, 2)
    /// Queue: `RepeatMode`.
    public static let repeatMode = MediaAttribute(.queue, 3)
    /// Track: the artist.
    public static let artist = MediaAttribute(.track, 0)
    /// Track: the album.
    public static let album = MediaAttribute(.track, 1)
    /// Track: the title.
    public static let title = MediaAttribute(.track, 2)
    /// Track: the duration in seconds (`254.5`).
    public static let duration = MediaAttribute(.track, 3)

    /// The eleven attributes AMS defines, by entity then AttributeID.
    public static var all: [MediaAttribute] {
        [.playerName, .playbackInfo, .volume,
         .queueIndex, .queueCount, .shuffleMode, .repeatMode,
         .artist, .album, .title, .duration]
    }

    public var name: String? {
        switch (entity.rawValue, attributeID) {
        case (0, 0): "playerName"
        case (0, 1): "playbackInfo"
        case (0, 2): "volume"
        case (1, 0): "queueIndex"
        case (1, 1): "queueCount"
        case (1, 2): "shuffleMode"
        case (1, 3): "repeatMode"
        case (2, 0): "artist"
        case (2, 1): "album"
        case (2, 2): "title"
        case (2, 3): "duration"
        default: nil
        }
    }

    /// `title`, or `entity/attribute` as numbers for one AMS does not define.
    public var description: String { name ?? "\(entity.rawValue)/\(attributeID)" }
}

/// EntityUpdateFlags of an Entity Update notification. Bits 1–7 are reserved: kept.
public struct EntityUpdateFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The value was cut to fit one notification: read Entity Attribute for all of it.
    public static let truncated = EntityUpdateFlags(rawValue: 1 << 0)
}

/// The first field of PlaybackInfo: 0 Paused, 1 Playing, 2 Rewinding, 3 Fast Forwarding.
public struct PlaybackState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let paused = PlaybackState(rawValue: 0)
    public static let playing = PlaybackState(rawValue: 1)
    public static let rewinding = PlaybackState(rawValue: 2)
    public static let fastForwarding = PlaybackState(rawValue: 3)

    public var name: String? {
        switch rawValue {
        case 0: "paused"
        case 1: "playing"
        case 2: "rewinding"
        case 3: "fastForwarding"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}

/// The queue's shuffle or repeat mode: 0 Off, 1 One, 2 All.
public struct QueueMode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let off = QueueMode(rawValue: 0)
    public static let one = QueueMode(rawValue: 1)
    public static let all = QueueMode(rawValue: 2)

    public var name: String? {
        switch rawValue {
        case 0: "off"
        case 1: "one"
        case 2: "all"
        default: nil
        }
    }
    public var description: String { name ?? "\(rawValue)" }
}
