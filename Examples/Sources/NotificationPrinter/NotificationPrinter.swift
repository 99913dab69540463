import ANCSRuntime

/// What the example accessory does with a phone's notifications: one line
/// for each notification ready to show, one for each the phone removes.
/// The same code runs against BlueZ, a Bumble host, or a simulated phone
/// in the tests.
public enum NotificationPrinter {
    /// The line for `event`, or nil for an event the accessory does not print.
    public static func line(for event: ConsumerClientEvent) -> String? {
        switch event {
        case .ready(let shown): "[\(shown.appLabel)] \(shown.title ?? "") — \(shown.message ?? "")"
        case .removed(let notification): "removed \(notification.uid)"
        default: nil
        }
    }

    /// Prints the line of each event of `client` until its events end.
    public static func printEvents(of client: ConsumerClient) async {
        for await event in client.events {
            if let line = line(for: event) { print(line) }
        }
    }
}
