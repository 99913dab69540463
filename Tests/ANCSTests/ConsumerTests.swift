// The Consumer engine (NC), driven through its inputs only, with hand-made
// bytes: Notification Source events and Data Source responses are built with
// the codec, Control Point writes are decoded back with
// `ControlPointCommand.decode`. Each test is named after the rule of the spec
// (or of the engine's contract) it checks. Time is an input: no test waits.

import Testing
@testable import ANCS

// MARK: - Fixtures

private let mailApp = "com.apple.mobilemail"
private let phoneApp = "com.apple.mobilephone"

/// What a display asks when the user opens a notification.
private let standardAttributes: [NotificationAttributeRequest] = [
    NotificationAttributeRequest(.appIdentifier),
    NotificationAttributeRequest(.title, maxLength: 64),
    NotificationAttributeRequest(.date),
]

private let insufficientAuthentication = ATTResult.attError(ATTErrorCode(rawValue: 0x05))

private func at(milliseconds: Int64) -> Timestamp { Timestamp(.milliseconds(milliseconds)) }

private func uid(_ raw: UInt32) -> NotificationUID { NotificationUID(raw) }

/// A Notification Source event as the NP sends it.
private func sourceEvent(_ eventID: EventID, _ raw: UInt32, flags: EventFlags = [], category: CategoryID = .email, count: UInt8 = 1) -> [UInt8] {
    NotificationSourceEvent(eventID: eventID, eventFlags: flags, categoryID: category, categoryCount: count, notificationUID: uid(raw)).encode()
}

private func standardCommand(_ raw: UInt32) -> ControlPointCommand {
    .getNotificationAttributes(GetNotificationAttributes(notificationUID: uid(raw), attributes: standardAttributes))
}

private func displayNameCommand(_ app: String) -> ControlPointCommand {
    .getAppAttributes(GetAppAttributes(appIdentifier: app, attributes: [.displayName]))
}

/// The NP's answer to `standardAttributes`.
private func standardResponse(_ raw: UInt32, app: String = mailApp, title: String = "Alice") -> NotificationAttributesResponse {
    NotificationAttributesResponse(notificationUID: uid(raw), attributes: [
        NotificationAttribute(.appIdentifier, AttributeValue(app)),
        NotificationAttribute(.title, AttributeValue(title)),
        NotificationAttribute(.date, "20140322T154200"),
    ])
}

private func displayNameResponse(_ app: String, _ name: String) -> AppAttributesResponse {
    AppAttributesResponse(appIdentifier: app, attributes: [AppAttribute(.displayName, AttributeValue(name))])
}

/// A consumer whose session is up: link up, Data Source then Notification Source subscribed.
private func sessionConsumer(_ configuration: ConsumerConfiguration = .default) -> Consumer {
    var consumer = Consumer(configuration: configuration)
    _ = consumer.linkUp(mtu: 23, at: .zero)
    _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
    _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
    return consumer
}

/// A consumer in a session that knows these notifications (Added, flags as given).
private func sessionConsumer(_ configuration: ConsumerConfiguration = .default, with notifications: [(UInt32, EventFlags)]) -> Consumer {
    var consumer = sessionConsumer(configuration)
    for (raw, flags) in notifications {
        _ = consumer.received(notificationSource: sourceEvent(.added, raw, flags: flags), at: .zero)
    }
    return consumer
}

/// Feeds a response as the NP sends it: split into notifications of MTU − 3 bytes.
private func deliver(_ response: DataSourceResponse, mtu: Int = 23, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    var actions: [ConsumerAction] = []
    for fragment in response.fragments(mtu: mtu) { actions += consumer.received(dataSource: fragment, at: now) }
    return actions
}

private func deliver(_ response: NotificationAttributesResponse, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    deliver(.notificationAttributes(response), to: &consumer, at: now)
}

private func deliver(_ response: AppAttributesResponse, to consumer: inout Consumer, at now: Timestamp = .zero) -> [ConsumerAction] {
    deliver(.appAttributes(response), to: &consumer, at: now)
}

// MARK: - Reading actions

/// One Control Point write the engine asked for, decoded.
private struct Write {
    var command: ControlPointCommand
    var bytes: [UInt8]
    var token: WriteToken
}

private func writes(_ actions: [ConsumerAction]) throws -> [Write] {
    var result: [Write] = []
    for case .writeControlPoint(let bytes, let token) in actions {
        result.append(Write(command: try ControlPointCommand.decode(bytes), bytes: bytes, token: token))
    }
    return result
}

/// The one write in `actions`; fails the test when there is not exactly one.
private func onlyWrite(_ actions: [ConsumerAction], sourceLocation: SourceLocation = #_sourceLocation) throws -> Write {
    let found = try writes(actions)
    try #require(found.count == 1, "expected exactly one Control Point write in \(actions)", sourceLocation: sourceLocation)
    return found[0]
}

private func events(_ actions: [ConsumerAction]) -> [ConsumerEvent] {
    var result: [ConsumerEvent] = []
    for case .emit(let event) in actions { result.append(event) }
    return result
}

/// Every `.completed` for `id` in `actions`, in order.
private func results(_ actions: [ConsumerAction], for id: ConsumerRequestID) -> [ConsumerResult] {
    var result: [ConsumerResult] = []
    for case .emit(.completed(let completed, let value)) in actions where completed == id { result.append(value) }
    return result
}

private func completionCount(_ actions: [ConsumerAction]) -> Int {
    var count = 0
    for case .emit(.completed) in actions { count += 1 }
    return count
}

private func sessionEndedCount(_ actions: [ConsumerAction]) -> Int {
    var count = 0
    for case .emit(.sessionEnded) in actions { count += 1 }
    return count
}

/// The DecodingError a request failed with as `.invalidResponse`, or nil.
private func invalidResponse(_ results: [ConsumerResult]) -> DecodingError? {
    guard results.count == 1, case .failure(.invalidResponse(let error)) = results[0] else { return nil }
    return error
}

// MARK: - Tests

/// The Consumer engine (NC), one section per part of the spec.
@Suite("Consumer")
struct ConsumerTests {

    // MARK: Setup

    @Test("Setup: subscribe Data Source before Notification Source; the session starts as Notification Source is subscribed")
    func subscribeDataSourceBeforeNotificationSource() {
        var consumer = Consumer()
        #expect(!consumer.isInSession)
        #expect(consumer.linkUp(mtu: 185, at: .zero) == [.subscribe(.dataSource)])
        #expect(consumer.mtu == 185)
        #expect(!consumer.isInSession)
        #expect(consumer.subscriptionCompleted(.dataSource, .success, at: .zero) == [.emit(.sessionStarted), .subscribe(.notificationSource)])
        #expect(consumer.isInSession)
        #expect(consumer.dataSourceAvailable)
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero) == [])
        #expect(consumer.isInSession)
    }

    @Test("GATT notifications may start the moment the NC subscribes: events before the subscription result are processed")
    func notificationsBeforeSubscriptionResult() throws {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        let added = consumer.received(notificationSource: sourceEvent(.added, 7, flags: [.preExisting]), at: .zero)
        #expect(added == [.emit(.added(ConsumerNotification(uid: uid(7), eventFlags: [.preExisting], categoryID: .email, categoryCount: 1, isPreExisting: true)))])
        // A request made now is written once Notification Source is subscribed.
        let (id, fetch) = consumer.fetchAttributes(standardAttributes, for: uid(7), at: .zero)
        #expect(fetch.isEmpty)
        let write = try onlyWrite(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero))
        #expect(write.command == standardCommand(7))
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let answered = deliver(standardResponse(7), to: &consumer)
        #expect(results(answered, for: id) == [.success(.notificationAttributes(standardResponse(7)))])
    }

    @Test("A failed Data Source subscription still starts a session, without fetches")
    func dataSourceSubscriptionFailed() throws {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        #expect(consumer.subscriptionCompleted(.dataSource, insufficientAuthentication, at: .zero)
            == [.emit(.sessionStarted), .emit(.dataSourceUnavailable(insufficientAuthentication)), .subscribe(.notificationSource)])
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero) == [])
        #expect(consumer.isInSession)
        #expect(!consumer.dataSourceAvailable)

        _ = consumer.received(notificationSource: sourceEvent(.added, 1, flags: [.negativeAction]), at: .zero)
        #expect(consumer.notifications[uid(1)] != nil)
        let (fetch, fetchActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        #expect(fetchActions == [.emit(.completed(fetch, .failure(.dataSourceUnavailable)))])
        let (app, appActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        #expect(appActions == [.emit(.completed(app, .failure(.dataSourceUnavailable)))])

        // Perform Notification Action has no Data Source response: it still works.
        let (action, actionActions) = consumer.performAction(.negative, on: uid(1), at: .zero)
        let write = try onlyWrite(actionActions)
        #expect(write.bytes == [0x02, 0x01, 0x00, 0x00, 0x00, 0x01])
        #expect(consumer.writeCompleted(write.token, .success, at: .zero) == [.emit(.completed(action, .success(.actionPerformed)))])

        // Only what was subscribed is unsubscribed.
        #expect(consumer.stop(at: .zero) == [.unsubscribe(.notificationSource), .emit(.sessionEnded(.unsubscribed))])
    }

    @Test("A failed Notification Source subscription ends the session")
    func notificationSourceSubscriptionFailed() {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        let (queued, _) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)

        let ended = consumer.subscriptionCompleted(.notificationSource, insufficientAuthentication, at: .zero)
        #expect(ended == [
            .emit(.completed(queued, .failure(.sessionEnded))),
            .emit(.sessionEnded(.subscriptionFailed(insufficientAuthentication))),
        ])
        #expect(!consumer.isInSession)
        #expect(consumer.notifications.isEmpty)
        let (late, lateActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        #expect(lateActions == [.emit(.completed(late, .failure(.notConnected)))])
    }

    @Test("Outside a session every request fails with notConnected and nothing is written")
    func requestsOutsideASession() {
        var consumer = Consumer()
        let (fetch, fetchActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        #expect(fetchActions == [.emit(.completed(fetch, .failure(.notConnected)))])
        let (app, appActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        #expect(appActions == [.emit(.completed(app, .failure(.notConnected)))])
        let (action, actionActions) = consumer.performAction(.positive, on: uid(1), at: .zero)
        #expect(actionActions == [.emit(.completed(action, .failure(.notConnected)))])
        #expect(Set([fetch, app, action]).count == 3)
        // Notification Source and Data Source bytes outside a session are not processed.
        #expect(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero) == [])
        #expect(consumer.received(dataSource: [0x00, 0x01, 0x00, 0x00, 0x00], at: .zero) == [])
        #expect(consumer.notifications.isEmpty)
    }

    @Test("ANCS may be unpublished: nothing is subscribed until it is published")
    func unpublishedAtLinkUp() {
        var consumer = Consumer()
        #expect(consumer.serviceChanged(published: false, at: .zero) == [])
        #expect(consumer.linkUp(mtu: 23, at: .zero) == [])
        #expect(!consumer.isInSession)
        #expect(consumer.serviceChanged(published: true, at: .zero) == [.subscribe(.dataSource)])
    }

    @Test("A subscription result that arrives after its session ended is ignored")
    func lateSubscriptionResult() {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        #expect(consumer.linkDown(at: .zero) == [])
        #expect(consumer.subscriptionCompleted(.dataSource, .success, at: .zero) == [])
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero) == [])
        #expect(!consumer.isInSession)
    }

    // MARK: Notification Source and the model

    @Test("Notification Source: Added, Modified and Removed keep the model current")
    func addedModifiedRemoved() {
        var consumer = sessionConsumer()
        // Real capture (spec): Added, flags Silent, category Other, count 1, UID 0x43.
        let added = consumer.received(notificationSource: [0x00, 0x01, 0x00, 0x01, 0x43, 0x00, 0x00, 0x00], at: .zero)
        let expectedAdded = ConsumerNotification(uid: uid(0x43), eventFlags: [.silent], categoryID: .other, categoryCount: 1, isPreExisting: false)
        #expect(added == [.emit(.added(expectedAdded))])
        #expect(consumer.notifications == [uid(0x43): expectedAdded])

        let modified = consumer.received(notificationSource: sourceEvent(.modified, 0x43, flags: [.important, .negativeAction], category: .social, count: 2), at: .zero)
        var expectedModified = expectedAdded
        expectedModified.eventFlags = [.important, .negativeAction]
        expectedModified.categoryID = .social
        expectedModified.categoryCount = 2
        #expect(modified == [.emit(.modified(expectedModified))])
        #expect(consumer.notifications == [uid(0x43): expectedModified])

        let removed = consumer.received(notificationSource: sourceEvent(.removed, 0x43, flags: [.important, .negativeAction], category: .social, count: 1), at: .zero)
        var expectedRemoved = expectedModified
        expectedRemoved.categoryCount = 1
        #expect(removed == [.emit(.removed(expectedRemoved))])
        #expect(consumer.notifications.isEmpty)
    }

    @Test("Notifications that existed when the session started carry PreExisting; reserved flag bits are kept")
    func preExisting() {
        var consumer = sessionConsumer()
        let flags = EventFlags(rawValue: 0b1110_0101)  // Silent, PreExisting and reserved bits 5–7
        _ = consumer.received(notificationSource: sourceEvent(.added, 1, flags: flags), at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 2, flags: [.silent]), at: .zero)
        #expect(consumer.notifications[uid(1)]?.isPreExisting == true)
        #expect(consumer.notifications[uid(1)]?.eventFlags.rawValue == 0b1110_0101)
        #expect(consumer.notifications[uid(2)]?.isPreExisting == false)
    }

    @Test("EventID 3–255 is reserved: passed through as an unknown event, the model untouched", arguments: [UInt8(3), 4, 128, 255])
    func reservedEventID(_ raw: UInt8) {
        var consumer = sessionConsumer(with: [(5, [])])
        let before = consumer.notifications
        let bytes = sourceEvent(EventID(rawValue: raw), 5, flags: [.important], category: .news, count: 9)
        let actions = consumer.received(notificationSource: bytes, at: .zero)
        #expect(actions == [.emit(.unknownEvent(NotificationSourceEvent(
            eventID: EventID(rawValue: raw), eventFlags: [.important], categoryID: .news, categoryCount: 9, notificationUID: uid(5))))])
        #expect(consumer.notifications == before)
    }

    @Test("CategoryID 12–255 is reserved: an NC accepts it as unknown, not fail", arguments: [UInt8(12), 200, 255])
    func reservedCategoryID(_ raw: UInt8) {
        var consumer = sessionConsumer()
        let actions = consumer.received(notificationSource: sourceEvent(.added, 9, category: CategoryID(rawValue: raw), count: 3), at: .zero)
        let expected = ConsumerNotification(uid: uid(9), eventFlags: [], categoryID: CategoryID(rawValue: raw), categoryCount: 3, isPreExisting: false)
        #expect(actions == [.emit(.added(expected))])
        #expect(consumer.notifications[uid(9)]?.categoryID.rawValue == raw)
    }

    @Test("A Notification Source event is exactly 8 bytes: anything else is a protocol error and nothing else", arguments: [0, 1, 7, 9, 20])
    func malformedNotificationSource(_ length: Int) {
        var consumer = sessionConsumer(with: [(1, [])])
        let before = consumer.notifications
        let actions = consumer.received(notificationSource: Array(repeating: 0x02, count: length), at: .zero)
        #expect(actions == [.emit(.protocolError(DecodingError(.notificationSourceLength(actual: length), at: min(length, 8))))])
        #expect(consumer.notifications == before)
        #expect(consumer.isInSession)
    }

    @Test("The model is bounded: beyond maximumNotifications the oldest notification is dropped, and emitted as removed")
    func boundedModel() {
        var consumer = sessionConsumer(ConsumerConfiguration(maximumNotifications: 3), with: [(1, []), (2, []), (3, [])])
        // Modified does not make a notification younger.
        _ = consumer.received(notificationSource: sourceEvent(.modified, 1, count: 2), at: .zero)
        let dropped = consumer.notifications[uid(1)]!
        let actions = consumer.received(notificationSource: sourceEvent(.added, 4), at: .zero)
        #expect(actions == [
            .emit(.removed(dropped)),
            .emit(.added(ConsumerNotification(uid: uid(4), eventFlags: [], categoryID: .email, categoryCount: 1, isPreExisting: false))),
        ])
        #expect(Set(consumer.notifications.keys) == [uid(2), uid(3), uid(4)])
        _ = consumer.received(notificationSource: sourceEvent(.added, 5), at: .zero)
        #expect(Set(consumer.notifications.keys) == [uid(3), uid(4), uid(5)])
        // Oldest first; looked up by UID without building the dictionary.
        #expect(consumer.liveNotifications.map(\.uid) == [uid(3), uid(4), uid(5)])
        #expect(consumer.notification(uid(4)) == consumer.notifications[uid(4)])
        #expect(consumer.notification(uid(1)) == nil)
    }

    // MARK: Sessions

    @Test("Nothing survives a session: every notification, fetched value and app cache is discarded, every pending request ends", arguments: SessionEnd.allCases)
    func nothingSurvivesASession(_ end: SessionEnd) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [.positiveAction])])
        // A fetched value in the model and an app in the cache.
        let first = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).1)
        _ = consumer.writeCompleted(first.token, .success, at: .zero)
        _ = deliver(standardResponse(1), to: &consumer)
        let app = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).1)
        _ = consumer.writeCompleted(app.token, .success, at: .zero)
        _ = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        #expect(consumer.notifications[uid(1)]?.appIdentifier == mailApp)
        #expect(consumer.displayName(of: mailApp) == "Mail")

        // Pending: one written, one queued, one action queued.
        let (written, writtenActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let inFlight = try onlyWrite(writtenActions)
        let (queued, _) = consumer.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 100)], for: uid(1), at: .zero)
        let (action, _) = consumer.performAction(.positive, on: uid(2), at: .zero)
        #expect(consumer.pendingRequestCount == 3)

        let ended = end.end(&consumer, at: .zero)
        for id in [written, queued, action] {
            #expect(results(ended, for: id) == [.failure(.sessionEnded)])
        }
        #expect(sessionEndedCount(ended) == 1)
        #expect(ended.last == .emit(.sessionEnded(end.reason)))
        if end == .stop {
            #expect(Array(ended.prefix(2)) == [.unsubscribe(.notificationSource), .unsubscribe(.dataSource)])
        }
        #expect(try writes(ended).isEmpty)
        #expect(!consumer.isInSession)
        #expect(consumer.notifications.isEmpty)
        #expect(consumer.appAttributes.isEmpty)
        #expect(consumer.displayName(of: mailApp) == nil)
        #expect(consumer.pendingRequestCount == 0)
        if end == .linkDown { #expect(consumer.nextDeadline == nil) }

        // Ending again ends nothing; late answers from the old session are ignored.
        #expect(sessionEndedCount(end.end(&consumer, at: .zero)) == 0)
        #expect(completionCount(consumer.writeCompleted(inFlight.token, .success, at: .zero)) == 0)
        #expect(deliver(standardResponse(2), to: &consumer) == [])
        #expect(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero) == [])
        #expect(consumer.notifications.isEmpty)
    }

    @Test("A new session starts empty, and app attributes are fetched again", arguments: SessionEnd.allCases)
    func newSessionStartsEmpty(_ end: SessionEnd) throws {
        var consumer = sessionConsumer(with: [(1, [])])
        let app = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).1)
        _ = consumer.writeCompleted(app.token, .success, at: .zero)
        _ = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        _ = end.end(&consumer, at: at(milliseconds: 100))

        // Published again (or linked again): subscribe again, Data Source first.
        #expect(end.restart(&consumer, at: at(milliseconds: 200)) == [.subscribe(.dataSource)])
        #expect(consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: 200)) == [.emit(.sessionStarted), .subscribe(.notificationSource)])
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: 200))
        #expect(consumer.isInSession)
        #expect(consumer.notifications.isEmpty)
        #expect(consumer.displayName(of: mailApp) == nil)

        // Not answered from the previous session's cache: asked again.
        let (again, actions) = consumer.fetchAppAttributes(mailApp, at: at(milliseconds: 300))
        let write = try onlyWrite(actions)
        #expect(write.command == displayNameCommand(mailApp))
        #expect(results(actions, for: again).isEmpty)
        _ = consumer.writeCompleted(write.token, .success, at: at(milliseconds: 300))
        let answered = deliver(displayNameResponse(mailApp, "Mail 2"), to: &consumer, at: at(milliseconds: 300))
        #expect(results(answered, for: again) == [.success(.appAttributes(displayNameResponse(mailApp, "Mail 2")))])
    }

    @Test("The link dropping during the session emits exactly one sessionEnded; linkUp while linked starts over")
    func linkUpWhileLinked() {
        var consumer = sessionConsumer(with: [(1, [])])
        let (pending, _) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let actions = consumer.linkUp(mtu: 247, at: .zero)
        #expect(actions == [
            .emit(.completed(pending, .failure(.sessionEnded))),
            .emit(.sessionEnded(.linkDown)),
            .subscribe(.dataSource),
        ])
        #expect(consumer.mtu == 247)
        #expect(consumer.notifications.isEmpty)
        #expect(consumer.linkDown(at: .zero) == [])  // no session had started yet
    }

    @Test("Service Changed with ANCS still published during a session changes nothing")
    func publishedAgainDuringSession() {
        var consumer = sessionConsumer(with: [(1, [])])
        #expect(consumer.serviceChanged(published: true, at: .zero) == [])
        #expect(consumer.isInSession)
        #expect(consumer.notifications.count == 1)
    }

    // MARK: Control Point requests and Data Source responses

    @Test("Get Notification Attributes: the request ends with the value and the model holds it")
    func getNotificationAttributes() throws {
        var consumer = sessionConsumer(with: [(0x43, [])])
        let (id, actions) = consumer.fetchAttributes(standardAttributes, for: uid(0x43), at: .zero)
        let write = try onlyWrite(actions)
        // Spec example shape: 00 · UID · AppIdentifier · Title + max length · Date.
        #expect(write.bytes == [0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x05])
        #expect(consumer.writeCompleted(write.token, .success, at: .zero) == [])
        let answered = deliver(standardResponse(0x43), to: &consumer)
        #expect(answered == [
            .emit(.attributes(standardResponse(0x43))),
            .emit(.completed(id, .success(.notificationAttributes(standardResponse(0x43))))),
        ])
        #expect(consumer.notifications[uid(0x43)]?.attributes == standardResponse(0x43).attributes)
        #expect(consumer.notifications[uid(0x43)]?[.title] == "Alice")
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Responses may be split anywhere across Data Source notifications", arguments: [23, 24, 30, 185])
    func fragmentedResponse(_ mtu: Int) throws {
        var consumer = sessionConsumer(with: [(1, [])])
        let (id, actions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        _ = consumer.writeCompleted(try onlyWrite(actions).token, .success, at: .zero)
        let response = standardResponse(1, title: String(repeating: "long title ", count: 5))
        let answered = deliver(.notificationAttributes(response), mtu: mtu, to: &consumer)
        #expect(results(answered, for: id) == [.success(.notificationAttributes(response))])
    }

    @Test("At most one Control Point write is in flight, whatever the pipelining depth")
    func oneWriteInFlight() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 4), with: [(1, []), (2, []), (3, [])])
        let first = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).1)
        #expect(try writes(consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).1).isEmpty)
        #expect(try writes(consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero).1).isEmpty)
        let second = try onlyWrite(consumer.writeCompleted(first.token, .success, at: .zero))
        #expect(second.command == standardCommand(2))
        let third = try onlyWrite(consumer.writeCompleted(second.token, .success, at: .zero))
        #expect(third.command == standardCommand(3))
        #expect(try writes(consumer.writeCompleted(third.token, .success, at: .zero)).isEmpty)
    }

    @Test("Pipelining depth 1: the next write waits until the previous response has fully arrived")
    func pipeliningDepthOne() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        #expect(secondActions.isEmpty)
        #expect(consumer.writeCompleted(write1.token, .success, at: .zero) == [])

        let fragments = DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23)
        try #require(fragments.count >= 2)
        for fragment in fragments.dropLast() {
            #expect(consumer.received(dataSource: fragment, at: .zero) == [])  // still streaming: no write
        }
        let last = consumer.received(dataSource: fragments.last!, at: .zero)
        #expect(results(last, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write2 = try onlyWrite(last)
        #expect(write2.command == standardCommand(2))
        #expect(last.last == .writeControlPoint(write2.bytes, write2.token))

        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let answered = deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
    }

    @Test("Pipelining depth 2: the next write goes out while the previous response is streaming")
    func pipeliningDepthTwo() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, []), (3, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let (third, _) = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero)

        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        #expect(write2.command == standardCommand(2))

        let fragments1 = DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23)
        try #require(fragments1.count >= 2)
        #expect(consumer.received(dataSource: fragments1[0], at: .zero) == [])
        // Two responses are due: the third command waits although no write is in flight.
        #expect(consumer.writeCompleted(write2.token, .success, at: .zero) == [])
        var rest: [ConsumerAction] = []
        for fragment in fragments1.dropFirst() { rest += consumer.received(dataSource: fragment, at: .zero) }
        #expect(results(rest, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write3 = try onlyWrite(rest)
        #expect(write3.command == standardCommand(3))

        // Responses are correlated in the order the NP received the commands.
        let answered2 = deliver(standardResponse(2, app: phoneApp, title: "Bob"), to: &consumer)
        #expect(results(answered2, for: second) == [.success(.notificationAttributes(standardResponse(2, app: phoneApp, title: "Bob")))])
        _ = consumer.writeCompleted(write3.token, .success, at: .zero)
        let answered3 = deliver(standardResponse(3, title: "Carol"), to: &consumer)
        #expect(results(answered3, for: third) == [.success(.notificationAttributes(standardResponse(3, title: "Carol")))])
    }

    @Test("A response for the wrong NotificationUID fails that request with invalidResponse; the next response is still parsed", arguments: [1, 2])
    func wrongNotificationUID(_ depth: Int) throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: depth), with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)

        actions += deliver(standardResponse(9), to: &consumer)
        let error = try #require(invalidResponse(results(actions, for: first)))
        #expect(error.reason == .wrongNotificationUID(expected: uid(1), actual: uid(9)))
        #expect(!events(actions).contains(.attributes(standardResponse(9))))
        #expect(consumer.notifications[uid(1)]?.attributes == [])

        let write2 = try onlyWrite(actions)
        #expect(write2.command == standardCommand(2))
        var answered = consumer.writeCompleted(write2.token, .success, at: .zero)
        answered += deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
        #expect(results(answered, for: first).isEmpty)
    }

    @Test("A response for the wrong AppIdentifier fails that request with invalidResponse; the next response is still parsed")
    func wrongAppIdentifier() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2))
        let (mail, mailActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        let write1 = try onlyWrite(mailActions)
        let (phone, _) = consumer.fetchAppAttributes(phoneApp, at: .zero)
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        let wrong = deliver(displayNameResponse("com.apple.mobilemaik", "Mail"), to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: mail)))
        #expect(error.reason == .wrongAppIdentifier(expected: mailApp))
        #expect(consumer.displayName(of: mailApp) == nil)

        let right = deliver(displayNameResponse(phoneApp, "Phone"), to: &consumer)
        #expect(results(right, for: phone) == [.success(.appAttributes(displayNameResponse(phoneApp, "Phone")))])
        #expect(consumer.displayName(of: phoneApp) == "Phone")
    }

    @Test("Tuples come in the order the attributes were requested: another attribute fails the request; the next response is still parsed")
    func unexpectedAttribute() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        // Subtitle where Title was asked: same number of tuples, so the framing holds.
        let shuffled = NotificationAttributesResponse(notificationUID: uid(1), attributes: [
            NotificationAttribute(.appIdentifier, AttributeValue(mailApp)),
            NotificationAttribute(.subtitle, "Lunch"),
            NotificationAttribute(.date, "20140322T154200"),
        ])
        let wrong = deliver(shuffled, to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: first)))
        #expect(error.reason == .unexpectedAttribute(expected: NotificationAttributeID.title.rawValue, actual: NotificationAttributeID.subtitle.rawValue))
        let right = deliver(standardResponse(2), to: &consumer)
        #expect(results(right, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("A value never exceeds the MaxLen asked: a longer one fails the request; the next response is still parsed")
    func valueLongerThanMaxLength() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        let tooLong = standardResponse(1, title: String(repeating: "x", count: 65))
        let wrong = deliver(.notificationAttributes(tooLong), mtu: 30, to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: first)))
        #expect(error.reason == .valueTooLong(attribute: NotificationAttributeID.title.rawValue, length: 65, maxLength: 64))
        let right = deliver(standardResponse(2), to: &consumer)
        #expect(results(right, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("A response that cannot be framed fails only its own request: the next request's response, written meanwhile, still parses",
          arguments: [23, 185])
    func unframeableResponseSparesTheNextRequest(_ mtu: Int) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        // The NP answers with an unknown CommandID and bytes no framing explains, in three notifications.
        let size = mtu - 3
        let garbage = DataSourceResponse.fragment([0x07] + [UInt8](repeating: 0x41, count: 3 * size - 1), mtu: mtu)
        #expect(garbage.count == 3)
        let failedFirst = consumer.received(dataSource: garbage[0], at: .zero)
        #expect(invalidResponse(results(failedFirst, for: first))?.reason == .wrongCommandID(expected: .getNotificationAttributes, actual: CommandID(rawValue: 7)))
        // The first request ended, so the second one is written while the garbage still streams.
        let write2 = try onlyWrite(failedFirst)
        #expect(write2.command == standardCommand(2))
        var actions = consumer.writeCompleted(write2.token, .success, at: .zero)
        for fragment in garbage.dropFirst() { actions += consumer.received(dataSource: fragment, at: .zero) }
        #expect(results(actions, for: second).isEmpty)
        #expect(events(actions).allSatisfy { if case .protocolError = $0 { true } else { false } })
        let answered = deliver(.notificationAttributes(standardResponse(2)), mtu: mtu, to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Data Source arriving before the write response still completes the request, once")
    func dataSourceBeforeWriteResponse() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)

        let early = deliver(standardResponse(1), to: &consumer)
        #expect(results(early, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        #expect(try writes(early).isEmpty)  // the first write has not completed yet

        let completed = consumer.writeCompleted(write1.token, .success, at: .zero)
        #expect(completionCount(completed) == 0)
        let write2 = try onlyWrite(completed)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        #expect(results(deliver(standardResponse(2), to: &consumer), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Data Source bytes no request explains are a protocol error and nothing else")
    func unsolicitedDataSource() {
        var consumer = sessionConsumer(with: [(1, [])])
        let actions = deliver(standardResponse(1), to: &consumer)
        #expect(!actions.isEmpty)
        for action in actions {
            #expect(action == .emit(.protocolError(DecodingError(.unsolicitedResponse, at: 0))))
        }
        #expect(consumer.notifications[uid(1)]?.attributes == [])
    }

    // MARK: Every request ends exactly once

    struct WriteError: Sendable, CustomTestStringConvertible {
        var result: ATTResult
        var error: ConsumerError
        var testDescription: String { "\(result) → \(error)" }
    }

    static let ancsErrors: [WriteError] = [
        WriteError(result: .attError(.unknownCommand), error: .unknownCommand),
        WriteError(result: .attError(.invalidCommand), error: .invalidCommand),
        WriteError(result: .attError(.invalidParameter), error: .invalidParameter),
        WriteError(result: .attError(.actionFailed), error: .actionFailed),
    ]

    static let otherErrors: [WriteError] = [
        WriteError(result: insufficientAuthentication, error: .att(0x05)),
        WriteError(result: .attError(ATTErrorCode(rawValue: 0x0E)), error: .att(0x0E)),
        WriteError(result: .attError(ATTErrorCode(rawValue: 0x9F)), error: .att(0x9F)),
        WriteError(result: .attError(ATTErrorCode(rawValue: 0xA4)), error: .att(0xA4)),
        WriteError(result: .transportFailure, error: .transportFailure),
    ]

    @Test("Errors: each ANCS error 0xA0–0xA3, another ATT error or a transport failure ends the request as its typed case; no Data Source follows",
          arguments: ConsumerTests.ancsErrors + ConsumerTests.otherErrors)
    func writeFailure(_ failure: WriteError) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)

        let failed = consumer.writeCompleted(write1.token, failure.result, at: .zero)
        #expect(results(failed, for: first) == [.failure(failure.error)])
        // No response is awaited for the failed command: the next one goes out and its response is its own.
        let write2 = try onlyWrite(failed)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let answered = deliver(standardResponse(2), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
        #expect(results(answered, for: first).isEmpty)
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("Nothing waits forever: a request not answered within the timeout (10 s by default) fails with timedOut")
    func defaultTimeout() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        #expect(consumer.nextDeadline == nil)
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: at(milliseconds: 1_000))
        let write1 = try onlyWrite(firstActions)
        #expect(consumer.nextDeadline == at(milliseconds: 11_000))
        _ = consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 1_010))
        #expect(consumer.tick(at(milliseconds: 10_999)) == [])
        let expired = consumer.tick(at(milliseconds: 11_000))
        #expect(expired == [.emit(.completed(first, .failure(.timedOut)))])
        #expect(consumer.nextDeadline == nil)
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.tick(at(milliseconds: 60_000)) == [])

        // The late response is consumed without disturbing the next one.
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 12_000))
        let write2 = try onlyWrite(secondActions)
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 12_000))
        let late = deliver(standardResponse(1), to: &consumer, at: at(milliseconds: 12_100))
        #expect(late == [])
        let answered = deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 12_200))
        #expect(answered == [
            .emit(.attributes(standardResponse(2))),
            .emit(.completed(second, .success(.notificationAttributes(standardResponse(2))))),
        ])
    }

    @Test("The request timeout is configurable and counts from the request's write: a request queued behind another is not charged for the wait")
    func configuredTimeout() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(requestTimeout: .seconds(3)), with: [(1, []), (2, [])])
        let (first, _) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: at(milliseconds: 0))
        let (second, queued) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 500))
        #expect(try writes(queued).isEmpty)
        #expect(consumer.nextDeadline == at(milliseconds: 3_000))
        let firstExpired = consumer.tick(at(milliseconds: 3_000))
        #expect(results(firstExpired, for: first) == [.failure(.timedOut)])
        #expect(results(firstExpired, for: second).isEmpty)
        // The first write's result never came: the link is free at its deadline, and the second goes out now.
        #expect(try onlyWrite(firstExpired).command == standardCommand(2))
        #expect(consumer.nextDeadline == at(milliseconds: 6_000))
        #expect(results(consumer.tick(at(milliseconds: 3_500)), for: second).isEmpty, "3 s after its submission, but only 0.5 s after its write")
        let secondExpired = consumer.tick(at(milliseconds: 6_000))
        #expect(results(secondExpired, for: second) == [.failure(.timedOut)])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("A write that never completes times out, and later requests still proceed")
    func writeNeverCompletes() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 1_000))
        #expect(secondActions.isEmpty)

        let expired = consumer.tick(at(milliseconds: 10_000))
        #expect(results(expired, for: first) == [.failure(.timedOut)])
        let write2 = try onlyWrite(expired)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 10_050))
        let answered = deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 10_100))
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
        // The result of the abandoned write, if it ever comes, changes nothing.
        #expect(consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 10_200)) == [])
    }

    @Test("Cancellation ends a request with cancelled; the response that still arrives is consumed without disturbing the next one")
    func cancelAwaitingResponse() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        #expect(secondActions.isEmpty)

        let cancelled = consumer.cancel(first, at: .zero)
        #expect(results(cancelled, for: first) == [.failure(.cancelled)])
        let write2 = try onlyWrite(cancelled)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        // The cancelled request's response arrives first: consumed, reported nowhere.
        #expect(deliver(standardResponse(1), to: &consumer) == [])
        #expect(consumer.notifications[uid(1)]?.attributes == [])
        let answered = deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
        // Cancelling again, or an unknown request, ends nothing.
        #expect(consumer.cancel(first, at: .zero) == [])
        #expect(consumer.cancel(ConsumerRequestID(rawValue: 9_999), at: .zero) == [])
    }

    @Test("A cancelled request that was never written is never written")
    func cancelQueued() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        #expect(consumer.cancel(second, at: .zero) == [.emit(.completed(second, .failure(.cancelled)))])
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)
        actions += deliver(standardResponse(1), to: &consumer)
        #expect(results(actions, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        #expect(try writes(actions).isEmpty)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Cancelling a request whose write is in flight: the next write still waits for that write's result")
    func cancelWhileWriting() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        #expect(consumer.cancel(first, at: .zero) == [.emit(.completed(first, .failure(.cancelled)))])
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        #expect(try writes(secondActions).isEmpty, "ATT allows one write at a time")

        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        #expect(deliver(standardResponse(1), to: &consumer) == [])
        let answered = deliver(standardResponse(2), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Cancelling a request whose write is in flight: if the write then fails, no response is awaited for it")
    func cancelWhileWritingThenWriteFails() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.cancel(first, at: .zero)
        // The same notification asked again, for other attributes: its response starts with the same header.
        let titleOnly = [NotificationAttributeRequest(.title, maxLength: 32)]
        let (second, secondActions) = consumer.fetchAttributes(titleOnly, for: uid(1), at: .zero)
        var actions = secondActions
        actions += consumer.writeCompleted(write1.token, .attError(.invalidParameter), at: .zero)
        #expect(completionCount(actions) == 0)
        let write2 = try onlyWrite(actions)
        #expect(write2.command == .getNotificationAttributes(GetNotificationAttributes(notificationUID: uid(1), attributes: titleOnly)))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let response = NotificationAttributesResponse(notificationUID: uid(1), attributes: [NotificationAttribute(.title, "Alice")])
        let answered = deliver(response, to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(response))])
    }

    @Test("A cancelled request's write that never completes stops holding the link a request timeout after it was issued")
    func abandonedWriteNeverCompletes() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        _ = try onlyWrite(firstActions)
        _ = consumer.cancel(first, at: at(milliseconds: 1_000))
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 2_000))
        #expect(secondActions.isEmpty)
        // The abandoned write's deadline comes before the second request's.
        #expect(consumer.nextDeadline == at(milliseconds: 10_000))
        #expect(consumer.tick(at(milliseconds: 9_999)) == [])
        let released = consumer.tick(at(milliseconds: 10_000))
        #expect(results(released, for: second).isEmpty)
        let write2 = try onlyWrite(released)
        #expect(write2.command == standardCommand(2))
        // The second request's time counts from its write.
        #expect(consumer.nextDeadline == at(milliseconds: 20_000))
    }

    @Test("A session that ends with a write in flight: after a link drop the next session writes at once; on a link that stays up (stop, Service Changed) its first write waits for the old write's result, which answers nothing",
          arguments: SessionEnd.allCases)
    func writeInFlightAcrossSessions(_ end: SessionEnd) throws {
        var consumer = sessionConsumer(with: [(1, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        #expect(results(end.end(&consumer, at: .zero), for: first) == [.failure(.sessionEnded)])
        switch end {
        case .linkDown:
            // The link took the write with it: nothing waits for it.
            #expect(consumer.nextDeadline == nil)
            _ = consumer.linkUp(mtu: 23, at: .zero)
        case .stop, .serviceUnpublished:
            // ATT allows one write at a time: the old one holds the link until its result, or its deadline.
            #expect(consumer.nextDeadline == at(milliseconds: 10_000))
            _ = consumer.serviceChanged(published: true, at: .zero)
        }
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 1))
        let write2: Write
        if end == .linkDown {
            write2 = try onlyWrite(secondActions)
            // A late result of the old write, should one still arrive, changes nothing.
            #expect(consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 2)).isEmpty)
        } else {
            #expect(try writes(secondActions).isEmpty)
            // The old write's result frees the link and answers nothing.
            let freed = consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 2))
            #expect(completionCount(freed) == 0)
            write2 = try onlyWrite(freed)
        }
        #expect(write2.command == standardCommand(2))
        #expect(write2.token != write1.token)
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 3))
        #expect(results(deliver(standardResponse(2), to: &consumer), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("After the link drops, a new link has no write in flight")
    func newLinkHasNoWriteInFlight() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        _ = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).1)
        _ = consumer.linkDown(at: .zero)
        #expect(consumer.nextDeadline == nil)
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        #expect(try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).1).command == standardCommand(1))
    }

    @Test("The into: forms append exactly the actions the array-returning forms return, to a buffer the caller reuses")
    func actionsIntoCallerBuffer() throws {
        var byArray = Consumer(configuration: ConsumerConfiguration(eagerAttributes: standardAttributes))
        var byBuffer = byArray
        var buffer: [ConsumerAction] = []
        func same(_ expected: [ConsumerAction], _ step: (inout Consumer, inout [ConsumerAction]) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            buffer.removeAll(keepingCapacity: true)
            step(&byBuffer, &buffer)
            #expect(buffer == expected, sourceLocation: sourceLocation)
        }
        same(byArray.linkUp(mtu: 23, at: .zero)) { $0.linkUp(mtu: 23, at: .zero, into: &$1) }
        same(byArray.subscriptionCompleted(.dataSource, .success, at: .zero)) { $0.subscriptionCompleted(.dataSource, .success, at: .zero, into: &$1) }
        same(byArray.subscriptionCompleted(.notificationSource, .success, at: .zero)) { $0.subscriptionCompleted(.notificationSource, .success, at: .zero, into: &$1) }
        let added = sourceEvent(.added, 1, flags: [.negativeAction])
        let addedActions = byArray.received(notificationSource: added, at: .zero)
        same(addedActions) { consumer, actions in added.withUnsafeBytes { consumer.received(notificationSource: $0, at: .zero, into: &actions) } }
        let token = try onlyWrite(addedActions).token
        same(byArray.writeCompleted(token, .success, at: .zero)) { $0.writeCompleted(token, .success, at: .zero, into: &$1) }
        for fragment in DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23) {
            same(byArray.received(dataSource: fragment, at: .zero)) { consumer, actions in
                fragment.withUnsafeBytes { consumer.received(dataSource: $0, at: .zero, into: &actions) }
            }
        }
        let (fetch, fetchActions) = byArray.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 8)], for: uid(1), at: .zero)
        same(fetchActions) { #expect($0.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 8)], for: uid(1), at: .zero, into: &$1) == fetch) }
        let (app, appActions) = byArray.fetchAppAttributes(appIdentifierBytes: Array(phoneApp.utf8), at: .zero)
        same(appActions) { #expect($0.fetchAppAttributes(appIdentifierBytes: Array(phoneApp.utf8), at: .zero, into: &$1) == app) }
        let (action, actionActions) = byArray.performAction(.negative, on: uid(1), at: .zero)
        same(actionActions) { #expect($0.performAction(.negative, on: uid(1), at: .zero, into: &$1) == action) }
        same(byArray.cancel(fetch, at: .zero)) { $0.cancel(fetch, at: .zero, into: &$1) }
        same(byArray.tick(at(milliseconds: 20_000))) { $0.tick(at(milliseconds: 20_000), into: &$1) }
        same(byArray.serviceChanged(published: false, at: .zero)) { $0.serviceChanged(published: false, at: .zero, into: &$1) }
        same(byArray.stop(at: .zero)) { $0.stop(at: .zero, into: &$1) }
        same(byArray.linkDown(at: .zero)) { $0.linkDown(at: .zero, into: &$1) }
        #expect(buffer.capacity > 0)
    }

    @Test("Identical requests in flight are coalesced: one write, two completions")
    func coalescedRequests() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, secondActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        #expect(secondActions.isEmpty)
        #expect(first != second)
        #expect(consumer.pendingRequestCount == 2)
        // Also while queued, and cancelling one waiter leaves the other.
        let (queued, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let (queuedTwin, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        #expect(consumer.cancel(queued, at: .zero) == [.emit(.completed(queued, .failure(.cancelled)))])

        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        let value = ConsumerResult.success(.notificationAttributes(standardResponse(1)))
        #expect(answered.filter { if case .emit(.attributes) = $0 { true } else { false } }.count == 1)
        #expect(results(answered, for: first) == [value])
        #expect(results(answered, for: second) == [value])

        let write2 = try onlyWrite(answered)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let answered2 = deliver(standardResponse(2), to: &consumer)
        #expect(results(answered2, for: queuedTwin) == [.success(.notificationAttributes(standardResponse(2)))])
        #expect(results(answered2, for: queued).isEmpty)
    }

    @Test("More requests than maximumRequests fail with tooManyRequests, without a write")
    func tooManyRequests() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(maximumRequests: 2), with: [(1, []), (2, []), (3, [])])
        _ = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        _ = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let (third, actions) = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero)
        #expect(actions == [.emit(.completed(third, .failure(.tooManyRequests)))])
        #expect(consumer.pendingRequestCount == 2)
    }

    @Test("An AppIdentifier is NUL-terminated on the wire: one containing NUL cannot be encoded")
    func appIdentifierWithNUL() {
        var consumer = sessionConsumer()
        let (id, actions) = consumer.fetchAppAttributes("com.example\u{0}evil", at: .zero)
        #expect(actions == [.emit(.completed(id, .failure(.encoding(EncodingError(.appIdentifierContainsNUL)))))])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("A write result with a stale token is ignored")
    func staleWriteToken() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, []), (3, [])])
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let write1 = try onlyWrite(firstActions)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let never = WriteToken(rawValue: write1.token.rawValue &+ 1_000)
        #expect(consumer.writeCompleted(never, .attError(.invalidParameter), at: .zero) == [])
        #expect(consumer.writeCompleted(never, .success, at: .zero) == [])
        #expect(consumer.pendingRequestCount == 2)

        // A token already answered is stale too: it neither ends nor releases the write now in flight.
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)
        actions += deliver(standardResponse(1), to: &consumer)
        #expect(results(actions, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write2 = try onlyWrite(actions)
        let (_, thirdActions) = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero)
        #expect(thirdActions.isEmpty)
        #expect(consumer.writeCompleted(write1.token, .transportFailure, at: .zero) == [])
        #expect(consumer.pendingRequestCount == 2)
        let failed = consumer.writeCompleted(write2.token, .attError(.invalidParameter), at: .zero)
        #expect(results(failed, for: second) == [.failure(.invalidParameter)])
        #expect(try onlyWrite(failed).command == standardCommand(3))
    }

    // MARK: Fetching and caching

    @Test("Fetch attributes lazily: by default no write on Added")
    func lazyByDefault() throws {
        var consumer = sessionConsumer()
        #expect(ConsumerConfiguration.default.eagerAttributes.isEmpty)
        for raw in UInt32(1)...20 {
            let actions = consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
            #expect(actions.count == 1)
            #expect(try writes(actions).isEmpty)
        }
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("App attributes are kept per session per AppIdentifier: never ask the NP twice for the same app's name")
    func appAttributesCache() throws {
        var consumer = sessionConsumer()
        let (first, firstActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        let write = try onlyWrite(firstActions)
        #expect(write.bytes == [0x01] + Array(mailApp.utf8) + [0x00, 0x00])
        // Asked again while in flight: coalesced.
        let (twin, twinActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        #expect(twinActions.isEmpty)
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let answered = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        let value = ConsumerResult.success(.appAttributes(displayNameResponse(mailApp, "Mail")))
        #expect(answered == [
            .emit(.appAttributes(displayNameResponse(mailApp, "Mail"))),
            .emit(.completed(first, value)),
            .emit(.completed(twin, value)),
        ])
        #expect(consumer.displayName(of: mailApp) == "Mail")

        // Answered from the cache: no write at all.
        let (cached, cachedActions) = consumer.fetchAppAttributes(mailApp, at: .zero)
        #expect(cachedActions == [.emit(.completed(cached, value))])
        #expect(consumer.pendingRequestCount == 0)

        // Another app is asked.
        let other = try onlyWrite(consumer.fetchAppAttributes(phoneApp, at: .zero).1)
        #expect(other.command == displayNameCommand(phoneApp))
    }

    @Test("Eager policy: configured attributes are fetched for every new notification, each app's name once per session")
    func eagerAttributesAndAppNames() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var written: [ControlPointCommand] = []
        var all: [ConsumerAction] = []
        func record(_ actions: [ConsumerAction]) throws -> [Write] {
            all += actions
            let found = try writes(actions)
            written += found.map(\.command)
            return found
        }

        let added1 = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        #expect(added1.first == .emit(.added(ConsumerNotification(uid: uid(1), eventFlags: [], categoryID: .email, categoryCount: 1, isPreExisting: false))))
        let gna1 = try #require(try record(added1).first)
        #expect(gna1.command == standardCommand(1))
        #expect(try record(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)).isEmpty)

        _ = try record(consumer.writeCompleted(gna1.token, .success, at: .zero))
        let afterFirst = deliver(standardResponse(1), to: &consumer)
        #expect(events(afterFirst).first == .attributes(standardResponse(1)))
        // The app's name goes ahead of the queued attribute fetch.
        let gaaMail = try onlyWrite(afterFirst)
        _ = try record(afterFirst)
        #expect(gaaMail.command == displayNameCommand(mailApp))

        _ = try record(consumer.writeCompleted(gaaMail.token, .success, at: .zero))
        let named = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        #expect(events(named).first == .appAttributes(displayNameResponse(mailApp, "Mail")))
        let gna2 = try onlyWrite(named)
        _ = try record(named)
        #expect(gna2.command == standardCommand(2))
        #expect(consumer.displayName(of: mailApp) == "Mail")

        _ = try record(consumer.writeCompleted(gna2.token, .success, at: .zero))
        // Same app again: its name is cached, not asked.
        #expect(try record(deliver(standardResponse(2, title: "Bob"), to: &consumer)).isEmpty)
        #expect(consumer.notifications[uid(2)]?[.title] == "Bob")

        // A new app is asked once.
        let gna3 = try #require(try record(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero)).first)
        _ = try record(consumer.writeCompleted(gna3.token, .success, at: .zero))
        let gaaPhone = try onlyWrite(deliver(standardResponse(3, app: phoneApp), to: &consumer))
        written.append(gaaPhone.command)
        #expect(gaaPhone.command == displayNameCommand(phoneApp))

        #expect(written.filter { $0 == displayNameCommand(mailApp) }.count == 1)
        #expect(written.filter { $0 == displayNameCommand(phoneApp) }.count == 1)
        // The engine's own fetches end no application request.
        #expect(completionCount(all) == 0)
    }

    @Test("AppIdentifiers are compared as bytes: two that differ only in invalid UTF-8 get their own Get App Attributes, with their exact bytes, and their own cache entries")
    func appIdentifiersAsBytes() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        let prefix = Array("com.example.".utf8)
        // Both decode leniently to "com.example.\u{FFFD}".
        let apps: [(bytes: [UInt8], name: AttributeValue)] = [(prefix + [0xFF], "Alpha"), (prefix + [0xFE], "Beta"), (prefix + [0xC0], "Gamma")]
        for (index, app) in apps.enumerated() {
            let raw = UInt32(index + 1)
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            let attributes = NotificationAttributesResponse(notificationUID: uid(raw), attributes: [
                NotificationAttribute(.appIdentifier, AttributeValue(bytes: app.bytes)),
                NotificationAttribute(.title, "Hi"),
                NotificationAttribute(.date, "20140322T154200"),
            ])
            let name = try onlyWrite(deliver(.notificationAttributes(attributes), to: &consumer))
            #expect(name.bytes == [0x01] + app.bytes + [0x00, 0x00], "the command carries the AppIdentifier's bytes as received")
            _ = consumer.writeCompleted(name.token, .success, at: .zero)
            let answer = AppAttributesResponse(appIdentifierBytes: app.bytes, attributes: [AppAttribute(.displayName, app.name)])
            #expect(events(deliver(.appAttributes(answer), to: &consumer)).contains(.appAttributes(answer)))
        }
        #expect(consumer.appCache.count == apps.count)
        for app in apps {
            #expect(consumer.appCache.first { $0.appIdentifierBytes == app.bytes }?[.displayName] == app.name)
            #expect(consumer.displayName(ofAppBytes: app.bytes) == app.name)
        }
        // An application request by bytes is answered from the cache, per app.
        let (request, actions) = consumer.fetchAppAttributes(appIdentifierBytes: apps[1].bytes, at: .zero)
        #expect(results(actions, for: request) == [.success(.appAttributes(AppAttributesResponse(appIdentifierBytes: apps[1].bytes, attributes: [AppAttribute(.displayName, "Beta")])))])
    }

    @Test("Eager policy: the app name is asked once even when its notifications' attributes arrive before the name does")
    func eagerAppNameAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes))
        var written: [Write] = []
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero))
        try #require(written.count == 1)
        written += try writes(consumer.writeCompleted(written[0].token, .success, at: .zero))
        try #require(written.count == 2)
        written += try writes(consumer.writeCompleted(written[1].token, .success, at: .zero))
        written += try writes(deliver(standardResponse(1), to: &consumer))
        try #require(written.count == 3)
        #expect(written[2].command == displayNameCommand(mailApp))
        written += try writes(deliver(standardResponse(2), to: &consumer))
        written += try writes(consumer.writeCompleted(written[2].token, .success, at: .zero))
        written += try writes(deliver(displayNameResponse(mailApp, "Mail"), to: &consumer))
        written += try writes(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero))
        #expect(written.map(\.command) == [standardCommand(1), standardCommand(2), displayNameCommand(mailApp), standardCommand(3)])
    }

    @Test("A Removed event drops the notification's requests not yet written; requests waiting on them end with notificationRemoved")
    func removedDropsUnwrittenRequests() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let write1 = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        // Notification 2's eager fetch waits behind the first; the application joins it and asks more.
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 2, flags: [.negativeAction]), at: .zero)).isEmpty)
        let (joined, joinedActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let (other, otherActions) = consumer.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 32)], for: uid(2), at: .zero)
        let (action, actionActions) = consumer.performAction(.negative, on: uid(2), at: .zero)
        #expect(joinedActions.isEmpty && otherActions.isEmpty && actionActions.isEmpty)
        #expect(consumer.entries.count == 4)

        let removed = consumer.received(notificationSource: sourceEvent(.removed, 2), at: .zero)
        for id in [joined, other, action] {
            #expect(results(removed, for: id) == [.failure(.notificationRemoved)])
        }
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.entries.count == 1)
        // Nothing for notification 2 is ever written.
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        #expect(try writes(deliver(standardResponse(1), to: &consumer)).isEmpty)
        #expect(consumer.entries.isEmpty)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Eager policy: a Modified notification is fetched again (a fetch already written may have read the old content); a burst of Modified costs one fetch")
    func eagerRefetchOnModified() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let first = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        for _ in 0..<3 {
            #expect(try writes(consumer.received(notificationSource: sourceEvent(.modified, 1), at: .zero)).isEmpty)
        }
        _ = consumer.writeCompleted(first.token, .success, at: .zero)
        let again = try onlyWrite(deliver(standardResponse(1, title: "old"), to: &consumer))
        #expect(again.command == standardCommand(1))
        _ = consumer.writeCompleted(again.token, .success, at: .zero)
        #expect(try writes(deliver(standardResponse(1, title: "new"), to: &consumer)).isEmpty)
        #expect(consumer.notifications[uid(1)]?[.title] == "new")
        #expect(consumer.entries.isEmpty)
    }

    @Test("Eager policy: an app the NP answered 0xA2 for is not asked again in the session, however many notifications it posts")
    func eagerUnknownAppAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var appFetches = 0
        for raw in UInt32(1)...3 {
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw), at: .zero))
            _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
            for write in try writes(deliver(standardResponse(raw), to: &consumer)) {
                #expect(write.command == displayNameCommand(mailApp))
                appFetches += 1
                // Refused: the notification is shown without the app's name.
                let refused = consumer.writeCompleted(write.token, .attError(.invalidParameter), at: .zero)
                #expect(try writes(refused).isEmpty)
                #expect(events(refused).map(\.readyUID) == [uid(raw)])
            }
        }
        #expect(appFetches == 1)
        #expect(consumer.entries.isEmpty)
        // The application may still ask; a new session asks again.
        let asked = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).1)
        #expect(asked.command == displayNameCommand(mailApp))
        _ = consumer.writeCompleted(asked.token, .attError(.invalidParameter), at: .zero)
        _ = consumer.serviceChanged(published: false, at: .zero)
        _ = consumer.serviceChanged(published: true, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 4), at: .zero))
        _ = consumer.writeCompleted(fetch.token, .success, at: .zero)
        #expect(try onlyWrite(deliver(standardResponse(4), to: &consumer)).command == displayNameCommand(mailApp))
    }

    @Test("Eager policy without eagerAppNames fetches no app names")
    func eagerWithoutAppNames() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let gna = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        _ = consumer.writeCompleted(gna.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        #expect(try writes(answered).isEmpty)
        let notification = try #require(consumer.notification(uid(1)))
        #expect(events(answered) == [.attributes(standardResponse(1)), .ready(notification, appName: nil)])
    }

    @Test("Eager fetches need Data Source: without it nothing is written")
    func eagerWithoutDataSource() throws {
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: standardAttributes))
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .transportFailure, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)).isEmpty)
        #expect(consumer.nextDeadline == nil)
    }

    // MARK: Notification actions

    struct UnavailableAction: Sendable, CustomTestStringConvertible {
        var flags: EventFlags
        var action: ActionID
        var testDescription: String { "\(action) with flags \(flags)" }
    }

    @Test("Perform Notification Action only for notifications whose flags announce it; otherwise the link is not touched",
          arguments: [
              UnavailableAction(flags: [], action: .positive),
              UnavailableAction(flags: [], action: .negative),
              UnavailableAction(flags: [.negativeAction], action: .positive),
              UnavailableAction(flags: [.positiveAction], action: .negative),
              UnavailableAction(flags: [.positiveAction, .negativeAction], action: ActionID(rawValue: 2)),
              UnavailableAction(flags: [.positiveAction, .negativeAction], action: ActionID(rawValue: 255)),
          ])
    func actionNotAvailable(_ unavailable: UnavailableAction) {
        var consumer = sessionConsumer(with: [(1, unavailable.flags)])
        let (id, actions) = consumer.performAction(unavailable.action, on: uid(1), at: .zero)
        #expect(actions == [.emit(.completed(id, .failure(.actionNotAvailable)))])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("Perform Notification Action on a NotificationUID the session does not know (never announced, or removed) fails as unknownNotification, without a write")
    func actionOnUnknownNotification() {
        var consumer = sessionConsumer(with: [(1, [.positiveAction])])
        _ = consumer.received(notificationSource: sourceEvent(.removed, 1, flags: [.positiveAction]), at: .zero)
        let (removed, removedActions) = consumer.performAction(.positive, on: uid(1), at: .zero)
        #expect(removedActions == [.emit(.completed(removed, .failure(.unknownNotification)))])
        let (unknown, unknownActions) = consumer.performAction(.positive, on: uid(77), at: .zero)
        #expect(unknownActions == [.emit(.completed(unknown, .failure(.unknownNotification)))])
        #expect(ConsumerError.unknownNotification.description == "no notification with this UID in this session")
    }

    @Test("Perform Notification Action writes 02 · NotificationUID · ActionID; success ends it with actionPerformed, no Data Source follows",
          arguments: [ActionID.positive, .negative])
    func performAction(_ action: ActionID) throws {
        var consumer = sessionConsumer(with: [(0x0102_0343, [.positiveAction, .negativeAction]), (2, [])])
        let (id, actions) = consumer.performAction(action, on: uid(0x0102_0343), at: .zero)
        let write = try onlyWrite(actions)
        #expect(write.bytes == [0x02, 0x43, 0x03, 0x02, 0x01, action.rawValue])
        #expect(consumer.writeCompleted(write.token, .success, at: .zero) == [.emit(.completed(id, .success(.actionPerformed)))])
        #expect(consumer.pendingRequestCount == 0)

        // Nothing is awaited on Data Source for it: the next response belongs to the next request.
        let (fetch, fetchActions) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        _ = consumer.writeCompleted(try onlyWrite(fetchActions).token, .success, at: .zero)
        #expect(results(deliver(standardResponse(2), to: &consumer), for: fetch) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Action failed (0xA3): the NP did not perform the action")
    func actionFailed() throws {
        var consumer = sessionConsumer(with: [(1, [.positiveAction])])
        let (id, actions) = consumer.performAction(.positive, on: uid(1), at: .zero)
        let write = try onlyWrite(actions)
        #expect(consumer.writeCompleted(write.token, .attError(.actionFailed), at: .zero) == [.emit(.completed(id, .failure(.actionFailed)))])
    }

    // MARK: Randomized interleavings

    @Test("Random interleavings keep the invariants: every request ends exactly once, nothing survives a session, one write in flight",
          arguments: [
              UInt64(0x0000_0000_0000_0001), 0x0000_0000_0000_0002, 0x0000_0000_0000_0003, 0x0000_0000_0000_0004,
              0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0A0A_0A0A_0A0A_0A0A, 0x5555_AAAA_5555_AAAA,
              0xDEAD_BEEF_0000_0001, 0xDEAD_BEEF_0000_0002, 0xC0FF_EE00_C0FF_EE00, 0x1234_0000_5678_0000,
              0x0000_0043_0000_0043, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, 0x0BAD_CAFE_0BAD_CAFE,
          ])
    func randomInterleavings(_ seed: UInt64) {
        var run = RandomRun(seed: seed)
        run.run(steps: 600)
        for failure in run.failures.prefix(5) {
            Issue.record("seed 0x\(String(seed, radix: 16)): \(failure)")
        }
        #expect(run.failures.isEmpty, "seed 0x\(String(seed, radix: 16)) (\(run.configurationDescription))")
        #expect(run.successes > 0, "seed 0x\(String(seed, radix: 16)): no request succeeded; the run exercised little")
    }

}

extension ConsumerTests {
    /// The ways a session ends (spec: "Sessions": it ends when the NC
    /// unsubscribes or the link drops; and ANCS may be unpublished at any time).
    enum SessionEnd: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case linkDown
        case stop
        case serviceUnpublished

        var testDescription: String { rawValue }

        var reason: SessionEndReason {
            switch self {
            case .linkDown: .linkDown
            case .stop: .unsubscribed
            case .serviceUnpublished: .serviceUnpublished
            }
        }

        func end(_ consumer: inout Consumer, at now: Timestamp) -> [ConsumerAction] {
            switch self {
            case .linkDown: consumer.linkDown(at: now)
            case .stop: consumer.stop(at: now)
            case .serviceUnpublished: consumer.serviceChanged(published: false, at: now)
            }
        }

        /// What brings a session back after this end.
        func restart(_ consumer: inout Consumer, at now: Timestamp) -> [ConsumerAction] {
            switch self {
            case .linkDown, .stop: consumer.linkUp(mtu: 23, at: now)
            case .serviceUnpublished: consumer.serviceChanged(published: true, at: now)
            }
        }
    }
}

// MARK: - The randomized run

/// One random run against a Consumer: a scripted NP and transport answer
/// every action the engine asks for, in random order and at random times,
/// while the invariants are checked after every input.
private struct RandomRun {
    var random: SplitMix64
    let configuration: ConsumerConfiguration
    var consumer: Consumer
    var now = Timestamp.zero
    var step = 0

    // Link and transport
    var linkIsUp = false
    var subscriptionsToAnswer: [ANCSCharacteristic] = []
    /// Writes handed to the transport whose result has not been fed: token → when issued.
    var unansweredWrites: [WriteToken: Timestamp] = [:]
    /// Write results the transport will report, in order (stale ones included).
    var writeResults: [(WriteToken, ATTResult)] = []
    /// Data Source notifications the NP will send, in order.
    var dataSource: [[UInt8]] = []

    // What the session may hold
    var inSession = false
    /// Notifications fed this session as Added or Modified and not Removed since.
    var live: Set<NotificationUID> = []
    /// AppIdentifiers whose attributes the NP sent this session.
    var appsAnswered: Set<String> = []

    // Requests
    var submitted: [ConsumerRequestID] = []
    var completions: [ConsumerRequestID: Int] = [:]
    var successes = 0
    var failures: [String] = []

    static let apps = ["com.apple.mobilemail", "com.apple.MobileSMS", "com.example.chat"]
    static let attributeSets: [[NotificationAttributeRequest]] = [
        standardAttributes,
        [NotificationAttributeRequest(.title, maxLength: 8)],
        [NotificationAttributeRequest(.appIdentifier)],
        [NotificationAttributeRequest(.message, maxLength: 16), NotificationAttributeRequest(.date), NotificationAttributeRequest(.messageSize)],
    ]

    init(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        configuration = ConsumerConfiguration(
            requestTimeout: generator.percent(50) ? .seconds(10) : .seconds(2),
            pipeliningDepth: generator.int(1...3),
            eagerAttributes: generator.percent(40) ? standardAttributes : [],
            eagerAppNames: generator.percent(80),
            maximumNotifications: generator.percent(50) ? 4 : 512,
            maximumRequests: generator.percent(30) ? 5 : 64)
        random = generator
        consumer = Consumer(configuration: configuration)
    }

    var configurationDescription: String {
        "depth \(configuration.pipeliningDepth), timeout \(configuration.requestTimeout), "
            + "eager \(!configuration.eagerAttributes.isEmpty), max notifications \(configuration.maximumNotifications), "
            + "max requests \(configuration.maximumRequests)"
    }

    mutating func check(_ condition: Bool, _ message: String) {
        if !condition { failures.append("step \(step) at \(now): \(message)") }
    }

    mutating func run(steps: Int) {
        perform(consumer.linkUp(mtu: 23, at: now))
        linkIsUp = true
        for index in 0..<steps {
            step = index
            randomInput()
            checkModel()
            if failures.count > 5 { return }
        }
        // Drop the link: whatever is pending ends now.
        step = steps
        perform(consumer.linkDown(at: now))
        checkModel()
        for id in submitted {
            check(completions[id] == 1, "request \(id) ended \(completions[id] ?? 0) times")
        }
        check(consumer.pendingRequestCount == 0, "\(consumer.pendingRequestCount) requests still pending after linkDown")
    }

    mutating func randomInput() {
        // Out of session most requests only fail with notConnected: lean towards setting one up.
        if consumer.phase != .active && random.percent(40) {
            recover()
            return
        }
        switch random.int(0...999) {
        case 0..<190: notificationSource()
        case 190..<410: deliverDataSource()
        case 410..<570: deliverWriteResult()
        case 570..<670: submitFetch()
        case 670..<720: submitAppFetch()
        case 720..<760: submitAction()
        case 760..<800: cancel()
        case 800..<880: tick()
        case 880..<940: answerSubscription()
        case 940..<955: link()
        case 955..<967: serviceChanged()
        case 967..<972: stop()
        case 972..<992: staleWriteResult()
        default: garbageDataSource()
        }
    }

    /// The step that brings a session closer: link, publish, answer a subscription.
    mutating func recover() {
        if !linkIsUp {
            perform(consumer.linkUp(mtu: random.pick([23, 185, 247]), at: now))
            linkIsUp = true
        } else if !subscriptionsToAnswer.isEmpty {
            answerSubscription()
        } else if consumer.phase == .idle {
            // Unpublished, stopped, or a failed subscription: published (again).
            perform(consumer.serviceChanged(published: true, at: now))
        } else {
            tick()
        }
    }

    // MARK: Inputs

    mutating func notificationSource() {
        let bytes: [UInt8]
        if random.percent(4) {
            bytes = (0..<random.pick([0, 1, 7, 9])).map { _ in random.byte() }
        } else {
            let eventID = EventID(rawValue: random.pick([0, 0, 0, 0, 1, 1, 2, 2, 3, 200]))
            bytes = NotificationSourceEvent(
                eventID: eventID, eventFlags: EventFlags(rawValue: random.byte()),
                categoryID: CategoryID(rawValue: random.pick([0, 1, 4, 6, 12, 200])),
                categoryCount: random.byte(), notificationUID: uid(UInt32(random.int(1...8)))).encode()
        }
        let processed = consumer.isInSession
        let actions = consumer.received(notificationSource: bytes, at: now)
        if processed, let event = try? NotificationSourceEvent.decode(bytes) {
            switch event.eventID {
            case .added, .modified: live.insert(event.notificationUID)
            case .removed: live.remove(event.notificationUID)
            default: break
            }
        }
        perform(actions)
    }

    mutating func deliverDataSource() {
        guard !dataSource.isEmpty else { return }
        let fragment = dataSource.removeFirst()
        perform(consumer.received(dataSource: fragment, at: now))
    }

    mutating func garbageDataSource() {
        let fragment = (0..<random.int(1...12)).map { _ in random.byte() }
        perform(consumer.received(dataSource: fragment, at: now))
    }

    mutating func deliverWriteResult() {
        guard !writeResults.isEmpty else { return }
        let (token, result) = writeResults.removeFirst()
        unansweredWrites[token] = nil
        perform(consumer.writeCompleted(token, result, at: now))
    }

    mutating func staleWriteResult() {
        let token = WriteToken(rawValue: UInt32(random.int(0...5_000)))
        guard unansweredWrites[token] == nil else { return }
        perform(consumer.writeCompleted(token, random.percent(50) ? .success : .transportFailure, at: now))
    }

    mutating func submitFetch() {
        let attributes = random.pick(RandomRun.attributeSets)
        let target = uid(UInt32(random.int(1...8)))
        let (id, actions) = consumer.fetchAttributes(attributes, for: target, at: now)
        track(id, actions)
    }

    mutating func submitAppFetch() {
        let app = random.pick(RandomRun.apps)
        let attributes: [AppAttributeID] = random.percent(80) ? [.displayName] : [.displayName, AppAttributeID(rawValue: 7)]
        let (id, actions) = consumer.fetchAppAttributes(app, attributes, at: now)
        track(id, actions)
    }

    mutating func submitAction() {
        let action = ActionID(rawValue: random.pick([0, 0, 1, 1, 2]))
        let target = uid(UInt32(random.int(1...8)))
        let (id, actions) = consumer.performAction(action, on: target, at: now)
        track(id, actions)
    }

    mutating func track(_ id: ConsumerRequestID, _ actions: [ConsumerAction]) {
        check(completions[id] == nil, "request ID \(id) handed out twice")
        submitted.append(id)
        completions[id] = 0
        perform(actions)
    }

    mutating func cancel() {
        guard !submitted.isEmpty else { return }
        let id = random.percent(70) ? submitted[random.int(max(0, submitted.count - 4)...(submitted.count - 1))] : random.pick(submitted)
        perform(consumer.cancel(id, at: now))
    }

    mutating func tick() {
        if random.percent(15), let deadline = consumer.nextDeadline, deadline > now {
            now = deadline
        } else {
            now = now + .milliseconds(random.int(0...1_500))
        }
        perform(consumer.tick(now))
    }

    mutating func answerSubscription() {
        guard !subscriptionsToAnswer.isEmpty else { return }
        let characteristic = subscriptionsToAnswer.removeFirst()
        let result: ATTResult = random.percent(92) ? .success : random.pick([insufficientAuthentication, .transportFailure])
        perform(consumer.subscriptionCompleted(characteristic, result, at: now))
    }

    mutating func link() {
        if linkIsUp && random.percent(85) {
            perform(consumer.linkDown(at: now))
            linkWentDown()
        } else {
            // Linked again (or a new link without the old one reported down).
            if linkIsUp { linkWentDown() }
            perform(consumer.linkUp(mtu: random.pick([23, 185, 247]), at: now))
            linkIsUp = true
        }
    }

    /// The link is gone: nothing more arrives from the NP; the transport fails what it still had.
    mutating func linkWentDown() {
        linkIsUp = false
        subscriptionsToAnswer.removeAll()
        dataSource.removeAll()
        writeResults = writeResults.map { ($0.0, .transportFailure) }
        unansweredWrites.removeAll()
    }

    mutating func serviceChanged() {
        let published = random.percent(50)
        perform(consumer.serviceChanged(published: published, at: now))
    }

    mutating func stop() {
        perform(consumer.stop(at: now))
    }

    // MARK: The NP and the transport answering actions

    mutating func perform(_ actions: [ConsumerAction]) {
        for action in actions {
            switch action {
            case .subscribe(let characteristic):
                subscriptionsToAnswer.append(characteristic)
            case .unsubscribe:
                break
            case .writeControlPoint(let bytes, let token):
                written(bytes, token)
            case .emit(let event):
                observe(event)
            }
        }
    }

    mutating func written(_ bytes: [UInt8], _ token: WriteToken) {
        // At most one write outstanding: every earlier one has had its result,
        // or was given up after a whole request timeout without one.
        for (other, issued) in unansweredWrites where now < issued + configuration.requestTimeout {
            check(false, "write \(token.rawValue) issued while write \(other.rawValue) (issued at \(issued)) has no result yet")
        }
        check(unansweredWrites[token] == nil, "write token \(token.rawValue) reused")
        check(consumer.isInSession, "a write outside a session")
        unansweredWrites[token] = now
        let command: ControlPointCommand
        do {
            command = try ControlPointCommand.decode(bytes)
        } catch {
            check(false, "undecodable Control Point write \(bytes): \(error)")
            return
        }
        answer(command, token)
    }

    /// The NP's answer to a command: a write result (sometimes none) and, on
    /// success, a response (sometimes none, sometimes wrong) split at random points.
    mutating func answer(_ command: ControlPointCommand, _ token: WriteToken) {
        let roll = random.int(0...99)
        if roll < 4 { return }  // the transport never answers this write
        let result: ATTResult
        if roll < 78 {
            result = .success
        } else if roll < 94 {
            result = .attError(ATTErrorCode(rawValue: random.pick([0xA0, 0xA1, 0xA2, 0xA3, 0x05, 0x0E])))
        } else {
            result = .transportFailure
        }
        writeResults.append((token, result))
        guard result == .success, !random.percent(4) else { return }  // sometimes no response comes
        var bytes: [UInt8]
        switch command {
        case .getNotificationAttributes(let request):
            var target = request.notificationUID
            var attributes = request.attributes.map { asked in
                let value: AttributeValue = asked.id == .appIdentifier
                    ? AttributeValue(random.pick(RandomRun.apps))
                    : AttributeValue(text(random.int(0...min(Int(asked.maxLength ?? 20), 20))))
                return NotificationAttribute(asked.id, value)
            }
            if random.percent(6) { target = uid(target.rawValue &+ 1_000) }
            if random.percent(4) { attributes[0].id = NotificationAttributeID(rawValue: 0x55) }
            bytes = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(notificationUID: target, attributes: attributes)).encode()
        case .getAppAttributes(let request):
            var app = request.appIdentifier
            if random.percent(6) { app += "x" } else { appsAnswered.insert(app) }
            let attributes = request.attributes.map { AppAttribute($0, AttributeValue(text(random.int(0...12)))) }
            bytes = DataSourceResponse.appAttributes(AppAttributesResponse(appIdentifier: app, attributes: attributes)).encode()
        case .performNotificationAction:
            return  // no Data Source traffic follows an action
        }
        if random.percent(2) { bytes[0] ^= 0x01 }  // a wrong CommandID: cannot be framed
        dataSource += split(bytes)
    }

    mutating func text(_ length: Int) -> String {
        String(decoding: (0..<length).map { _ in UInt8(random.int(0x61...0x7A)) }, as: UTF8.self)
    }

    /// Splits a response at 0–3 random points (each piece non-empty).
    mutating func split(_ bytes: [UInt8]) -> [[UInt8]] {
        guard bytes.count > 1 else { return [bytes] }
        var cuts = Set<Int>()
        for _ in 0..<random.int(0...3) { cuts.insert(random.int(1...(bytes.count - 1))) }
        var pieces: [[UInt8]] = []
        var start = 0
        for cut in cuts.sorted() + [bytes.count] {
            pieces.append(Array(bytes[start..<cut]))
            start = cut
        }
        return pieces
    }

    mutating func observe(_ event: ConsumerEvent) {
        switch event {
        case .sessionStarted:
            check(!inSession, "sessionStarted inside a session")
            inSession = true
            live.removeAll()
            appsAnswered.removeAll()
            check(consumer.notifications.isEmpty, "a new session starts with \(consumer.notifications.count) notifications")
            check(consumer.appAttributes.isEmpty, "a new session starts with cached apps")
        case .sessionEnded:
            check(inSession, "sessionEnded without a session")
            inSession = false
            live.removeAll()
            appsAnswered.removeAll()
            // The NP's answers to the old session are not delivered into a
            // later one, nor the results of its writes: the caller drops them.
            dataSource.removeAll()
            unansweredWrites.removeAll()
            writeResults.removeAll()
            check(consumer.notifications.isEmpty, "\(consumer.notifications.count) notifications survive the session")
            check(consumer.appAttributes.isEmpty, "cached apps survive the session")
            check(consumer.pendingRequestCount == 0, "\(consumer.pendingRequestCount) requests survive the session")
        case .completed(let id, let result):
            if let count = completions[id] {
                completions[id] = count + 1
                check(count == 0, "request \(id) ended twice: again with \(result)")
            } else {
                check(false, "completion for a request never submitted: \(id)")
            }
            if case .success = result { successes += 1 }
        case .added(let notification), .modified(let notification):
            check(inSession, "\(event) outside a session")
            check(consumer.notifications[notification.uid] != nil, "\(notification.uid) announced but not in the model")
        case .removed(let notification):
            check(inSession, "\(event) outside a session")
            check(consumer.notifications[notification.uid] == nil, "removed \(notification.uid) still in the model")
        case .ready(let notification, _), .updated(let notification, _):
            check(inSession, "\(event) outside a session")
            check(consumer.notifications[notification.uid] != nil, "\(notification.uid) shown but not in the model")
        case .attributes, .appAttributes, .unknownEvent, .protocolError, .dataSourceUnavailable, .displayFailed:
            check(inSession, "\(event) outside a session")
        }
    }

    /// Checked after every input.
    mutating func checkModel() {
        let stale = consumer.notifications.keys.filter { !live.contains($0) }
        check(stale.isEmpty, "the model holds notifications not live in this session: \(stale)")
        check(consumer.notifications.count <= configuration.maximumNotifications, "the model exceeds its bound")
        for (key, notification) in consumer.notifications {
            check(key == notification.uid, "model key \(key) holds \(notification.uid)")
        }
        let strangers = consumer.appAttributes.keys.filter { !appsAnswered.contains($0) }
        check(strangers.isEmpty, "cached apps not answered in this session: \(strangers)")
        check(consumer.isInSession == inSession, "isInSession \(consumer.isInSession), events say \(inSession)")
        if !consumer.isInSession {
            check(consumer.notifications.isEmpty && consumer.appAttributes.isEmpty, "a model outside a session")
        }
        let open = submitted.filter { completions[$0] == 0 }.count
        check(consumer.pendingRequestCount == open, "engine has \(consumer.pendingRequestCount) pending, \(open) requests not ended")
        if let deadline = consumer.nextDeadline {
            check(open > 0 || !consumer.entries.isEmpty || consumer.writeInFlight != nil, "a deadline \(deadline) with nothing pending")
        }
    }
}

extension ConsumerEvent {
    /// The UID a `.ready` names (nil for every other event).
    var readyUID: NotificationUID? {
        if case .ready(let notification, _) = self { return notification.uid }
        return nil
    }
}

/// The random interleavings draw from the suite's shared generator (PropertyTests.swift).
extension SplitMix64 {
    mutating func percent(_ chance: Int) -> Bool { bool(chance) }
}

// MARK: - Ready to show, request bounds and wrong answers (what users saw)

/// A phone answering every Control Point write of `consumer` at once, as the
/// NP would: the write succeeds, then its response follows (attributes for
/// every notification, a name for every app). Returns every event emitted.
private func answerEverything(_ first: [ConsumerAction], _ consumer: inout Consumer, at now: Timestamp = .zero,
                              whileRunning: (inout Consumer, [ConsumerEvent]) -> [ConsumerAction] = { _, _ in [] }) throws -> [ConsumerEvent] {
    var pending = first
    var all: [ConsumerEvent] = []
    var steps = 0
    while let write = try writes(pending).first {
        steps += 1
        try #require(steps < 10_000, "the exchange does not end")
        all += events(pending)
        var next = consumer.writeCompleted(write.token, .success, at: now)
        switch write.command {
        case .getNotificationAttributes(let request):
            let response = NotificationAttributesResponse(notificationUID: request.notificationUID, attributes: request.attributes.map { tuple in
                switch tuple.id {
                case .appIdentifier: NotificationAttribute(.appIdentifier, AttributeValue("com.example.app\(request.notificationUID.rawValue % 3)"))
                case .date: NotificationAttribute(.date, "20261123T101500")
                default: NotificationAttribute(tuple.id, AttributeValue("n\(request.notificationUID.rawValue)"))
                }
            })
            next += deliver(response, to: &consumer, at: now)
        case .getAppAttributes(let request):
            next += deliver(AppAttributesResponse(appIdentifier: request.appIdentifier, attributes: [AppAttribute(.displayName, AttributeValue("App \(request.appIdentifier.suffix(1))"))]), to: &consumer, at: now)
        case .performNotificationAction:
            break
        }
        next += whileRunning(&consumer, events(next))
        pending = next
    }
    all += events(pending)
    return all
}

@Suite("Consumer: ready to show")
struct ConsumerReadyTests {
    @Test("A phone holding 100 notifications at connection: every one becomes ready, no request budget is used up, and the application's requests go out ahead of the backlog")
    func hundredAtConnection() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var first: [ConsumerAction] = []
        for raw in UInt32(1)...100 {
            first += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting, .positiveAction]), at: .zero)
        }
        #expect(try writes(first).count == 1, "one write at a time")
        var applicationRequests: [ConsumerRequestID] = []
        var applicationResults: [ConsumerResult] = []
        var readyBeforeAction = 0
        var readySoFar = 0
        let all = try answerEverything(first, &consumer) { consumer, events in
            readySoFar += events.filter { $0.readyUID != nil }.count
            // While the backlog lasts (after 10 are shown), the application asks for 70 things.
            guard readySoFar >= 10, applicationRequests.isEmpty else { return [] }
            readyBeforeAction = readySoFar
            var actions: [ConsumerAction] = []
            for raw in UInt32(31)...100 {
                applicationRequests.append(consumer.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 8)], for: uid(raw), at: .zero, into: &actions))
            }
            return actions
        }
        for case .completed(let id, let result) in all where applicationRequests.contains(id) { applicationResults.append(result) }
        let ready = Set(all.compactMap(\.readyUID))
        #expect(ready.count == 100, "every notification is shown")
        #expect(all.filter { $0.readyUID != nil }.count == 100, "each once")
        #expect(!all.contains { if case .displayFailed = $0 { return true }; return false })
        // The first 64 requests were accepted (the application's budget), the
        // other 6 refused; none was refused because of the display's fetches.
        #expect(applicationResults.count == 70)
        #expect(applicationResults.filter { $0.error == nil }.count == 64)
        #expect(applicationResults.filter { $0.error == .tooManyRequests }.count == 6)
        #expect(readyBeforeAction >= 10 && readyBeforeAction < 100)
        #expect(consumer.pendingRequestCount == 0 && consumer.entries.isEmpty)
    }

    @Test("The application's action is written before the display's backlog of fetches")
    func actionAheadOfBacklog() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var pending: [ConsumerAction] = []
        for raw in UInt32(1)...20 {
            pending += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting, .negativeAction]), at: .zero)
        }
        let fetch1 = try onlyWrite(pending)
        let (action, actionActions) = consumer.performAction(.negative, on: uid(20), at: .zero)
        #expect(try writes(actionActions).isEmpty, "the first fetch's write is in flight")
        // An action needs no response: it goes out as soon as the write is done, before 19 more fetches.
        let actionWrite = try onlyWrite(consumer.writeCompleted(fetch1.token, .success, at: .zero))
        #expect(actionWrite.command == .performNotificationAction(PerformNotificationAction(notificationUID: uid(20), actionID: .negative)))
        #expect(results(consumer.writeCompleted(actionWrite.token, .success, at: .zero), for: action) == [.success(.actionPerformed)])
        let next = try onlyWrite(deliver(standardResponse(1), to: &consumer))
        #expect(next.command == displayNameCommand(mailApp), "the shown notification's app name before the next fetch")
    }

    @Test("A live notification is fetched before the PreExisting backlog")
    func liveBeforeBacklog() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        var pending: [ConsumerAction] = []
        for raw in UInt32(1)...5 {
            pending += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
        }
        let fetch1 = try onlyWrite(pending)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 99, category: .incomingCall), at: .zero)).isEmpty)
        _ = consumer.writeCompleted(fetch1.token, .success, at: .zero)
        #expect(try onlyWrite(deliver(standardResponse(1), to: &consumer)).command == standardCommand(99))
    }

    @Test("Two notifications of an app the phone does not know: one Get App Attributes, both shown without a name")
    func unknownAppAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes))
        var written: [Write] = []
        var all: [ConsumerAction] = []
        func step(_ actions: [ConsumerAction]) throws { all += actions; written += try writes(actions) }
        try step(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        try step(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero))
        try step(consumer.writeCompleted(written[0].token, .success, at: .zero))
        try step(consumer.writeCompleted(written[1].token, .success, at: .zero))
        try step(deliver(standardResponse(1), to: &consumer))
        try step(deliver(standardResponse(2), to: &consumer))
        let nameFetches = written.filter { $0.command == displayNameCommand(mailApp) }
        try #require(nameFetches.count == 1)
        try step(consumer.writeCompleted(nameFetches[0].token, .attError(.invalidParameter), at: .zero))
        try step(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero))
        if let last = written.last, last.command == standardCommand(3) {
            try step(consumer.writeCompleted(last.token, .success, at: .zero))
            try step(deliver(standardResponse(3), to: &consumer))
        }
        #expect(written.filter { $0.command == displayNameCommand(mailApp) }.count == 1)
        #expect(events(all).compactMap(\.readyUID) == [uid(1), uid(2), uid(3)])
        for case .ready(_, let appName) in events(all) { #expect(appName == nil) }
    }

    @Test("maximumRequests counts every waiting caller: of ten identical fetches with a bound of 4, four wait and six are refused")
    func identicalRequestsCounted() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(maximumRequests: 4), with: [(1, [])])
        var actions: [ConsumerAction] = []
        let ids = (0..<10).map { _ in consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions) }
        #expect(try writes(actions).count == 1, "identical requests share one command")
        #expect(consumer.pendingRequestCount == 4)
        for id in ids.suffix(6) { #expect(results(actions, for: id) == [.failure(.tooManyRequests)]) }
        let write = try onlyWrite(actions)
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        for id in ids.prefix(4) { #expect(results(answered, for: id) == [.success(.notificationAttributes(standardResponse(1)))]) }
    }

    @Test("A response naming another UID fails the oldest request at once, even after unframeable bytes, with an error naming both UIDs; the next request goes on",
          arguments: [false, true])
    func wrongUIDFailsAtOnce(afterGarbage: Bool) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        if afterGarbage {
            // Bytes no request explains: the reassembler resynchronizes.
            #expect(events(consumer.received(dataSource: [0x07, 0x01, 0x02], at: .zero)).count == 1)
        }
        let (first, firstActions) = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        let (second, _) = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        let wrong = NotificationAttributesResponse(notificationUID: uid(77), attributes: standardResponse(1).attributes)
        let answered = deliver(wrong, to: &consumer, at: at(milliseconds: 50))
        let error = try #require(invalidResponse(results(answered, for: first)))
        #expect(error.reason == .wrongNotificationUID(expected: uid(1), actual: uid(77)))
        #expect(error.description.contains("uid 77") && error.description.contains("uid 1"))
        let write2 = try onlyWrite(answered)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 60))
        #expect(results(deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 70)), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }
}
