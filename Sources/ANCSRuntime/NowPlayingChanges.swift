import ANCS

/// When a now-playing line is worth showing: the phone tells a change one
/// attribute per notification, and a person notices the track, the artist,
/// the playback state, and a value still cut (shown with an ellipsis until
/// read in full). The caller notes each AMS event, waits briefly after the
/// first of a change for the rest, then asks `changed(_:)`.
public struct NowPlayingChanges: Sendable {
    private var cut: Set<MediaAttribute> = []
    private var last: String?

    public init() {}

    /// Notes an event; true when it is an update (a line may be due).
    public mutating func note(_ event: AMSClientEvent) -> Bool {
        guard case .updated(let attribute, _, let isTruncated) = event else { return false }
        if isTruncated { cut.insert(attribute) } else { cut.remove(attribute) }
        return true
    }

    /// The values still cut, for `TerminalLine.nowPlaying`, when what a
    /// person notices changed since the last line; nil when it did not, or
    /// before there is a title.
    public mutating func changed(_ playing: NowPlaying) -> Set<MediaAttribute>? {
        let shownCut = cut.intersection([.title, .artist])
        let key = [playing.title?.string ?? "", playing.artist?.string ?? "", playing.playback?.state.description ?? "",
                   shownCut.map(\.description).sorted().joined(separator: ",")].joined(separator: "|")
        guard key != last, playing.title != nil else { return nil }
        last = key
        return shownCut
    }
}
