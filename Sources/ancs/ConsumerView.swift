import ANCS
import ANCSFormat
import Foundation

/// What `ancs listen` prints: the demo's terminal view (one line per thing a
/// person would notice) or, with `--json`, one object per consumer event in
/// the shape of `ancs demo --json`.
///
/// Across sessions (a reconnection, Service Changed) the phone announces
/// its notifications again as PreExisting; the terminal view and desktop
/// notifications show each one once (same UID, app, title and date), the
/// JSON stream keeps every event.
final class ConsumerView: @unchecked Sendable {
    let json: Bool
    let start = ContinuousClock.now
    private let lock = NSLock()
    /// Notifications shown in this session, by UID.
    private var shown: Set<NotificationUID> = []
    /// Every notification shown since the program started, by its identity.
    private var seen: Set<String> = []
    private var titles: [NotificationUID: String] = [:]
    private var suppressed = 0
    /// Called for each notification shown for the first time (desktop notifications).
    var onShow: (@Sendable (ConsumerNotification, String) -> Void)?
    var onRemove: (@Sendable (NotificationUID) -> Void)?

    init(json: Bool) { self.json = json }

    private var seconds: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Shows one consumer event; `displayName` answers from the session's app cache.
    func show(_ event: ConsumerEvent, notifications: [NotificationUID: ConsumerNotification], displayName: (String) -> String?) {
        lock.lock()
        defer { lock.unlock() }
        if json {
            var object = ANCSJSON.consumerEvent(event)
            if case .object(var members) = object {
                members.insert(("time", .double((seconds * 1000).rounded() / 1000)), at: 0)
                object = .object(members)
            }
            printLine(object.rendered)
        }
        switch event {
        case .sessionStarted:
            shown.removeAll()
            suppressed = 0
            line("── session started")
        case .sessionEnded(let reason):
            line("── session ended (\(reason))")
        case .added(let notification), .modified(let notification):
            showIfReady(notification, displayName)
        case .attributes(let response):
            if let notification = notifications[response.notificationUID] {
                if shown.contains(notification.uid) {
                    line(describe(notification, displayName).replacingOccurrences(of: "●", with: "↻"))
                } else {
                    showIfReady(notification, displayName)
                }
            }
        case .appAttributes:
            for notification in notifications.values.sorted(by: { $0.uid < $1.uid }) where !shown.contains(notification.uid) {
                showIfReady(notification, displayName)
            }
        case .removed(let notification):
            shown.remove(notification.uid)
            let title = titles.removeValue(forKey: notification.uid) ?? notification[.title]?.string ?? "uid \(notification.uid)"
            line("✕ \(title) — removed (\(notification.categoryID))")
            onRemove?(notification.uid)
        case .completed(let id, .failure(let error)):
            line("  request \(id) failed: \(error)")
        case .completed(_, .success(.actionPerformed)):
            line("  the phone performed the action")
        case .completed:
            break
        case .protocolError(let error):
            line("  dropped bytes from the phone: \(error)")
        case .dataSourceUnavailable(let result):
            line("  Data Source unavailable (\(result)): titles and messages cannot be fetched")
        case .unknownEvent(let event):
            line("  unknown event \(event.eventID) for uid \(event.notificationUID)")
        }
    }

    /// An app's name could not be fetched: its notifications no longer wait for it.
    func showWithoutName(_ appIdentifier: String, notifications: [NotificationUID: ConsumerNotification], displayName: (String) -> String?) {
        lock.lock()
        defer { lock.unlock() }
        for notification in notifications.values.sorted(by: { $0.uid < $1.uid })
        where notification.appIdentifier == appIdentifier && !shown.contains(notification.uid) {
            showIfReady(notification, displayName, needsName: false)
        }
    }

    /// A status line from the transport (always on stderr with --json).
    func status(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        if json {
            FileHandle.standardError.write(Data("ancs listen: \(text)\n".utf8))
        } else {
            line("── \(text)")
        }
    }

    private func line(_ text: String) {
        guard !json else { return }
        printLine(String(format: "%7.3fs  ", seconds) + text)
    }

    /// Shown once its title is there and its app's name (fetched by the engine) too.
    private func showIfReady(_ notification: ConsumerNotification, _ displayName: (String) -> String?, needsName: Bool = true) {
        guard !shown.contains(notification.uid), let app = notification.appIdentifier,
              notification[.title] != nil else { return }
        guard displayName(app) != nil || !needsName else { return }
        shown.insert(notification.uid)
        if let title = notification[.title]?.string { titles[notification.uid] = title }
        let identity = "\(notification.uid.rawValue)|\(app)|\(notification[.title]?.string ?? "")|\(notification[.date]?.string ?? "")"
        if notification.isPreExisting && seen.contains(identity) {
            suppressed += 1
            return
        }
        seen.insert(identity)
        let text = describe(notification, displayName)
        line(text)
        onShow?(notification, displayName(app) ?? app)
    }

    /// "● [App] Title (subtitle) — “message” · 09:31 · category · [✓ Reply] [✗ Clear] · uid 7".
    func describe(_ notification: ConsumerNotification, _ displayName: (String) -> String?) -> String {
        let app = notification.appIdentifier.flatMap { displayName($0) } ?? notification.appIdentifier ?? "?"
        var text = "● [\(app)] \(notification[.title]?.string ?? "")"
        if let subtitle = notification[.subtitle]?.string, !subtitle.isEmpty { text += " (\(subtitle))" }
        if let message = notification[.message]?.string, !message.isEmpty { text += " — “\(message)”" }
        if let date = notification[.date]?.date {
            text += " · \(date.hour < 10 ? "0" : "")\(date.hour):\(date.minute < 10 ? "0" : "")\(date.minute)"
        }
        text += " · \(notification.categoryID)"
        var actions: [String] = []
        if notification.eventFlags.contains(.positiveAction) { actions.append("✓ " + (notification[.positiveActionLabel]?.string ?? "positive")) }
        if notification.eventFlags.contains(.negativeAction) { actions.append("✗ " + (notification[.negativeActionLabel]?.string ?? "negative")) }
        if !actions.isEmpty { text += " · [" + actions.joined(separator: "] [") + "]" }
        if notification.isPreExisting { text += " · pre-existing" }
        text += " · uid \(notification.uid.rawValue)"
        return text
    }
}
