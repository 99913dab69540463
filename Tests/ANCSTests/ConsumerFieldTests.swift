// What a month of a real iPhone does to the consumer, each case on the
// engine's virtual clock: a notification the person clears on the phone
// while Notification Source is lost, Data Source lost alone, a phone that
// answers just past the request timeout, the probe crossing an
// announcement, and a phone that refuses every write while it announces.

import Testing
@testable import ANCS

@Suite("Consumer: a month of a real iPhone")
struct ConsumerFieldTests {
    static let minute: Int64 = 60_000
    /// The default probe interval, in milliseconds.
    static let probe = ConsumerConfiguration.default.probeInterval.components.seconds * 1000
    static let appIdentifierOnly = [NotificationAttributeRequest(.appIdentifier)]

    /// A consumer showing notifications (`displayAttributes` without app
    /// names), in a session started at 0 with the default liveness, whose
    /// first probe (15 s in) was answered 0xA2. `held` are announced at 1 ms
    /// and shown.
    func showingConsumer(held: [UInt32] = [], appNames: Bool = false) throws -> Consumer {
        var configuration = ConsumerConfiguration(eagerAttributes: standardAttributes)
        configuration.eagerAppNames = appNames
        var consumer = Consumer(configuration: configuration)
        _ = consumer.linkUp(mtu: 185, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        for raw in held {
            let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, raw, flags: .preExisting), at: at(milliseconds: 1)))
            _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: 1))
            _ = deliver(.notificationAttributes(standardResponse(raw)), mtu: 185, to: &consumer, at: at(milliseconds: 1))
        }
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: 15_001)))
        #expect(ConsumerLivenessTests.isProbe(probe, after: held.max()))
        _ = consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: at(milliseconds: 15_001))
        #expect(consumer.nextDeadline == at(milliseconds: 15_001 + Self.probe))
        return consumer
    }

    static func ready(_ actions: [ConsumerAction]) -> [UInt32] {
        events(actions).compactMap { if case .ready(let notification, _) = $0 { notification.uid.rawValue } else { nil } }
    }

    static func failed(_ actions: [ConsumerAction]) -> [UInt32] {
        events(actions).compactMap { if case .displayFailed(let uid, _) = $0 { uid.rawValue } else { nil } }
    }

    // MARK: - Notification Source lost, and the one notification cleared

    @Test("Notification Source lost, the next notification cleared on the phone (the probe's UID answers 0xA2 as a working phone's would): the refresh after the probe hears the phone announce one newer than every announcement, and a new session starts within one probe interval")
    func clearedNotificationCannotFoolTheProbe() throws {
        var consumer = try showingConsumer(held: [1, 2])
        // Notification Source is lost at 1 min: UIDs 3 (cleared at 2 min) and 4 (kept) are never announced.
        let due = 15_001 + Self.probe
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: due)))
        #expect(ConsumerLivenessTests.isProbe(probe, after: 2))
        // UID 3 is gone: 0xA2, as a working phone answers.
        let refresh = consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: at(milliseconds: due))
        #expect(refresh == [.unsubscribe(.notificationSource), .subscribe(.notificationSource)])
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: due + 50)).isEmpty)
        // The phone announces what it holds again: 1 and 2 are known (nothing told, nothing fetched) ...
        #expect(consumer.received(notificationSource: sourceEvent(.added, 1, flags: .preExisting), at: at(milliseconds: due + 60)).isEmpty)
        #expect(consumer.received(notificationSource: sourceEvent(.added, 2, flags: .preExisting), at: at(milliseconds: due + 61)).isEmpty)
        #expect(consumer.liveNotifications.map(\.uid.rawValue) == [1, 2])
        // ... and 4 is newer than every announcement: Notification Source had stopped.
        let found = consumer.received(notificationSource: sourceEvent(.added, 4, flags: .preExisting), at: at(milliseconds: due + 62))
        #expect(ConsumerLivenessTests.healthEvents(found) == [.resubscribing(.missedNotification)])
        #expect(ConsumerLivenessTests.resubscribed(found))
        // The new session hears it and shows it.
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: due + 100))
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: due + 100))
        var announced: [ConsumerAction] = []
        for raw: UInt32 in [1, 2, 4] {
            announced += consumer.received(notificationSource: sourceEvent(.added, raw, flags: .preExisting), at: at(milliseconds: due + 110))
        }
        let fetch = try onlyWrite(announced)
        #expect(fetch.command == standardCommand(1), "the first announced is fetched at once; the backlog follows, newest first")
        _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: due + 120))
        let next = try onlyWrite(deliver(.notificationAttributes(standardResponse(1)), mtu: 185, to: &consumer, at: at(milliseconds: due + 130)))
        #expect(next.command == standardCommand(4))
        _ = consumer.writeCompleted(next.token, .success, at: at(milliseconds: due + 140))
        #expect(Self.ready(deliver(.notificationAttributes(standardResponse(4)), mtu: 185, to: &consumer, at: at(milliseconds: due + 150))) == [4])
    }

    @Test("A healthy idle hour: a probe every probe interval (12 at the default 5 minutes), each followed by a refresh (two CCCD writes) that the phone answers by announcing what it holds again; nothing is told, fetched or subscribed again")
    func healthyIdleHour() throws {
        var consumer = try showingConsumer(held: [1, 2, 3])
        var probes = 0, cccdWrites = 0, told = 0, fetched = 0
        var now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
        while now <= 15_001 + 60 * Self.minute {
            var pending = consumer.tick(at: at(milliseconds: now))
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .writeControlPoint(_, let token):
                    let write = try onlyWrite([action])
                    if ConsumerLivenessTests.isProbe(write, after: 3) { probes += 1 } else { fetched += 1 }
                    pending += consumer.writeCompleted(token, .attError(.invalidParameter), at: at(milliseconds: now))
                case .unsubscribe:
                    cccdWrites += 1
                case .subscribe(let characteristic):
                    cccdWrites += 1
                    pending += consumer.subscriptionCompleted(characteristic, .success, at: at(milliseconds: now))
                    for raw: UInt32 in [1, 2, 3] {
                        pending += consumer.received(notificationSource: sourceEvent(.added, raw, flags: .preExisting), at: at(milliseconds: now))
                    }
                case .emit:
                    told += 1
                }
            }
            now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
        }
        let perHour = Int(60 * 60 / ConsumerConfiguration.default.probeInterval.components.seconds)
        #expect(perHour == 12 && probes == perHour && cccdWrites == 2 * perHour)
        #expect(told == 0 && fetched == 0)
        #expect(consumer.health == .healthy && consumer.liveNotifications.count == 3)
    }

    @Test("A new session's first probe refreshes nothing (the subscription is fresh), nor does a probe the phone refuses; its retry, answered, does")
    func noRefreshWhenFresh() throws {
        var consumer = Consumer(configuration: .default)
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        let first = try onlyWrite(consumer.tick(at: at(milliseconds: 15_000)))
        #expect(consumer.writeCompleted(first.token, .attError(.invalidParameter), at: at(milliseconds: 15_000)).isEmpty)
        let second = try onlyWrite(consumer.tick(at: at(milliseconds: 15_000 + Self.probe)))
        // Refused once with 0x03: asked again at the retry interval, no refresh.
        #expect(consumer.writeCompleted(second.token, .attError(.writeNotPermitted), at: at(milliseconds: 15_000 + Self.probe)).isEmpty)
        let retry = try onlyWrite(consumer.tick(at: at(milliseconds: 30_000 + Self.probe)))
        #expect(consumer.writeCompleted(retry.token, .attError(.invalidParameter), at: at(milliseconds: 30_000 + Self.probe)) == [.unsubscribe(.notificationSource), .subscribe(.notificationSource)])
    }

    @Test("The probe crossing an announcement: the UID it asks for is announced while it is out, and its answer with attributes is no missed notification")
    func probeCrossesAnnouncement() throws {
        var consumer = try showingConsumer(held: [1])
        let due = 15_001 + Self.probe
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: due)))
        #expect(ConsumerLivenessTests.isProbe(probe, after: 1))
        _ = consumer.writeCompleted(probe.token, .success, at: at(milliseconds: due))
        // UID 2 is posted and announced while the probe is out: the probe's
        // question is answered by Notification Source, and its answer waits
        // as any request's (the display's fetch goes after it).
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 2), at: at(milliseconds: due + 5))).isEmpty)
        let answer = NotificationAttributesResponse(notificationUID: uid(2), attributes: [NotificationAttribute(.appIdentifier, AttributeValue(mailApp))])
        let actions = deliver(.notificationAttributes(answer), mtu: 185, to: &consumer, at: at(milliseconds: due + 10))
        #expect(ConsumerLivenessTests.healthEvents(actions).isEmpty)
        #expect(!actions.contains(.unsubscribe(.dataSource)) && !actions.contains(.unsubscribe(.notificationSource)))
        let fetch = try onlyWrite(actions)
        #expect(fetch.command == standardCommand(2))
        _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: due + 10))
        #expect(Self.ready(deliver(.notificationAttributes(standardResponse(2)), mtu: 185, to: &consumer, at: at(milliseconds: due + 20))) == [2])
    }

    /// UID 7 announced at 60 s, its display fetch written and taken, and
    /// unanswered at the request timeout (70 s): the actions of that tick.
    func timedOutFetch(_ consumer: inout Consumer) throws -> (fetch: Write, timedOut: [ConsumerAction]) {
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 60_000)))
        _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: 60_000))
        return (fetch, consumer.tick(at: at(milliseconds: 70_000)))
    }

    /// The same fetch written again at the timeout, and that write taken.
    func fetchAskedAgain(_ consumer: inout Consumer) throws -> (fetch: Write, again: Write) {
        let (fetch, timedOut) = try timedOutFetch(&consumer)
        let again = try onlyWrite(timedOut)
        _ = consumer.writeCompleted(again.token, .success, at: at(milliseconds: 70_000))
        return (fetch, again)
    }

    // MARK: - A timed-out fetch is asked again; Data Source checked

    @Test("A phone that answers just past the request timeout: the display's fetch is written again at the timeout, and the first write's late answer shows the notification; the second write's answer is consumed, told nothing")
    func slowPhoneIsHeard() throws {
        var consumer = try showingConsumer()
        let (fetch, timedOut) = try timedOutFetch(&consumer)
        #expect(Self.failed(timedOut).isEmpty)
        let again = try onlyWrite(timedOut)
        #expect(again.bytes == fetch.bytes)
        _ = consumer.writeCompleted(again.token, .success, at: at(milliseconds: 70_000))
        // The first write's answer, 11 s after it.
        let late = deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 71_000))
        #expect(Self.ready(late) == [7])
        // The second write's answer, 11 s after it: nobody's, consumed without a word.
        let second = deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 81_000))
        #expect(events(second).isEmpty, "\(events(second))")
        #expect(consumer.reassembler.outstandingCount == 0)
        #expect(consumer.health == .healthy)
    }

    @Test("The second write's answer comes alone (the first was lost): it answers the fetch")
    func secondAnswerServes() throws {
        var consumer = try showingConsumer()
        _ = try fetchAskedAgain(&consumer)
        let answered = deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 72_000))
        #expect(Self.ready(answered) == [7])
        // No request left waiting: the next deadline is the probe's, an interval after the last write result.
        #expect(consumer.nextDeadline == at(milliseconds: 70_000 + Self.probe))
    }

    @Test("Data Source lost alone while Notification Source speaks: the first fetch's timeout asks again, and when Data Source says nothing to that either the consumer subscribes again, 2 × the request timeout after the first write (not four timeouts later)")
    func dataSourceLostAlone() throws {
        var consumer = try showingConsumer()
        _ = try fetchAskedAgain(&consumer)
        #expect(consumer.nextDeadline == at(milliseconds: 80_000))
        let actions = consumer.tick(at: at(milliseconds: 80_000))
        #expect(ConsumerLivenessTests.healthEvents(actions) == [.resubscribing(.probeUnanswered)])
        #expect(ConsumerLivenessTests.resubscribed(actions))
        // The new session hears it again and shows it.
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: 80_100))
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: 80_100))
        let refetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 7, flags: .preExisting), at: at(milliseconds: 80_200)))
        _ = consumer.writeCompleted(refetch.token, .success, at: at(milliseconds: 80_200))
        #expect(Self.ready(deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 80_300))) == [7])
    }

    @Test("An app-name fetch that times out is asked again once; the answer to the second write names the notification")
    func appNameAskedAgain() throws {
        var consumer = try showingConsumer(appNames: true)
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 60_000)))
        _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: 60_000))
        let name = try onlyWrite(deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 60_100)))
        #expect(name.command == displayNameCommand(mailApp))
        _ = consumer.writeCompleted(name.token, .success, at: at(milliseconds: 60_100))
        let again = try onlyWrite(consumer.tick(at: at(milliseconds: 70_100)))
        #expect(again.bytes == name.bytes)
        _ = consumer.writeCompleted(again.token, .success, at: at(milliseconds: 70_100))
        let shown = deliver(.appAttributes(displayNameResponse(mailApp, "Mail")), mtu: 185, to: &consumer, at: at(milliseconds: 71_000))
        #expect(events(shown).contains(.ready(try #require(consumer.notification(uid(7))), appName: AttributeValue("Mail"))))
    }

    @Test("An application's request that joined the display's fetch rides on its second write: the answer to either serves both")
    func joinedRequestRidesAlong() throws {
        var consumer = try showingConsumer()
        let fetch = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 60_000)))
        // The application asks exactly what the display asked: it joins the fetch.
        var joined: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(7), at: at(milliseconds: 60_000), into: &joined)
        #expect(try writes(joined).isEmpty)
        _ = consumer.writeCompleted(fetch.token, .success, at: at(milliseconds: 60_000))
        let timedOut = consumer.tick(at: at(milliseconds: 70_000))
        #expect(results(timedOut, for: id).isEmpty)
        let again = try onlyWrite(timedOut)
        #expect(again.bytes == fetch.bytes)
        _ = consumer.writeCompleted(again.token, .success, at: at(milliseconds: 70_000))
        let answered = deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 71_000))
        #expect(results(answered, for: id) == [.success(.notificationAttributes(standardResponse(7)))])
        #expect(Self.ready(answered) == [7])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("An application's own request that times out is told at once, not asked again (its own policy)")
    func applicationRequestTimesOutOnce() throws {
        var consumer = try showingConsumer()
        let shown = try onlyWrite(consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 60_000)))
        _ = consumer.writeCompleted(shown.token, .success, at: at(milliseconds: 60_000))
        _ = deliver(.notificationAttributes(standardResponse(7)), mtu: 185, to: &consumer, at: at(milliseconds: 60_100))
        var asked: [ConsumerAction] = []
        let id = consumer.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 100)], for: uid(7), at: at(milliseconds: 61_000), into: &asked)
        let write = try onlyWrite(asked)
        _ = consumer.writeCompleted(write.token, .success, at: at(milliseconds: 61_000))
        let timedOut = consumer.tick(at: at(milliseconds: 71_000))
        #expect(results(timedOut, for: id) == [.failure(.timedOut)])
        #expect(try writes(timedOut).isEmpty)
        #expect(consumer.pendingRequestCount == 0)
    }

    // MARK: - Not shared, with a quiet radio

    @Test("A phone that refuses every write with 0x03 and still announces: not shared is told once; announcements neither end it nor bring fetches; one Control Point write per retry interval; a write answered ends it")
    func notSharedQuietRadio() throws {
        var consumer = try showingConsumer()
        var writesMade: [Int64] = [], health: [ConsumerHealth] = [], resubscriptions = 0
        var now: Int64 = 60_000
        var next: UInt32 = 10
        func play(_ actions: [ConsumerAction], refuse: Bool = true) throws {
            var pending = actions
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .writeControlPoint(_, let token):
                    writesMade.append(now)
                    pending += consumer.writeCompleted(token, refuse ? .attError(.writeNotPermitted) : .attError(.invalidParameter), at: at(milliseconds: now))
                case .emit(.health(let state)):
                    health.append(state)
                case .unsubscribe(.dataSource):
                    resubscriptions += 1
                default:
                    break
                }
            }
        }
        // Announced every 2 s for two minutes, every write refused.
        while now < 180_000 {
            try play(consumer.received(notificationSource: sourceEvent(.added, next), at: at(milliseconds: now)))
            next += 1
            now += 2_000
            try play(consumer.tick(at: at(milliseconds: now)))
        }
        #expect(health == [.notShared])
        #expect(resubscriptions == 0)
        // Two fetches refused (the second tells it), then a probe every 15 s at most.
        for (earlier, later) in zip(writesMade.dropFirst(2), writesMade.dropFirst(3)) {
            #expect(later - earlier >= 15_000, "\(writesMade)")
        }
        #expect(writesMade.count <= 2 + 120 / 15 + 1, "\(writesMade)")
        // Sharing turned on: the next probe is answered, and a new session hears what the phone holds.
        now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
        try play(consumer.tick(at: at(milliseconds: now)), refuse: false)
        #expect(health == [.notShared, .resubscribing(.sharingRestored)])
        #expect(resubscriptions == 1)
    }
}
