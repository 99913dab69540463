// Liveness and health on the engine's virtual clock: what iPhones do in the
// field (docs/REAL-IPHONE.md, "When notifications stop"), each case to its recovery.

import Testing
@testable import ANCS

@Suite("Consumer: liveness and health")
struct ConsumerLivenessTests {
    static let minute: Int64 = 60_000
    /// The default probe interval, in milliseconds.
    static let probe = ConsumerConfiguration.default.probeInterval.components.seconds * 1000

    /// A consumer in a session with the default liveness settings (started
    /// 15 s before `now`), its first probe answered 0xA2 at `now`.
    func livelyConsumer(_ configuration: ConsumerConfiguration = .default, at now: Timestamp = .zero) throws -> Consumer {
        var consumer = Consumer(configuration: configuration)
        let start = now.adding(nanoseconds: -15_000_000_000)
        _ = consumer.linkUp(mtu: 23, at: start)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: start)
        #expect(try writes(consumer.subscriptionCompleted(.notificationSource, .success, at: start)).isEmpty)
        // The new session's probe is due a retry interval after the phone was
        // last heard (after its PreExisting announcements), written by `tick`.
        #expect(consumer.nextDeadline == now)
        let probe = try onlyWrite(consumer.tick(at: now))
        #expect(Self.isProbe(probe))
        #expect(consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: now).isEmpty)
        return consumer
    }

    /// A probe: Get Notification Attributes (AppIdentifier) for the UID after
    /// the highest announced (0 when none was: a phone may number from 0).
    static func isProbe(_ write: Write, after highest: UInt32? = nil) -> Bool {
        write.command == .getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(highest.map { $0 + 1 } ?? 0), attributes: [NotificationAttributeRequest(.appIdentifier)]))
    }

    static func healthEvents(_ actions: [ConsumerAction]) -> [ConsumerHealth] {
        events(actions).compactMap { if case .health(let state) = $0 { state } else { nil } }
    }

    /// Subscribing again: both subscriptions off, the session ended, Data Source subscribed anew.
    static func resubscribed(_ actions: [ConsumerAction]) -> Bool {
        actions.contains(.unsubscribe(.notificationSource)) && actions.contains(.unsubscribe(.dataSource))
            && actions.contains(.emit(.sessionEnded(.resubscribing))) && actions.contains(.subscribe(.dataSource))
    }

    @Test("A quiet session is probed after the probe interval (GNA AppIdentifier for the UID after the highest announced); a 0xA2 answer refreshes Notification Source in place (off, then on; the session kept, nothing told), and the next probe is an interval later")
    func probeAnswered() throws {
        var consumer = try livelyConsumer()
        #expect(consumer.nextDeadline == at(milliseconds: Self.probe))
        #expect(consumer.tick(at: at(milliseconds: Self.probe - 1)).isEmpty)
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: Self.probe)))
        #expect(Self.isProbe(probe))
        #expect(consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: at(milliseconds: Self.probe)) == [.unsubscribe(.notificationSource), .subscribe(.notificationSource)])
        #expect(consumer.isInSession)
        #expect(consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: Self.probe)).isEmpty)
        #expect(consumer.health == .healthy)
        #expect(consumer.nextDeadline == at(milliseconds: 2 * Self.probe))
    }

    @Test("The probe never holds back an application request: with a pipelining depth of 1, a fetch asked while the probe awaits its response is written at the probe's write result")
    func probeDoesNotDelay() throws {
        var consumer = try livelyConsumer()
        _ = consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 1))
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: 16 * Self.minute)))
        #expect(Self.isProbe(probe, after: 7))
        var queued: [ConsumerAction] = []
        _ = consumer.fetchAttributes(standardAttributes, for: uid(7), at: at(milliseconds: 16 * Self.minute), into: &queued)
        #expect(try writes(queued).isEmpty)  // one write at a time (ATT)
        let fetch = try onlyWrite(consumer.writeCompleted(probe.token, .success, at: at(milliseconds: 16 * Self.minute)))
        #expect(fetch.command == standardCommand(7))
    }

    @Test("A probe with no answer by the request timeout: subscribe again (off, then on); the new session's probe answered: healthy")
    func probeUnanswered() throws {
        var consumer = try livelyConsumer()
        let start = Self.probe
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: start)))
        _ = consumer.writeCompleted(probe.token, .success, at: at(milliseconds: start))  // written; no response follows
        let actions = consumer.tick(at: at(milliseconds: start + 10_000))
        #expect(Self.healthEvents(actions) == [.resubscribing(.probeUnanswered)])
        #expect(Self.resubscribed(actions))
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: start + 10_100))
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: start + 10_100))
        #expect(consumer.tick(at: at(milliseconds: start + 10_200)).isEmpty, "not at once: after the PreExisting announcements")
        let again = try onlyWrite(consumer.tick(at: at(milliseconds: start + 25_100)))
        #expect(Self.isProbe(again))
        #expect(Self.healthEvents(consumer.writeCompleted(again.token, .attError(.invalidParameter), at: at(milliseconds: start + 25_200))) == [.healthy])
    }

    @Test("A phone that never answers again: after one quick confirmation, subscribing again is not repeated faster than the probe interval")
    func noTightLoop() throws {
        var consumer = try livelyConsumer()
        var now = Self.probe
        var resubscriptions: [Int64] = []
        while now < 2 * 60 * Self.minute {
            let actions = consumer.tick(at: at(milliseconds: now))
            if Self.resubscribed(actions) {
                resubscriptions.append(now)
                _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: now))
                _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: now))
            }
            for write in try writes(actions) { _ = consumer.writeCompleted(write.token, .success, at: at(milliseconds: now)) }
            now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
        }
        // The new session's probe goes a retry interval (15 s) in, and times
        // out after the request timeout (10 s); after that unconfirmed one,
        // a probe interval apart.
        #expect(resubscriptions.count >= 3)
        #expect(resubscriptions.dropFirst().first == resubscriptions.first.map { $0 + 25_000 })
        for (earlier, later) in zip(resubscriptions.dropFirst(), resubscriptions.dropFirst(2)) {
            #expect(later - earlier >= Self.probe)
        }
    }

    @Test("Notification Source silent for the silence limit (no probe, so no refresh): subscribe again, at 6 hours")
    func silence() throws {
        var configuration = ConsumerConfiguration()
        configuration.probeInterval = .zero
        var consumer = Consumer(configuration: configuration)
        let start = Timestamp.zero.adding(nanoseconds: -15_000_000_000)
        _ = consumer.linkUp(mtu: 23, at: start)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: start)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: start)
        var now: Int64 = 0
        while true {
            now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
            let actions = consumer.tick(at: at(milliseconds: now))
            if Self.resubscribed(actions) {
                #expect(Self.healthEvents(actions) == [.resubscribing(.notificationSourceSilent)])
                break
            }
            let probe = try onlyWrite(actions)
            _ = consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: at(milliseconds: now))
        }
        #expect(now == 6 * 60 * Self.minute - 15_000)  // 6 h after the session began (15 s before the first probe)
    }

    @Test("Sharing off: the phone takes both subscriptions, refuses the session's probe (15 s in) with 0x03, and the retry 15 s later too: not shared, told once, nothing fetched; sharing on: subscribe again, healthy at the next answer")
    func notShared() throws {
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: standardAttributes))
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        #expect(consumer.nextDeadline == at(milliseconds: 15_000))
        let first = try onlyWrite(consumer.tick(at: at(milliseconds: 15_000)))
        #expect(Self.isProbe(first))
        #expect(Self.healthEvents(consumer.writeCompleted(first.token, .attError(.writeNotPermitted), at: at(milliseconds: 15_000))).isEmpty)
        #expect(consumer.nextDeadline == at(milliseconds: 30_000))
        let second = try onlyWrite(consumer.tick(at: at(milliseconds: 30_000)))
        #expect(Self.isProbe(second))
        #expect(Self.healthEvents(consumer.writeCompleted(second.token, .attError(.writeNotPermitted), at: at(milliseconds: 30_000))) == [.notShared])
        // Still refused: the same state, not told again; the next probe waits twice as long.
        #expect(consumer.nextDeadline == at(milliseconds: 45_000))
        let third = try onlyWrite(consumer.tick(at: at(milliseconds: 45_000)))
        #expect(Self.healthEvents(consumer.writeCompleted(third.token, .attError(.writeNotPermitted), at: at(milliseconds: 45_000))).isEmpty)
        #expect(consumer.health == .notShared)
        #expect(consumer.nextDeadline == at(milliseconds: 75_000))
        // Sharing turned on: the next probe is answered.
        let fourth = try onlyWrite(consumer.tick(at: at(milliseconds: 75_000)))
        let restored = consumer.writeCompleted(fourth.token, .attError(.invalidParameter), at: at(milliseconds: 75_000))
        #expect(Self.healthEvents(restored) == [.resubscribing(.sharingRestored)])
        #expect(Self.resubscribed(restored))
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: 75_100))
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: 75_100))
        // The phone announces what it holds: healthy, and the notification is fetched.
        let announced = consumer.received(notificationSource: sourceEvent(.added, 3, flags: .preExisting), at: at(milliseconds: 75_200))
        #expect(Self.healthEvents(announced) == [.healthy])
        #expect(try onlyWrite(announced).command == standardCommand(3))
    }

    @Test("A subscription refused with 0x05 keeps its code (waiting for permission, told once), is asked again after the retry interval, then twice as long, and the session runs once the phone allows it")
    func subscriptionRefused() throws {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        let refused = consumer.subscriptionCompleted(.dataSource, insufficientAuthentication, at: .zero)
        #expect(Self.healthEvents(refused) == [.waitingForPermission(.dataSource, .insufficientAuthentication)])
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        #expect(consumer.nextDeadline == at(milliseconds: 15_000))
        let retry = consumer.tick(at: at(milliseconds: 15_000))
        #expect(retry.contains(.subscribe(.dataSource)) && retry.contains(.unsubscribe(.notificationSource)))
        #expect(Self.healthEvents(consumer.subscriptionCompleted(.dataSource, insufficientAuthentication, at: at(milliseconds: 15_100))).isEmpty)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: at(milliseconds: 15_100))
        #expect(consumer.nextDeadline == at(milliseconds: 45_100))
        let allowed = consumer.tick(at: at(milliseconds: 45_100))
        #expect(allowed.contains(.subscribe(.dataSource)))
        #expect(Self.healthEvents(consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: 45_200))) == [.healthy])
    }

    @Test("Subscriptions refused for a day (the person never allows notifications): the retries back off, doubling from the retry interval to 4 minutes (15 per hour, not 240), and the first retry after the link comes back is at the retry interval again")
    func refusedForADay() throws {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        let hour = 3600 * 1000 as Int64
        var subscribes: [Int64] = []  // Data Source subscriptions asked, by time (ms)
        var now: Int64 = 0
        var actions = [ConsumerAction.subscribe(.dataSource)]
        while now < 24 * hour {
            if actions.contains(.subscribe(.dataSource)) {
                subscribes.append(now)
                _ = consumer.subscriptionCompleted(.dataSource, .attError(.insufficientAuthorization), at: at(milliseconds: now))
                _ = consumer.subscriptionCompleted(.notificationSource, .attError(.insufficientAuthorization), at: at(milliseconds: now))
            }
            now = try #require(consumer.nextDeadline).nanoseconds / 1_000_000
            actions = consumer.tick(at: at(milliseconds: now))
        }
        let waits = zip(subscribes.dropFirst(), subscribes).prefix(6).map { ($0 - $1) / 1000 }
        #expect(waits == [15, 30, 60, 120, 240, 240])
        let lastHour = subscribes.filter { $0 >= 23 * hour }.count
        #expect(lastHour == 15, "\(lastHour) subscriptions in the last hour")
        // The link drops and comes back: asked soon again.
        _ = consumer.linkDown(at: at(milliseconds: now))
        _ = consumer.linkUp(mtu: 23, at: at(milliseconds: now))
        _ = consumer.subscriptionCompleted(.dataSource, .attError(.insufficientAuthorization), at: at(milliseconds: now))
        _ = consumer.subscriptionCompleted(.notificationSource, .attError(.insufficientAuthorization), at: at(milliseconds: now))
        #expect(consumer.nextDeadline == at(milliseconds: now + 15_000))
    }

    @Test("A refused Notification Source subscription ends the session; it is subscribed again after the retry interval, not after stop")
    func notificationSourceRefused() throws {
        var consumer = Consumer()
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        let refused = consumer.subscriptionCompleted(.notificationSource, .attError(.insufficientAuthorization), at: .zero)
        #expect(Self.healthEvents(refused) == [.waitingForPermission(.notificationSource, .insufficientAuthorization)])
        #expect(!consumer.isInSession)
        #expect(consumer.tick(at: at(milliseconds: 15_000)) == [.subscribe(.dataSource)])
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: at(milliseconds: 15_000))
        _ = consumer.subscriptionCompleted(.notificationSource, .attError(.insufficientAuthorization), at: at(milliseconds: 15_000))
        _ = consumer.stop(at: at(milliseconds: 16_000))
        #expect(consumer.nextDeadline == nil)
        #expect(consumer.tick(at: at(milliseconds: 60_000)).isEmpty)
    }

    @Test("A write answered 0xFD (CCCD improperly configured): the phone holds no subscription; subscribe again")
    func cccdImproperlyConfigured() throws {
        var consumer = try livelyConsumer()
        _ = consumer.received(notificationSource: sourceEvent(.added, 7), at: at(milliseconds: 1))
        var fetch: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(7), at: at(milliseconds: 2), into: &fetch)
        let write = try onlyWrite(fetch)
        let actions = consumer.writeCompleted(write.token, .attError(ATTErrorCode(rawValue: 0xFD)), at: at(milliseconds: 3))
        #expect(Self.healthEvents(actions) == [.resubscribing(.subscriptionLost)])
        #expect(Self.resubscribed(actions))
        #expect(results(actions, for: id).count == 1)
    }

    @Test("Bond lost is told once, and the next answer after pairing anew is healthy")
    func bondLost() throws {
        var consumer = try livelyConsumer()
        #expect(Self.healthEvents(consumer.bondLost(at: at(milliseconds: 5))) == [.bondLost])
        #expect(consumer.bondLost(at: at(milliseconds: 6)).isEmpty)
        #expect(Self.healthEvents(consumer.received(notificationSource: sourceEvent(.added, 1), at: at(milliseconds: 7))) == [.healthy])
    }

    @Test("Liveness off (probe interval, silence limit and retry interval zero): no deadline in a quiet session, and a refusal is not asked again")
    func off() throws {
        var configuration = ConsumerConfiguration()
        configuration.probeInterval = .zero
        configuration.silenceLimit = .zero
        configuration.retryInterval = .zero
        var consumer = Consumer(configuration: configuration)
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, insufficientAuthentication, at: .zero)
        #expect(try writes(consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)).isEmpty)
        #expect(consumer.nextDeadline == nil)
        #expect(consumer.health == .waitingForPermission(.dataSource, .insufficientAuthentication))
    }

    @Test("Notification Source quiet while the Control Point answers: the probe asks for the UID after the highest announced, gets its attributes, and the consumer subscribes again; the new session hears it announced")
    func missedNotification() throws {
        var consumer = try livelyConsumer()
        _ = consumer.received(notificationSource: sourceEvent(.added, 4), at: at(milliseconds: 1))
        _ = consumer.received(notificationSource: sourceEvent(.removed, 2), at: at(milliseconds: 2))
        let start = Self.probe + 2
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: start)))
        #expect(Self.isProbe(probe, after: 4), "a Removed event for an older UID does not lower it")
        _ = consumer.writeCompleted(probe.token, .success, at: at(milliseconds: start))
        // The phone holds UID 5, never announced: it answers with its AppIdentifier.
        let answer = NotificationAttributesResponse(notificationUID: uid(5), attributes: [NotificationAttribute(.appIdentifier, AttributeValue(mailApp))])
        let actions = deliver(answer, to: &consumer, at: at(milliseconds: start + 100))
        #expect(Self.healthEvents(actions) == [.resubscribing(.missedNotification)])
        #expect(Self.resubscribed(actions))
        // Not told, neither as a notification nor as attributes (the probe's answer is no
        // one's, and UID 5 is in no model): the new session announces it.
        #expect(events(actions).allSatisfy {
            switch $0 {
            case .added, .attributes: false
            default: true
            }
        }, "\(events(actions))")
        #expect(consumer.notification(uid(5)) == nil)
    }

    @Test("An application request identical to the probe joins it and ends with it (found by the fuzz target: it was never ended)")
    func requestJoinsProbe() throws {
        var consumer = try livelyConsumer()
        let probe = try onlyWrite(consumer.tick(at: at(milliseconds: Self.probe)))
        #expect(Self.isProbe(probe))
        var joined: [ConsumerAction] = []
        let id = consumer.fetchAttributes([NotificationAttributeRequest(.appIdentifier)], for: uid(0), at: at(milliseconds: Self.probe), into: &joined)
        #expect(try writes(joined).isEmpty)
        #expect(consumer.pendingRequestCount == 1)
        let answered = consumer.writeCompleted(probe.token, .attError(.invalidParameter), at: at(milliseconds: Self.probe))
        #expect(results(answered, for: id) == [.failure(.invalidParameter)])
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.health == .healthy)
    }
}
