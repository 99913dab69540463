// The vocabulary of the Provider engine: the iOS notifications it publishes,
// what it asks its caller to do, and what it tells the application.

/// A notification the provider added: its new NotificationUID and the
/// actions that announce it (Added) to every consumer in a session.
public struct ProviderAdded: Hashable, Sendable {
    public var uid: NotificationUID
    public var actions: [ProviderAction]

    public init(uid: NotificationUID, actions: [ProviderAction]) {
        self.uid = uid
        self.actions = actions
    }
}

/// What performing a notification action does on the NP (spec: "Notification
/// actions": the effect is the NP's choice), configurable per notification so
/// a consumer can be tested against every outcome.
public enum ProviderActionEffect: Hashable, Sendable, CustomStringConvertible {
    /// As iOS does: on an incoming call the positive action (answer) removes
    /// it and the negative action (decline) removes it and adds a missed
    /// call; on any other category the negative action (clear) removes it and
    /// the positive action leaves it to the application.
    case automatic
    /// The action is performed; the notification stays as it is.
    case keep
    /// The action is performed and the notification is removed.
    case remove
    /// The call is removed and a missed call (same app, same title) is added.
    case removeAndAddMissedCall
    /// The action is not performed: the write fails with 0xA3 "Action failed".
    case fail

    /// The effect `automatic` stands for, for this action on a notification
    /// of this category; any other effect is returned unchanged.
    public func resolved(for action: ActionID, in category: CategoryID) -> ProviderActionEffect {
        guard self == .automatic else { return self }
        if category == .incomingCall {
            return action == .negative ? .removeAndAddMissedCall : .remove
        }
        return action == .negative ? .remove : .keep
    }

    public var description: String {
        switch self {
        case .automatic: "automatic"
        case .keep: "keep"
        case .remove: "remove"
        case .removeAndAddMissedCall: "removeAndAddMissedCall"
        case .fail: "fail"
        }
    }
}

/// One iOS notification as the NP publishes it: its Notification Source
/// fields and the attributes a consumer can fetch.
///
/// An attribute left nil was never set and is answered with Length 0 (spec:
/// "An empty or missing attribute has Length 0").
public struct ProviderNotification: Hashable, Sendable {
    /// AppIdentifier: the bundle id, e.g. `com.apple.mobilemail`.
    public var appIdentifier: String
    public var categoryID: CategoryID
    /// EventFlags as announced: Silent, Important, PositiveAction,
    /// NegativeAction, and reserved bits, passed on unchanged. PreExisting is
    /// the provider's to set (at the start of a session) and ignored here.
    /// An action can be performed only when its flag announces it.
    public var flags: EventFlags
    public var title: String?
    public var subtitle: String?
    /// Message; MessageSize is its length in bytes.
    public var message: String?
    public var date: ANCSDate?
    public var positiveActionLabel: String?
    public var negativeActionLabel: String?
    /// What Perform Notification Action with ActionID Positive does.
    public var positiveActionEffect: ProviderActionEffect
    /// What Perform Notification Action with ActionID Negative does.
    public var negativeActionEffect: ProviderActionEffect

    public init(
        appIdentifier: String,
        categoryID: CategoryID = .other,
        flags: EventFlags = [],
        title: String? = nil,
        subtitle: String? = nil,
        message: String? = nil,
        date: ANCSDate? = nil,
        positiveActionLabel: String? = nil,
        negativeActionLabel: String? = nil,
        positiveActionEffect: ProviderActionEffect = .automatic,
        negativeActionEffect: ProviderActionEffect = .automatic
    ) {
        self.appIdentifier = appIdentifier
        self.categoryID = categoryID
        self.flags = flags
        self.title = title
        self.subtitle = subtitle
        self.message = message
        self.date = date
        self.positiveActionLabel = positiveActionLabel
        self.negativeActionLabel = negativeActionLabel
        self.positiveActionEffect = positiveActionEffect
        self.negativeActionEffect = negativeActionEffect
    }

    /// The value of a notification attribute as the NP holds it, before any
    /// max length is applied; nil when never set or reserved (Length 0).
    public func value(of id: NotificationAttributeID) -> String? {
        switch id {
        case .appIdentifier: appIdentifier
        case .title: title
        case .subtitle: subtitle
        case .message: message
        // Decimal ASCII digits of the full length, independent of any max length.
        case .messageSize: message.map { "\($0.utf8.count)" }
        case .date: date?.wireValue
        case .positiveActionLabel: positiveActionLabel
        case .negativeActionLabel: negativeActionLabel
        default: nil
        }
    }

    /// The effect configured for an action; `automatic` for a reserved ActionID.
    public func effect(of action: ActionID) -> ProviderActionEffect {
        switch action {
        case .positive: positiveActionEffect
        case .negative: negativeActionEffect
        default: .automatic
        }
    }
}

/// Tuning of the Provider engine.
public struct ProviderConfiguration: Hashable, Sendable {
    /// The longest Data Source response, in bytes: Title, Subtitle and
    /// Message are cut (after the max length asked) so the response fits,
    /// which bounds what one 512-byte Control Point write can make the
    /// provider send. Every requested tuple is still present and the other
    /// attributes (AppIdentifier, MessageSize, Date, action labels) are never
    /// cut, so a response with very many tuples may exceed it by their 3-byte
    /// headers and those values.
    public var maximumResponseLength: Int
    /// The NotificationUID of the first notification added; each later one
    /// gets the next value.
    public var firstNotificationUID: UInt32

    public init(maximumResponseLength: Int = 16_384, firstNotificationUID: UInt32 = 0) {
        self.maximumResponseLength = max(0, maximumResponseLength)
        self.firstNotificationUID = firstNotificationUID
    }

    public static let `default` = ProviderConfiguration()
}

/// What the Provider engine asks its caller to do, in order.
public enum ProviderAction: Hashable, Sendable {
    /// Send one GATT notification of this characteristic to this consumer.
    case notify(ConnectionID, ANCSCharacteristic, [UInt8])
    /// Answer that consumer's pending Control Point write.
    case respond(ConnectionID, ATTResult)
    /// Tell the application.
    case emit(ProviderEvent)
}

/// Why a Control Point write was answered with an error, and with which code.
public enum ProviderRejection: Hashable, Sendable, CustomStringConvertible {
    /// The write came from a link the provider was not told about (ATT 0x0E Unlikely Error).
    case unknownConnection
    /// The command could not be decoded: 0xA0 for an unknown CommandID, 0xA1 otherwise.
    case malformed(DecodingError)
    /// Longer than an ATT write can be (0xA1 Invalid command).
    case commandTooLong(length: Int)
    /// A Get … Attributes command from a consumer not subscribed to Data
    /// Source, where its response would go (ATT 0xFD CCCD Improperly Configured).
    case dataSourceNotSubscribed
    /// The NotificationUID names no active notification (0xA2 Invalid parameter).
    case unknownNotification(NotificationUID)
    /// The AppIdentifier names no app the provider knows (0xA2 Invalid parameter).
    case unknownApp(String)
    /// A reserved ActionID names no action (0xA2 Invalid parameter).
    case unknownAction(NotificationUID, ActionID)
    /// The notification's flags do not announce this action (0xA3 Action failed).
    case actionNotAnnounced(NotificationUID, ActionID)
    /// The action's configured effect is `fail` (0xA3 Action failed).
    case actionFailed(NotificationUID, ActionID)
    /// Sharing is off for the accessories (ATT 0x03 Write Not Permitted, as an iPhone answers).
    case notShared

    /// The ATT error the write is answered with.
    public var code: ATTErrorCode {
        switch self {
        case .unknownConnection: .unlikelyError
        case .malformed(let error): error.controlPointErrorCode
        case .commandTooLong: .invalidCommand
        case .dataSourceNotSubscribed: .cccdImproperlyConfigured
        case .unknownNotification, .unknownApp, .unknownAction: .invalidParameter
        case .actionNotAnnounced, .actionFailed: .actionFailed
        case .notShared: .writeNotPermitted
        }
    }

    public var description: String {
        switch self {
        case .unknownConnection: "write from an unknown connection"
        case .malformed(let error): "malformed command: \(error)"
        case .commandTooLong(let length): "command of \(length) bytes is longer than an ATT write (512)"
        case .dataSourceNotSubscribed: "Data Source is not subscribed: the response has nowhere to go"
        case .unknownNotification(let uid): "no active notification has uid \(uid)"
        case .unknownApp(let identifier): "unknown app \"\(identifier)\""
        case .unknownAction(let uid, let action): "uid \(uid): ActionID \(action.rawValue) is reserved"
        case .actionNotAnnounced(let uid, let action): "uid \(uid): its flags do not announce the \(action) action"
        case .actionFailed(let uid, let action): "uid \(uid): the \(action) action is configured to fail"
        case .notShared: "notifications are not shared with this accessory"
        }
    }
}

/// A Perform Notification Action the provider carried out.
public struct ProviderPerformedAction: Hashable, Sendable {
    public var connection: ConnectionID
    public var notificationUID: NotificationUID
    public var actionID: ActionID
    /// The effect applied (never `automatic` or `fail`).
    public var effect: ProviderActionEffect
    /// The missed call added by `removeAndAddMissedCall`, if one could be added.
    public var missedCallUID: NotificationUID?

    public init(connection: ConnectionID, notificationUID: NotificationUID, actionID: ActionID, effect: ProviderActionEffect, missedCallUID: NotificationUID? = nil) {
        self.connection = connection
        self.notificationUID = notificationUID
        self.actionID = actionID
        self.effect = effect
        self.missedCallUID = missedCallUID
    }
}

/// Everything the application hears from the Provider engine.
public enum ProviderEvent: Hashable, Sendable {
    /// The consumer subscribed to Notification Source: its session started
    /// and this many PreExisting notifications were announced.
    case sessionStarted(ConnectionID, preExisting: Int)
    /// The consumer unsubscribed from Notification Source or disconnected.
    case sessionEnded(ConnectionID)
    /// A Get Notification Attributes command was answered on Data Source.
    case notificationAttributesSent(ConnectionID, GetNotificationAttributes)
    /// A Get App Attributes command was answered on Data Source.
    case appAttributesSent(ConnectionID, GetAppAttributes)
    /// A consumer performed a notification action.
    case actionPerformed(ProviderPerformedAction)
    /// A Control Point write was answered with an error.
    case commandRejected(ConnectionID, ProviderRejection)
}

/// Why a local change to the notification center was refused.
public enum ProviderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No active notification has this NotificationUID.
    case unknownNotification(NotificationUID)
    /// Every NotificationUID after `firstNotificationUID` has been given out;
    /// none is ever reused.
    case notificationUIDsExhausted

    public var description: String {
        switch self {
        case .unknownNotification(let uid): "no active notification has uid \(uid)"
        case .notificationUIDsExhausted: "every NotificationUID has been given out; none is reused"
        }
    }
}
