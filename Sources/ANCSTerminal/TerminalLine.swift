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

    private static func padded2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
