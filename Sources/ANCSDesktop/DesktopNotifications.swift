#if os(Linux)
import ANCS
import ANCSDBus
import Synchronization

/// Shows notifications through the desktop's notification server
/// (`org.freedesktop.Notifications` on the session bus), with the ANCS
/// actions as buttons; a button press comes back through `onAction`.
public final class DesktopNotifications: Sendable {
    private let bus: DBusConnection
    private let state = Mutex(State())
    private let actionHandler = Mutex<(@Sendable (NotificationUID, ActionID) -> Void)?>(nil)

    private struct State {
        var desktopIDs: [NotificationUID: UInt32] = [:]
        var uids: [UInt32: NotificationUID] = [:]
    }

    /// Called when the person presses an action button.
    public var onAction: (@Sendable (NotificationUID, ActionID) -> Void)? {
        get { actionHandler.withLock { $0 } }
        set { actionHandler.withLock { $0 = newValue } }
    }

    /// Connects to the session bus and checks a notification server answers.
    public static func start(bus: DBusConnection.Bus = .session) async throws(DBusError) -> DesktopNotifications {
        let connection = try DBusConnection(bus)
        let notifications = DesktopNotifications(connection)
        do {
            let reply = try await connection.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                  interface: "org.freedesktop.Notifications", member: "GetCapabilities", timeout: .seconds(5))
            _ = reply
            let signals = try await connection.signals([
                DBusMatchRule(interface: "org.freedesktop.Notifications", member: "ActionInvoked", path: "/org/freedesktop/Notifications"),
                DBusMatchRule(interface: "org.freedesktop.Notifications", member: "NotificationClosed", path: "/org/freedesktop/Notifications"),
            ])
            Task { [weak notifications] in
                for await signal in signals { notifications?.handle(signal) }
            }
        } catch {
            connection.close()
            throw DBusError(name: error.name, message: "no desktop notification server on the session bus: \(error.message)")
        }
        return notifications
    }

    private init(_ bus: DBusConnection) { self.bus = bus }

    public func close() { bus.close() }

    /// Shows (or replaces) the desktop notification for `notification`.
    public func show(_ notification: ConsumerNotification, app: String) {
        var actions: [String] = []
        if notification.eventFlags.contains(.positiveAction) {
            actions += ["positive", notification[.positiveActionLabel]?.string ?? "OK"]
        }
        if notification.eventFlags.contains(.negativeAction) {
            actions += ["negative", notification[.negativeActionLabel]?.string ?? "Dismiss"]
        }
        let summary = [app, notification[.title]?.string].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
        let body = notification[.message]?.string ?? ""
        let replaces = state.withLock { $0.desktopIDs[notification.uid] } ?? 0
        let urgency: UInt8 = notification.eventFlags.contains(.important) ? 2 : 1
        Task {
            guard let reply = try? await bus.call(
                destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                interface: "org.freedesktop.Notifications", member: "Notify",
                [.string("ancs"), .uint32(replaces), .string(""), .string(summary), .string(body), .strings(actions),
                 .properties(["urgency": .byte(urgency)]), .int32(-1)], timeout: .seconds(5)),
                let id = reply.first?.integer else { return }
            state.withLock { state in
                state.desktopIDs[notification.uid] = UInt32(id)
                state.uids[UInt32(id)] = notification.uid
            }
        }
    }

    /// Closes the desktop notification of a notification the phone removed.
    public func withdraw(_ uid: NotificationUID) {
        guard let id = state.withLock({ state -> UInt32? in
            guard let id = state.desktopIDs.removeValue(forKey: uid) else { return nil }
            state.uids[id] = nil
            return id
        }) else { return }
        Task {
            _ = try? await bus.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                    interface: "org.freedesktop.Notifications", member: "CloseNotification", [.uint32(id)], timeout: .seconds(5))
        }
    }

    private func handle(_ signal: DBusSignal) {
        guard let id = signal.arguments.first?.integer.map({ UInt32($0) }) else { return }
        switch signal.member {
        case "ActionInvoked":
            guard let uid = state.withLock({ $0.uids[id] }), let key = signal.arguments.dropFirst().first?.string else { return }
            let action: ActionID? = key == "positive" ? .positive : key == "negative" ? .negative : nil
            if let action { onAction?(uid, action) }
        case "NotificationClosed":
            state.withLock { state in
                if let uid = state.uids.removeValue(forKey: id) { state.desktopIDs[uid] = nil }
            }
        default:
            break
        }
    }
}

#endif
