import ANCS
import ANCSRuntime

/// One line of text for a notification, as a terminal shows it (`ancs demo`
/// and `ancs listen`): symbols for the state, the app in brackets, the
/// attributes that are there.
public enum TerminalLine {
    /// "● [App] Title (subtitle) — “message” · 09:31 · category · [✓ Accept] [✗ Decline]".
    public static func notification(_ shown: DisplayedNotification) -> String {
        let notification = shown.notification
        var text = "● [\(shown.appLabel)] \(shown.title ?? "")"
        if let subtitle = shown.subtitle, !subtitle.isEmpty { text += " (\(subtitle))" }
        if let message = shown.message, !message.isEmpty { text += " — “\(message)”" }
        if let date = shown.date { text += " · \(padded2(date.hour)):\(padded2(date.minute))" }
        text += " · \(notification.categoryID)"
        let actions = [ActionID.positive, .negative].compactMap { action in
            shown.label(of: action).map { (action == .positive ? "✓ " : "✗ ") + $0 }
        }
        if !actions.isEmpty { text += " · [" + actions.joined(separator: "] [") + "]" }
        if notification.isPreExisting { text += " · pre-existing" }
        if notification.eventFlags.contains(.important) { text += " · important" }
        return text
    }

    /// A notification shown again after a change: the same line, marked "↻".
    public static func updated(_ shown: DisplayedNotification) -> String {
        notification(shown).replacing("●", with: "↻")
    }

    /// Before any attribute is fetched (lazy):
    /// "● new social notification · important · 3 in category".
    public static func announced(_ notification: ConsumerNotification) -> String {
        var text = "● new \(notification.categoryID) notification"
        if notification.isPreExisting { text += " · pre-existing" }
        if notification.eventFlags.contains(.important) { text += " · important" }
        text += " · \(notification.categoryCount) in category"
        return text
    }

    /// The now-playing line: `♫ Queen — Bohemian Rhapsody (playing, 1:05 / 5:54)`;
    /// a value the phone cut (`cut`) and not yet read in full ends with `…`.
    public static func nowPlaying(_ playing: NowPlaying, elapsed: Double?, cut: Set<MediaAttribute> = []) -> String {
        var text = "♫ "
        if let artist = playing.artist?.string, !artist.isEmpty { text += artist + (cut.contains(.artist) ? "…" : "") + " — " }
        text += (playing.title?.string ?? "nothing playing") + (cut.contains(.title) ? "…" : "")
        var details: [String] = []
        if let state = playing.playback?.state { details.append(state.name ?? "state \(state.rawValue)") }
        if let elapsed {
            details.append(playing.duration.map { "\(clock(elapsed)) / \(clock($0))" } ?? clock(elapsed))
        }
        return details.isEmpty ? text : text + " (" + details.joined(separator: ", ") + ")"
    }

    /// A remote command as a person names it: `next track`, `play`.
    public static func command(_ command: RemoteCommandID) -> String {
        guard let name = command.name else { return "command \(command.rawValue)" }
        var words = ""
        for character in name {
            if character.isUppercase { words += " " + character.lowercased() } else { words.append(character) }
        }
        return words
    }

    /// `m:ss` (or `h:mm:ss`).
    static func clock(_ seconds: Double) -> String {
        let whole = max(Int(seconds), 0)
        let minutes = whole / 60 % 60, hours = whole / 3600
        return (hours > 0 ? "\(hours):\(padded2(minutes))" : "\(minutes)") + ":" + padded2(whole % 60)
    }

    private static func padded2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
