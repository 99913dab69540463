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

extension ConsumerConfiguration {
    /// The display policy this configuration carries: its eager attributes,
    /// `eagerAppNames` and `refreshOnModified` read as one (nil when no
    /// attribute is fetched eagerly), and written as one. The configuration
    /// is the one place the policy is kept.
    public var display: DisplayPolicy? {
        get {
            eagerAttributes.isEmpty ? nil
                : DisplayPolicy(attributes: eagerAttributes, appNames: eagerAppNames, refreshOnModified: refreshOnModified)
        }
        set {
            eagerAttributes = newValue?.attributes ?? []
            if let newValue {
                eagerAppNames = newValue.appNames
                refreshOnModified = newValue.refreshOnModified
            }
        }
    }

    /// The default configuration with a display policy:
    /// `ConsumerClient(transport: phone, configuration: .displaying(.standard))`.
    public static func displaying(_ policy: DisplayPolicy) -> ConsumerConfiguration {
        var configuration = ConsumerConfiguration.default
        configuration.display = policy
        return configuration
    }
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

/// What a `ConsumerClient` tells the application, in order: one case per
/// event, each of which is sent. The engine's events (`ConsumerEvent`) as
/// an application meets them: a notification to show comes as a
/// `DisplayedNotification`, and a request's completion never comes here
/// (each request returns its own result).
public enum ConsumerClientEvent: Hashable, Sendable {
    /// Notification Source is being subscribed: a new session starts empty.
    case sessionStarted
    /// An iOS notification was added (PreExisting ones at the session's start included).
    case added(ConsumerNotification)
    case modified(ConsumerNotification)
    /// Removed (also when the model, full, drops its oldest notification).
    case removed(ConsumerNotification)
    /// An event with a reserved EventID, passed through unchanged.
    case unknownEvent(NotificationSourceEvent)
    /// Attributes arrived for a notification of the model.
    case attributes(NotificationAttributesResponse)
    /// App attributes arrived; cached for the rest of the session.
    case appAttributes(AppAttributesResponse)
    /// The session ended; every identifier and fetched value is gone.
    case sessionEnded(SessionEndReason)
    /// Bytes from the NP that were dropped (a malformed event, an unsolicited response).
    case protocolError(DecodingError)
    /// Subscribing to Data Source failed: fetches are unavailable in this session.
    case dataSourceUnavailable(ATTResult)
    /// With a display policy: the notification can be shown.
    case ready(DisplayedNotification)
    /// With a display policy: a notification already shown changed.
    case updated(DisplayedNotification)
    /// With a display policy: its attributes could not be fetched (it is
    /// not shown; the session goes on).
    case displayFailed(NotificationUID, ConsumerError)
    /// With a display policy: the notification is not fetched (its
    /// category, its app or Silent ones are hidden, or it is past
    /// `maximumPreExisting`), so never told `.ready`.
    case hidden(NotificationUID)
    /// Whether notifications reach the accessory changed.
    case health(ConsumerHealth)

    /// The engine's event as the application meets it; nil for a request's
    /// completion (`ConsumerEvent.completed`), which resumes its request.
    public init?(_ event: ConsumerEvent) {
        switch event {
        case .sessionStarted: self = .sessionStarted
        case .added(let notification): self = .added(notification)
        case .modified(let notification): self = .modified(notification)
        case .removed(let notification): self = .removed(notification)
        case .unknownEvent(let event): self = .unknownEvent(event)
        case .attributes(let response): self = .attributes(response)
        case .appAttributes(let response): self = .appAttributes(response)
        case .completed: return nil
        case .sessionEnded(let reason): self = .sessionEnded(reason)
        case .protocolError(let error): self = .protocolError(error)
        case .dataSourceUnavailable(let result): self = .dataSourceUnavailable(result)
        case .ready(let notification, let appName): self = .ready(DisplayedNotification(notification, appName: appName))
        case .updated(let notification, let appName): self = .updated(DisplayedNotification(notification, appName: appName))
        case .displayFailed(let uid, let error): self = .displayFailed(uid, error)
        case .hidden(let uid): self = .hidden(uid)
        case .health(let health): self = .health(health)
        }
    }

    /// The event as the engine told it (JSON and logs share the engine's form).
    public var consumerEvent: ConsumerEvent {
        switch self {
        case .sessionStarted: .sessionStarted
        case .added(let notification): .added(notification)
        case .modified(let notification): .modified(notification)
        case .removed(let notification): .removed(notification)
        case .unknownEvent(let event): .unknownEvent(event)
        case .attributes(let response): .attributes(response)
        case .appAttributes(let response): .appAttributes(response)
        case .sessionEnded(let reason): .sessionEnded(reason)
        case .protocolError(let error): .protocolError(error)
        case .dataSourceUnavailable(let result): .dataSourceUnavailable(result)
        case .ready(let shown): .ready(shown.notification, appName: shown.appName.map { AttributeValue($0) })
        case .updated(let shown): .updated(shown.notification, appName: shown.appName.map { AttributeValue($0) })
        case .displayFailed(let uid, let error): .displayFailed(uid, error)
        case .hidden(let uid): .hidden(uid)
        case .health(let health): .health(health)
        }
    }
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
