#if !os(Linux)
import ANCS

// BlueZ and the desktop's notification server are reached over D-Bus, on
// Linux only (modules ANCSBlueZ and ANCSDesktop). Elsewhere `listen` still
// names these types, and fails with a message before using any of them:
// `--stack bluez` when the transport is made, `--notify` when it starts.

/// A status line from the BlueZ transport (Linux: `ANCSBlueZ.BlueZStatus`).
struct BlueZStatus: Sendable {
    var message: String
}

/// A pairing question from bluetoothd (Linux: `ANCSBlueZ.PairingRequest`).
struct PairingRequest: Sendable {
    var device: String
    var passkey: UInt32?
}

/// Desktop notifications (Linux: `ANCSDesktop.DesktopNotifications`).
final class DesktopNotifications: Sendable {
    struct Unavailable: Error {
        var message: String { "desktop notifications (org.freedesktop.Notifications over D-Bus) are available on Linux only" }
    }

    static func start() async throws(Unavailable) -> DesktopNotifications { throw Unavailable() }
    private init() {}
    var onAction: (@Sendable (NotificationUID, ActionID) -> Void)? { get { nil } set {} }
    func show(_ notification: ConsumerNotification, app: String) {}
    func withdraw(_ uid: NotificationUID) {}
    func close() {}
}
#endif
