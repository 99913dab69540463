// The vocabulary of the Consumer engine: what it is asked, what it answers,
// and the session model it keeps.

/// Names one application request to a `Consumer`; echoed when it ends.
public struct ConsumerRequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// An application request as the engine took it: its ID, which its
/// `.completed` event echoes, and the actions to perform now (a request
/// that fails at once has its `.completed` among them).
public struct ConsumerRequest: Hashable, Sendable {
    public var id: ConsumerRequestID
    public var actions: [ConsumerAction]

    public init(id: ConsumerRequestID, actions: [ConsumerAction]) {
        self.id = id
        self.actions = actions
    }
}

/// What the Consumer engine asks its caller to do, in order.
public enum ConsumerAction: Hashable, Sendable {
    /// Write the characteristic's CCCD to enable notifications; answer with `subscriptionCompleted`.
    case subscribe(ANCSCharacteristic)
    /// Write the CCCD to disable notifications (no answer needed).
    case unsubscribe(ANCSCharacteristic)
    /// Write with response to the Control Point; answer with `writeCompleted(token, ...)`.
    case writeControlPoint([UInt8], WriteToken)
    /// Tell the application.
    case emit(ConsumerEvent)
}

/// Why a session ended (spec: "Sessions": nothing survives a session).
public enum SessionEndReason: Hashable, Sendable {
    case linkDown
    case unsubscribed
    case serviceUnpublished
    /// Subscribing to Notification Source failed with this result.
    case subscriptionFailed(ATTResult)
    /// The consumer subscribes again (`ConsumerHealth.resubscribing`): a new
    /// session follows, and the phone announces its notifications anew.
    case resubscribing

    /// The reason's name as an identifier: `linkDown`, `unsubscribed`,
    /// `serviceUnpublished`, `subscriptionFailed`, `resubscribing` (JSON).
    public var identifier: String {
        switch self {
        case .linkDown: "linkDown"
        case .unsubscribed: "unsubscribed"
        case .serviceUnpublished: "serviceUnpublished"
        case .subscriptionFailed: "subscriptionFailed"
        case .resubscribing: "resubscribing"
        }
    }
}

/// Whether notifications reach the accessory, as far as the consumer can
/// tell, and what the person has to do when they do not. Told as
/// `ConsumerEvent.health` on each change (docs/REAL-IPHONE.md: "When notifications stop").
public enum ConsumerHealth: Hashable, Sendable {
    /// Nothing says otherwise. Told after another state: recovered.
    case healthy
    /// The phone refused a subscription (or a Control Point write) with
    /// this ATT error, typically 0x05 Insufficient Authentication or 0x08
    /// Insufficient Authorization: it waits for pairing, or for the person
    /// to allow the accessory. The consumer asks again after
    /// `ConsumerConfiguration.retryInterval`, then after twice as long each
    /// time, up to 16 × `retryInterval`.
    case waitingForPermission(ANCSCharacteristic, ATTErrorCode)
    /// Control Point writes were refused with 0x03 Write Not Permitted twice
    /// in a row: "Share System Notifications" is off for this accessory on
    /// the iPhone (Settings › Bluetooth › ⓘ), or its prompt is still open.
    /// The consumer probes after the retry interval, backing off as for a
    /// refusal (`waitingForPermission`), and shows
    /// notifications once sharing is on.
    case notShared
    /// Writing both subscriptions again (off, then on), and why.
    case resubscribing(ResubscribeReason)
    /// The phone no longer has this accessory's bond (the reconnection
    /// could not encrypt): the host drops its stale bond and pairs again.
    case bondLost
}

/// Why the consumer subscribes again on a link that stays up.
public enum ResubscribeReason: Hashable, Sendable {
    /// The liveness probe was not answered by its deadline, or more
    /// requests than the pipeline holds went unanswered (the phone takes
    /// the writes, and its Data Source says nothing).
    case probeUnanswered
    /// The probe, which asks for the UID after the highest announced, got
    /// its attributes: the phone holds a notification Notification Source
    /// never announced (it went quiet while the Control Point answers).
    case missedNotification
    /// Nothing came on Notification Source for `ConsumerConfiguration.silenceLimit`.
    case notificationSourceSilent
    /// A Control Point write was answered 0xFD (CCCD improperly configured):
    /// the phone holds no subscription of this accessory's.
    case subscriptionLost
    /// A Control Point write was answered again after "not shared": the
    /// phone's notifications are asked for anew.
    case sharingRestored
}

extension ConsumerHealth {
    /// The state's name as an identifier: `healthy`, `waitingForPermission`,
    /// `notShared`, `resubscribing`, `bondLost`.
    public var identifier: String {
        switch self {
        case .healthy: "healthy"
        case .waitingForPermission: "waitingForPermission"
        case .notShared: "notShared"
        case .resubscribing: "resubscribing"
        case .bondLost: "bondLost"
        }
    }

    /// What the person does on the iPhone, or nil when the accessory
    /// recovers by itself.
    public var remedy: String? {
        switch self {
        case .healthy, .resubscribing:
            nil
        case .notShared:
            "on the iPhone: Settings › Bluetooth › ⓘ next to this accessory › turn on Share System Notifications"
        case .waitingForPermission(_, .insufficientAuthorization):
            // The link is encrypted: the person has not allowed notifications yet.
            "on the iPhone: allow notifications for this accessory (its prompt, or Settings › Bluetooth › ⓘ › Share System Notifications)"
        case .waitingForPermission:
            // Insufficient Authentication or Encryption: not paired; the pairing was declined or not answered.
            "on the iPhone: accept this accessory's pairing request (declined or not answered: it is asked again), then allow notifications"
        case .bondLost:
            "the iPhone forgot this accessory: accept its pairing request again"
        }
    }
}

extension ResubscribeReason {
    /// The reason's name as an identifier (`probeUnanswered`, ...).
    public var identifier: String {
        switch self {
        case .probeUnanswered: "probeUnanswered"
        case .missedNotification: "missedNotification"
        case .notificationSourceSilent: "notificationSourceSilent"
        case .subscriptionLost: "subscriptionLost"
        case .sharingRestored: "sharingRestored"
        }
    }
}

/// Everything the application hears from the Consumer engine.
public enum ConsumerEvent: Hashable, Sendable {
    /// Notification Source subscription is going out: a new session's model starts empty.
    case sessionStarted
    /// An iOS notification was added (PreExisting ones at session start included).
    case added(ConsumerNotification)
    case modified(ConsumerNotification)
    /// Removed; the notification as it was last known. Also emitted when the
    /// model, full (`maximumNotifications`), drops its oldest notification.
    case removed(ConsumerNotification)
    /// An event with a reserved EventID, passed through unchanged.
    case unknownEvent(NotificationSourceEvent)
    /// Attributes arrived for a notification of the model (requested or
    /// fetched eagerly); the model holds them. An answer about a notification
    /// the model does not hold comes only as its request's `.completed` (the
    /// liveness probe's, as nothing).
    case attributes(NotificationAttributesResponse)
    /// App attributes arrived; cached for the rest of the session.
    case appAttributes(AppAttributesResponse)
    /// An application request ended: exactly once per request.
    case completed(ConsumerRequestID, ConsumerResult)
    /// The session ended; every identifier and fetched value is gone.
    case sessionEnded(SessionEndReason)
    /// Bytes from the NP that were dropped (a malformed event, an unsolicited response).
    case protocolError(DecodingError)
    /// Subscribing to Data Source failed: fetches are unavailable in this session.
    case dataSourceUnavailable(ATTResult)
    /// With eager attributes: the notification can be shown. Its attributes
    /// are in, and its app's DisplayName when the NP gave one (asked once per
    /// app and session). Told once per notification and session (again only
    /// if it is Added again).
    case ready(ConsumerNotification, appName: AttributeValue?)
    /// With eager attributes: a notification already shown was Modified and
    /// fetched again.
    case updated(ConsumerNotification, appName: AttributeValue?)
    /// With eager attributes: the notification's attributes could not be
    /// fetched (not told for a notification removed or a session ended first).
    case displayFailed(NotificationUID, ConsumerError)
    /// With eager attributes: the notification is not fetched, so not told
    /// `.ready`: the configuration hides its category, its app or Silent
    /// ones, or it is past `maximumPreExisting`. It stays in the model. Told
    /// when the display passes it over: again after each Modified event.
    case hidden(NotificationUID)
    /// Whether notifications reach the accessory changed (`Consumer.health`).
    case health(ConsumerHealth)
}

/// How an application request ended.
public enum ConsumerResult: Hashable, Sendable {
    case success(ConsumerResponse)
    case failure(ConsumerError)

    public var error: ConsumerError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

public enum ConsumerResponse: Hashable, Sendable {
    case notificationAttributes(NotificationAttributesResponse)
    case appAttributes(AppAttributesResponse)
    /// The NP accepted a Perform Notification Action.
    case actionPerformed
}

/// Why an application request failed.
public enum ConsumerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// 0xA0: the NP did not recognize the command.
    case unknownCommand
    /// 0xA1: the NP found the command malformed.
    case invalidCommand
    /// 0xA2: the NotificationUID or AppIdentifier names nothing on the NP.
    case invalidParameter
    /// 0xA3: the NP did not perform the action.
    case actionFailed
    /// Another ATT error answered the write (0x05 Insufficient Authentication, say).
    case att(ATTErrorCode)
    /// The transport failed the write without an ATT answer.
    case transportFailure
    /// The response did not match the request, or was malformed.
    case invalidResponse(DecodingError)
    case timedOut
    case cancelled
    /// The session ended before the request did.
    case sessionEnded
    /// No session: the link is down or Notification Source is not subscribed.
    case notConnected
    /// The NP offers no Data Source (or subscribing to it failed): nothing can be fetched.
    case dataSourceUnavailable
    /// The notification's flags do not announce this action; the link was not touched.
    case actionNotAvailable
    /// An action on a UID this session has not announced (or already
    /// removed): nothing tells which actions it has, so nothing was sent.
    case unknownNotification
    /// The command cannot be encoded (an AppIdentifier with NUL, too long for one write).
    case encoding(EncodingError)
    /// More requests are outstanding than the configuration allows.
    case tooManyRequests
    /// The notification was removed before the request was written: it
    /// names nothing on the NP any more, so the request was dropped.
    case notificationRemoved

    init(_ result: ATTResult) {
        switch result {
        case .success: self = .transportFailure  // not reached: success is not an error
        case .transportFailure: self = .transportFailure
        case .attError(let code):
            switch code {
            case .unknownCommand: self = .unknownCommand
            case .invalidCommand: self = .invalidCommand
            case .invalidParameter: self = .invalidParameter
            case .actionFailed: self = .actionFailed
            default: self = .att(code)
            }
        }
    }

    public var description: String {
        switch self {
        case .unknownCommand: Self.ancs(.unknownCommand)
        case .invalidCommand: Self.ancs(.invalidCommand)
        case .invalidParameter: Self.ancs(.invalidParameter)
        case .actionFailed: Self.ancs(.actionFailed)
        case .att(let code): "\(code)"
        case .transportFailure: "transport failure"
        case .invalidResponse(let error): "invalid response: \(error)"
        case .timedOut: "timed out"
        case .cancelled: "cancelled"
        case .sessionEnded: "session ended"
        case .notConnected: "not connected"
        case .dataSourceUnavailable: "Data Source unavailable"
        case .actionNotAvailable: "the notification offers no such action"
        case .unknownNotification: "no notification with this UID in this session"
        case .encoding(let error): "\(error)"
        case .tooManyRequests: "too many requests outstanding"
        case .notificationRemoved: "the notification was removed before the request was written"
        }
    }

    /// An ANCS code's words from the code table: `unknown command (ANCS 0xA0)`.
    private static func ancs(_ code: ATTErrorCode) -> String {
        let hex = "ANCS 0x" + Hex.string(code.rawValue, uppercase: true)
        #if hasFeature(Embedded)
        return hex
        #else
        return "\(code.phrase ?? "") (\(hex))"
        #endif
    }
}

/// One live iOS notification as the consumer knows it in this session.
public struct ConsumerNotification: Hashable, Sendable {
    public var uid: NotificationUID
    public var eventFlags: EventFlags
    public var categoryID: CategoryID
    public var categoryCount: UInt8
    /// Announced with PreExisting: it existed before the session started.
    public var isPreExisting: Bool
    /// Attributes fetched so far, one per id, latest value.
    public var attributes: [NotificationAttribute]

    public init(uid: NotificationUID, eventFlags: EventFlags, categoryID: CategoryID, categoryCount: UInt8, isPreExisting: Bool, attributes: [NotificationAttribute] = []) {
        self.uid = uid
        self.eventFlags = eventFlags
        self.categoryID = categoryID
        self.categoryCount = categoryCount
        self.isPreExisting = isPreExisting
        self.attributes = attributes
    }

    public subscript(id: NotificationAttributeID) -> AttributeValue? { attributes.value(for: id) }

    public var appIdentifier: String? { self[.appIdentifier]?.string }

    /// What a Modified event changes: the flags and the category.
    mutating func take(_ event: NotificationSourceEvent) {
        eventFlags = event.eventFlags
        categoryID = event.categoryID
        categoryCount = event.categoryCount
    }
}

/// How the consumer behaves; every field has a sensible default.
public struct ConsumerConfiguration: Hashable, Sendable {
    /// A request whose write went out and that has not ended this long
    /// after fails with `timedOut` (counted from its write: time spent queued
    /// behind other requests is not charged to it). Default 10 seconds.
    public var requestTimeout: Duration {
        get { .nanoseconds(requestNanoseconds) }
        set { requestNanoseconds = Timestamp.nanoseconds(newValue) }
    }
    /// Requests whose Control Point write went out and whose response has not
    /// yet fully arrived. 1 waits for each response before the next write.
    public var pipeliningDepth: Int
    /// Attributes fetched for every Added notification without being asked,
    /// and again for a Modified one (`refreshOnModified`), then told as
    /// `.ready` / `.updated` ("ready to show"); empty means lazy (the spec's
    /// recommendation). These fetches use no application request: they are
    /// written when the application has nothing queued, and are bounded by
    /// the model (`maximumNotifications`).
    public var eagerAttributes: [NotificationAttributeRequest]
    /// With eager attributes: also fetch the app's display name when its
    /// AppIdentifier is first seen in the session (not again after the NP
    /// answered 0xA2 for it in this session).
    public var eagerAppNames: Bool
    /// With eager attributes: fetch a Modified notification again and tell
    /// `.updated` (a burst of Modified events costs one fetch).
    public var refreshOnModified: Bool
    /// With eager attributes: notifications of these categories are not
    /// fetched, so never told `.ready` (they are in the model, told
    /// `.added`, `.modified` and `.removed` as any other).
    public var hiddenCategories = CategorySet(rawValue: 0)
    /// With eager attributes: whether notifications with the Silent flag
    /// are fetched and told `.ready` (when false they stay in the model
    /// unfetched, as a hidden category's).
    public var fetchesSilent = true
    /// Whether the model keeps a notification's attributes once it is shown.
    /// True (the default): `notification(_:)`, `.modified` and `.removed`
    /// carry every attribute fetched in the session. False (the
    /// `microcontroller` preset, and the C API, which reads none of them):
    /// the model holds a notification's values only while the display needs
    /// them (its fetch written and not yet told `.ready` or `.updated`, or
    /// its app's name being asked); after that, and from an application's
    /// fetch of a notification the display is not fetching (told as
    /// `.attributes` and in its `.completed`), they are not kept. A watch
    /// copies what it shows: the heap then holds the few responses the
    /// display is working on, not one per live notification.
    public var keepsAttributes = true
    /// With eager attributes: notifications of these apps are not fetched
    /// (they stay in the model unfetched, as a hidden category's). Each is
    /// an AppIdentifier's bytes, matched exactly, as the phone sends them
    /// (`hide(app:)` adds one from a `String`). The app is known only from
    /// the phone: a notification whose AppIdentifier the session does not
    /// know yet is first asked for its AppIdentifier alone, then, when its
    /// app is not hidden, for `eagerAttributes` (two round trips instead of
    /// one, and only when this list is not empty).
    public var hiddenApps: [[UInt8]] = []
    /// With eager attributes: at most this many PreExisting notifications
    /// (the phone's backlog at a session's start) are fetched in a session,
    /// the newest first (as they are known); the others stay in the model
    /// unfetched. Live notifications always come before them.
    public var maximumPreExisting = Int.max
    /// Live notifications kept in the model; beyond it the oldest is dropped
    /// (and emitted as `removed`).
    public var maximumNotifications: Int
    /// App attribute responses cached per session, counting the apps the
    /// NP answered 0xA2 for (not asked again while cached); beyond it the
    /// oldest goes.
    public var maximumCachedApps: Int
    /// Application requests waiting or outstanding at once, each caller
    /// counted (identical requests share one command but not this budget);
    /// beyond it new ones fail with `tooManyRequests`.
    public var maximumRequests: Int
    /// Longest value accepted for an attribute asked without a max length.
    public var unlimitedValueLength: Int
    /// Liveness: after this long with nothing heard from the phone and
    /// nothing in flight, write a probe (Get Notification Attributes for the
    /// UID after the highest announced, which is not live: a working phone
    /// answers 0xA2). Unanswered by `requestTimeout`, or answered with the
    /// attributes of a notification never announced, the consumer
    /// subscribes again.
    /// Default 5 minutes (BENCHMARKS.md section 2: what a longer interval
    /// misses, and what this one costs on the air); `.zero`: no probe.
    public var probeInterval: Duration {
        get { .nanoseconds(probeNanoseconds) }
        set { probeNanoseconds = Timestamp.nanoseconds(newValue) }
    }
    /// With nothing on Notification Source for this long, subscribe again.
    /// Default 6 hours; `.zero`: never.
    public var silenceLimit: Duration {
        get { .nanoseconds(silenceNanoseconds) }
        set { silenceNanoseconds = Timestamp.nanoseconds(newValue) }
    }
    /// The wait, after the phone's last answer, before asking again what it
    /// refused or what failed: a subscription (written again), or Control
    /// Point writes (a probe). Each retry of the same state waits twice as
    /// long as the one before, up to 16 × this (a new state or a new link
    /// starts again from it). Default 15 seconds; `.zero`: never asked again.
    public var retryInterval: Duration {
        get { .nanoseconds(retryNanoseconds) }
        set { retryNanoseconds = Timestamp.nanoseconds(newValue) }
    }
    // Kept as nanoseconds (set as properties, not through `init`): the
    // engine compares them with timestamps as they are, and a firmware
    // keeping the defaults links no Duration arithmetic for them.
    // (A `Duration` made from a firmware's run-time value, as the C API's
    // configuration gives it, links 1.2 KB of 128-bit arithmetic to read it.)
    var requestNanoseconds: Int64 = 10 * 1_000_000_000
    var probeNanoseconds: Int64 = 5 * 60 * 1_000_000_000
    var silenceNanoseconds: Int64 = 6 * 3600 * 1_000_000_000
    var retryNanoseconds: Int64 = 15 * 1_000_000_000

    public init(
        requestTimeout: Duration = .seconds(10),
        pipeliningDepth: Int = 1,
        eagerAttributes: [NotificationAttributeRequest] = [],
        eagerAppNames: Bool = true,
        refreshOnModified: Bool = true,
        maximumNotifications: Int = 512,
        maximumCachedApps: Int = 128,
        maximumRequests: Int = 64,
        unlimitedValueLength: Int = 1024
    ) {
        // (The default kept as it is: a firmware that keeps it links no conversion.)
        if requestTimeout != .seconds(10) { requestNanoseconds = Timestamp.nanoseconds(requestTimeout) }
        self.pipeliningDepth = max(1, pipeliningDepth)
        self.eagerAttributes = eagerAttributes
        self.eagerAppNames = eagerAppNames
        self.refreshOnModified = refreshOnModified
        self.maximumNotifications = max(1, maximumNotifications)
        self.maximumCachedApps = max(1, maximumCachedApps)
        self.maximumRequests = max(1, maximumRequests)
        self.unlimitedValueLength = unlimitedValueLength
    }

    public static var `default`: ConsumerConfiguration { ConsumerConfiguration() }

    /// Adds an app to `hiddenApps` by its AppIdentifier (its UTF-8 bytes).
    public mutating func hide(app appIdentifier: String) {
        hiddenApps.append(Array(appIdentifier.utf8))
    }

    /// For a microcontroller: ready to show (`displayAttributes`, app
    /// names), with every table small and every value bounded, so that the
    /// heap a session can take has a stated worst case whatever the phone
    /// sends: 16 live notifications, 8 apps' names, 4 application requests,
    /// 128 bytes for a value asked without a max length (AppIdentifier,
    /// Date, an app's name), and a notification's values kept only until
    /// they are shown (`keepsAttributes` false). The worst case on a 32-bit target is in
    /// BENCHMARKS.md section 8 and `ancs.h`; the firmware test image drives
    /// it and fails past its bound (`firmware/test/WorstCase.swift`).
    public static var microcontroller: ConsumerConfiguration {
        var preset = ConsumerConfiguration(
            eagerAttributes: displayAttributes, maximumNotifications: 16, maximumCachedApps: 8,
            maximumRequests: 4, unlimitedValueLength: 128)
        preset.keepsAttributes = false
        return preset
    }

    /// What a small display shows of each notification (the firmware's and
    /// the C API's default): app, title, message and date, each within a
    /// screen's reach. The one list of the project's: the runtime's
    /// `DisplayPolicy.standardAttributes` is this one with the subtitle and
    /// the action labels added.
    public static let displayAttributes: [NotificationAttributeRequest] = [
        NotificationAttributeRequest(.appIdentifier),
        NotificationAttributeRequest(.title, maxLength: 64),
        NotificationAttributeRequest(.message, maxLength: 256),
        NotificationAttributeRequest(.date),
    ]
}

/// A set of Notification Source categories (`ConsumerConfiguration.hiddenCategories`),
/// one bit per CategoryID (0–31).
public struct CategorySet: Hashable, Sendable, ExpressibleByArrayLiteral {
    /// Bit n: CategoryID n.
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public init(_ categories: [CategoryID]) {
        rawValue = 0
        for category in categories where category.rawValue < 32 { rawValue |= 1 << UInt32(category.rawValue) }
    }

    public init(arrayLiteral categories: CategoryID...) { self.init(categories) }

    public func contains(_ category: CategoryID) -> Bool {
        category.rawValue < 32 && rawValue & (1 << UInt32(category.rawValue)) != 0
    }
}
