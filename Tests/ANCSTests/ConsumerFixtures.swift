// What the Consumer tests share: fixtures built with the codec, and readers
// of the actions the engine returns.

import Testing
@testable import ANCS

// MARK: - Fixtures

let mailApp = "com.apple.mobilemail"
let phoneApp = "com.apple.mobilephone"

/// What a display asks when the user opens a notification.
let standardAttributes: [NotificationAttributeRequest] = [
    NotificationAttributeRequest(.appIdentifier),
    NotificationAttributeRequest(.title, maxLength: 64),
    NotificationAttributeRequest(.date),
]

let insufficientAuthentication = ATTResult.attError(.insufficientAuthentication)

extension ConsumerConfiguration {
    /// Without the liveness probe and the silence limit: the tests that
    /// predate them read `nextDeadline` as the requests' deadlines alone.
    var withoutLiveness: ConsumerConfiguration {
        var configuration = self
        configuration.probeInterval = .zero
        configuration.silenceLimit = .zero
        return configuration
    }
}

func at(milliseconds: Int64) -> Timestamp { Timestamp(.milliseconds(milliseconds)) }

func uid(_ raw: UInt32) -> NotificationUID { NotificationUID(raw) }

/// A Notification Source event as the NP sends it.
func sourceEvent(_ eventID: EventID, _ raw: UInt32, flags: EventFlags = [], category: CategoryID = .email, count: UInt8 = 1) -> [UInt8] {
    NotificationSourceEvent(eventID: eventID, eventFlags: flags, categoryID: category, categoryCount: count, notificationUID: uid(raw)).encode()
}

func standardCommand(_ raw: UInt32) -> ControlPointCommand {
    .getNotificationAttributes(GetNotificationAttributes(notificationUID: uid(raw), attributes: standardAttributes))
}

func displayNameCommand(_ app: String) -> ControlPointCommand {
    .getAppAttributes(GetAppAttributes(appIdentifier: app, attributes: [.displayName]))
}

/// The NP's answer to `standardAttributes`.
func standardResponse(_ raw: UInt32, app: String = mailApp, title: String = "Alice") -> NotificationAttributesResponse {
    NotificationAttributesResponse(notificationUID: uid(raw), attributes: [
        NotificationAttribute(.appIdentifier, AttributeValue(app)),
        NotificationAttribute(.title, AttributeValue(title)),
        NotificationAttribute(.date, "20140322T154200"),
    ])
}

func displayNameResponse(_ app: String, _ name: String) -> AppAttributesResponse {
    AppAttributesResponse(appIdentifier: app, attributes: [AppAttribute(.displayName, AttributeValue(name))])
}

/// A consumer whose session is up: link up, Data Source then Notification
/// Source subscribed (liveness off: `withoutLiveness`).
func sessionConsumer(_ configuration: ConsumerConfiguration = .default) -> Consumer {
    var consumer = Consumer(configuration: configuration.withoutLiveness)
    _ = consumer.linkUp(mtu: 23, at: .zero)
    _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
    _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
    return consumer
}

/// A consumer in a session that knows these notifications (Added, flags as given).
func sessionConsumer(_ configuration: ConsumerConfiguration = .default, with notifications: [(UInt32, EventFlags)]) -> Consumer {
    var consumer = sessionConsumer(configuration)
    for (raw, flags) in notifications {
        _ = consumer.received(notificationSource: sourceEvent(.added, raw, flags: flags), at: .zero)
    }
    return consumer
}

/// Feeds a response as the NP sends it: split into notifications of MTU − 3 bytes.
func deliver(_ response: DataSourceResponse, mtu: Int = 23, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    var actions: [ConsumerAction] = []
    for fragment in response.fragments(mtu: mtu) { actions += consumer.received(dataSource: fragment, at: now) }
    return actions
}

func deliver(_ response: NotificationAttributesResponse, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    deliver(.notificationAttributes(response), to: &consumer, at: now)
}

func deliver(_ response: AppAttributesResponse, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    deliver(.appAttributes(response), to: &consumer, at: now)
}

// MARK: - Reading actions

/// One Control Point write the engine asked for, decoded.
struct Write {
    var command: ControlPointCommand
    var bytes: [UInt8]
    var token: WriteToken
}

func writes(_ actions: [ConsumerAction]) throws -> [Write] {
    var result: [Write] = []
    for case .writeControlPoint(let bytes, let token) in actions {
        result.append(Write(command: try ControlPointCommand.decode(bytes), bytes: bytes, token: token))
    }
    return result
}

/// The one write in `actions`; fails the test when there is not exactly one.
func onlyWrite(_ actions: [ConsumerAction], sourceLocation: SourceLocation = #_sourceLocation) throws -> Write {
    let found = try writes(actions)
    try #require(found.count == 1, "expected exactly one Control Point write in \(actions)", sourceLocation: sourceLocation)
    return found[0]
}

func events(_ actions: [ConsumerAction]) -> [ConsumerEvent] {
    var result: [ConsumerEvent] = []
    for case .emit(let event) in actions { result.append(event) }
    return result
}

/// Every `.completed` for `id` in `actions`, in order.
func results(_ actions: [ConsumerAction], for id: ConsumerRequestID) -> [ConsumerResult] {
    var result: [ConsumerResult] = []
    for case .emit(.completed(let completed, let value)) in actions where completed == id { result.append(value) }
    return result
}

func completionCount(_ actions: [ConsumerAction]) -> Int {
    var count = 0
    for case .emit(.completed) in actions { count += 1 }
    return count
}

func sessionEndedCount(_ actions: [ConsumerAction]) -> Int {
    var count = 0
    for case .emit(.sessionEnded) in actions { count += 1 }
    return count
}

/// The DecodingError a request failed with as `.invalidResponse`, or nil.
func invalidResponse(_ results: [ConsumerResult]) -> DecodingError? {
    guard results.count == 1, case .failure(.invalidResponse(let error)) = results[0] else { return nil }
    return error
}
