// The Consumer engine (NC), driven through its inputs only, with hand-made
// bytes: Notification Source events and Data Source responses are built with
// the codec, Control Point writes are decoded back with
// `ControlPointCommand.decode`. Each test is named after the rule of the spec
// (or of the engine's contract) it checks. Time is an input: no test waits.

import Testing
@testable import ANCS

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
        var fetch: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(7), at: .zero, into: &fetch)
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
            == [.emit(.sessionStarted), .emit(.dataSourceUnavailable(insufficientAuthentication)),
                .emit(.health(.waitingForPermission(.dataSource, .insufficientAuthentication))), .subscribe(.notificationSource)])
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero) == [])
        #expect(consumer.isInSession)
        #expect(!consumer.dataSourceAvailable)

        _ = consumer.received(notificationSource: sourceEvent(.added, 1, flags: [.negativeAction]), at: .zero)
        #expect(consumer.notifications[uid(1)] != nil)
        var fetchActions: [ConsumerAction] = []
        let fetch = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &fetchActions)
        #expect(fetchActions == [.emit(.completed(fetch, .failure(.dataSourceUnavailable)))])
        var appActions: [ConsumerAction] = []
        let app = consumer.fetchAppAttributes(mailApp, at: .zero, into: &appActions)
        #expect(appActions == [.emit(.completed(app, .failure(.dataSourceUnavailable)))])

        // Perform Notification Action has no Data Source response: it still works.
        var actionActions: [ConsumerAction] = []
        let action = consumer.performAction(.negative, on: uid(1), at: .zero, into: &actionActions)
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
        let queued = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).id

        let ended = consumer.subscriptionCompleted(.notificationSource, insufficientAuthentication, at: .zero)
        #expect(ended == [
            .emit(.completed(queued, .failure(.sessionEnded))),
            .emit(.sessionEnded(.subscriptionFailed(insufficientAuthentication))),
            // The refusal is a state of the consumer's, with its ATT code (asked again later).
            .emit(.health(.waitingForPermission(.notificationSource, .insufficientAuthentication))),
        ])
        #expect(!consumer.isInSession)
        #expect(consumer.notifications.isEmpty)
        var lateActions: [ConsumerAction] = []
        let late = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &lateActions)
        #expect(lateActions == [.emit(.completed(late, .failure(.notConnected)))])
    }

    @Test("Outside a session every request fails with notConnected and nothing is written")
    func requestsOutsideASession() {
        var consumer = Consumer()
        var fetchActions: [ConsumerAction] = []
        let fetch = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &fetchActions)
        #expect(fetchActions == [.emit(.completed(fetch, .failure(.notConnected)))])
        var appActions: [ConsumerAction] = []
        let app = consumer.fetchAppAttributes(mailApp, at: .zero, into: &appActions)
        #expect(appActions == [.emit(.completed(app, .failure(.notConnected)))])
        var actionActions: [ConsumerAction] = []
        let action = consumer.performAction(.positive, on: uid(1), at: .zero, into: &actionActions)
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

    @Test("Service Changed removed ANCS and then the link dropped: the next link subscribes")
    func unpublishedEndsWithTheLink() {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        #expect(consumer.serviceChanged(published: false, at: .zero) == [.emit(.sessionEnded(.serviceUnpublished))])
        #expect(consumer.linkDown(at: .zero) == [])
        // A new link has a new GATT database, in which discovery found ANCS.
        #expect(consumer.linkUp(mtu: 23, at: .zero) == [.subscribe(.dataSource)])
        // And a host whose discovery finds none says so before linkUp.
        _ = consumer.linkDown(at: .zero)
        #expect(consumer.serviceChanged(published: false, at: .zero) == [])
        #expect(consumer.linkUp(mtu: 23, at: .zero) == [])
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

    @Test("A fetch merged into what a notification or an app holds: each ID once, where it first stood, with its last value")
    func attributesMerged() {
        func list(_ pairs: [(UInt8, String)]) -> [NotificationAttribute] {
            pairs.map { NotificationAttribute(rawID: $0.0, value: AttributeValue($0.1)) }
        }
        // Into nothing, IDs distinct: the fetched list itself.
        var held: [NotificationAttribute] = []
        let fetched = list([(1, "title"), (3, "message"), (0, "app")])
        held.merge(fetched)
        #expect(held == fetched)
        // Into nothing, an ID repeated: once, at its first place, the last value.
        held = []
        held.merge(list([(1, "a"), (3, "b"), (1, "c"), (0, "d"), (3, "e")]))
        #expect(held == list([(1, "c"), (3, "e"), (0, "d")]))
        // Into what is held: replaced in place, the new ones after.
        held.merge(list([(0, "D"), (5, "new"), (1, "C")]))
        #expect(held == list([(1, "C"), (3, "e"), (0, "D"), (5, "new")]))
        // Nothing fetched changes nothing.
        held.merge([])
        #expect(held == list([(1, "C"), (3, "e"), (0, "D"), (5, "new")]))
    }

    // MARK: Sessions

    @Test("Nothing survives a session: every notification, fetched value and app cache is discarded, every pending request ends", arguments: SessionEnd.allCases)
    func nothingSurvivesASession(_ end: SessionEnd) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [.positiveAction])])
        // A fetched value in the model and an app in the cache.
        let first = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).actions)
        _ = consumer.writeCompleted(first.token, .success, at: .zero)
        _ = deliver(standardResponse(1), to: &consumer)
        let app = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).actions)
        _ = consumer.writeCompleted(app.token, .success, at: .zero)
        _ = deliver(displayNameResponse(mailApp, "Mail"), to: &consumer)
        #expect(consumer.notifications[uid(1)]?.appIdentifier == mailApp)
        #expect(consumer.displayName(of: mailApp) == "Mail")

        // Pending: one written, one queued, one action queued.
        var writtenActions: [ConsumerAction] = []
        let written = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &writtenActions)
        let inFlight = try onlyWrite(writtenActions)
        let queued = consumer.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 100)], for: uid(1), at: .zero).id
        let action = consumer.performAction(.positive, on: uid(2), at: .zero).id
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
        let app = try onlyWrite(consumer.fetchAppAttributes(mailApp, at: .zero).actions)
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
        var actions: [ConsumerAction] = []
        let again = consumer.fetchAppAttributes(mailApp, at: at(milliseconds: 300), into: &actions)
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
        let pending = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).id
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
