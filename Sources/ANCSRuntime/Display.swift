import ANCS

/// What an application shows of each notification, and what it needs
/// fetched before it can show one: "ready to show".
///
/// With a policy, the client fetches the attributes for every Added
/// notification (and again for Modified ones, if asked), then the app's
/// DisplayName (once per app and session: the engine caches it), and tells
/// `.ready` once both have ended. A failed app-name fetch does not hold a
/// notification back: it is shown with its AppIdentifier instead.
public struct DisplayPolicy: Hashable, Sendable {
    /// Fetched for each notification, in this order.
    public var attributes: [NotificationAttributeRequest]
    /// Also wait for the app's DisplayName.
    public var appNames: Bool
    /// Fetch again when a notification is Modified, then tell `.updated`.
    public var refreshOnModified: Bool

    public init(attributes: [NotificationAttributeRequest] = DisplayPolicy.standardAttributes, appNames: Bool = true, refreshOnModified: Bool = true) {
        self.attributes = attributes
        self.appNames = appNames
        self.refreshOnModified = refreshOnModified
    }

    /// What a display that shows everything wants: the core's list
    /// (`ConsumerConfiguration.displayAttributes`: app, title, message,
    /// date) with the subtitle after the title and the action labels last.
    public static let standardAttributes: [NotificationAttributeRequest] = {
        var attributes = ConsumerConfiguration.displayAttributes
        let title = attributes.firstIndex { $0.id == .title }.map { $0 + 1 } ?? attributes.count
        attributes.insert(NotificationAttributeRequest(.subtitle, maxLength: 64), at: title)
        attributes.append(NotificationAttributeRequest(.positiveActionLabel))
        attributes.append(NotificationAttributeRequest(.negativeActionLabel))
        return attributes
    }()

    public static let standard = DisplayPolicy()
}

/// A notification with what a person sees: its attributes, decoded, and its
/// app's display name.
public struct DisplayedNotification: Hashable, Sendable {
    /// The session's model of the notification, with the attributes fetched.
    public var notification: ConsumerNotification
    /// The app's DisplayName, when the NP gave one.
    public var appName: String?

    public init(notification: ConsumerNotification, appName: String?) {
        self.notification = notification
        self.appName = appName
    }

    /// As the engine tells it (`.ready`, `.updated`): an empty name is none.
    init(_ notification: ConsumerNotification, appName: AttributeValue?) {
        self.init(notification: notification, appName: appName?.string.nonEmpty)
    }

    public var uid: NotificationUID { notification.uid }
    public var categoryID: CategoryID { notification.categoryID }
    public var eventFlags: EventFlags { notification.eventFlags }
    public var appIdentifier: String? { notification.appIdentifier }
    /// The app's name, else its AppIdentifier.
    public var appLabel: String { appName ?? appIdentifier ?? "?" }
    public var title: String? { notification[.title]?.string }
    public var subtitle: String? { notification[.subtitle]?.string }
    public var message: String? { notification[.message]?.string }
    public var date: ANCSDate? { notification[.date]?.date }
    /// The label of an action the notification offers (nil if it offers none).
    public func label(of action: ActionID) -> String? {
        switch action {
        case .positive:
            guard eventFlags.contains(.positiveAction) else { return nil }
            return notification[.positiveActionLabel]?.string.nonEmpty ?? "✓"
        case .negative:
            guard eventFlags.contains(.negativeAction) else { return nil }
            return notification[.negativeActionLabel]?.string.nonEmpty ?? "✗"
        default:
            return nil
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}

/// What a `ConsumerClient` tells the application, in order.
public enum ConsumerClientEvent: Hashable, Sendable {
    /// An event of the engine (session, Added/Modified/Removed, attributes
    /// arriving, protocol errors). Never a request's completion: requests
    /// return their own results.
    case consumer(ConsumerEvent)
    /// With a display policy: the notification can be shown.
    case ready(DisplayedNotification)
    /// With a display policy: a notification already shown changed.
    case updated(DisplayedNotification)
    /// With a display policy: its attributes could not be fetched (it is
    /// not shown; the session goes on).
    case displayFailed(NotificationUID, ConsumerError)
}

/// Tells which notifications a new session only announces again: after a
/// reconnection or Service Changed the phone announces everything it still
/// has as PreExisting, under the same UIDs (spec: "Sessions"), and a
/// display that already showed them should not show them twice.
///
/// A notification is a replay when it is PreExisting and was shown in the
/// previous session with the same UID, app, title and date. Memory is
/// bounded by two sessions' notifications.
public struct PreExistingReplays: Sendable {
    /// What makes two announcements the same notification shown.
    struct Identity: Hashable, Sendable {
        var uid: NotificationUID
        var appIdentifier: AttributeValue?
        var title: AttributeValue?
        var date: AttributeValue?

        init(_ shown: DisplayedNotification) {
            uid = shown.uid
            appIdentifier = shown.notification[.appIdentifier]
            title = shown.notification[.title]
            date = shown.notification[.date]
        }
    }
    private var previous: Set<Identity> = []
    private var current: Set<Identity> = []

    public init() {}

    /// A new session starts: what was shown so far becomes "previous".
    public mutating func sessionStarted() {
        previous = current
        current = []
    }

    /// Records `shown`; true if it only repeats what the previous session showed.
    public mutating func isReplay(_ shown: DisplayedNotification) -> Bool {
        let identity = Identity(shown)
        current.insert(identity)
        return shown.notification.isPreExisting && previous.contains(identity)
    }
}
