// The Consumer under random interleavings of its inputs: a scripted NP and
// transport answer in random order and at random times; invariants after every input.

import Testing
@testable import ANCS

extension ConsumerTests {
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
        var configuration = ConsumerConfiguration(
            requestTimeout: generator.percent(50) ? .seconds(10) : .seconds(2),
            pipeliningDepth: generator.int(1...3),
            eagerAttributes: generator.percent(40) ? standardAttributes : [],
            eagerAppNames: generator.percent(80),
            maximumNotifications: generator.percent(50) ? 4 : 512,
            maximumRequests: generator.percent(30) ? 5 : 64)
        // The display's filters, some of the time: an app, a category, the backlog past 2.
        if generator.percent(30) {
            configuration.hide(app: "com.example.chat")
            configuration.hiddenCategories = [.social]
            configuration.maximumPreExisting = 2
        }
        self.configuration = configuration
        random = generator
        consumer = Consumer(configuration: configuration)
    }

    var configurationDescription: String {
        "depth \(configuration.pipeliningDepth), timeout \(configuration.requestTimeout), "
            + "eager \(!configuration.eagerAttributes.isEmpty), max notifications \(configuration.maximumNotifications), "
            + "max requests \(configuration.maximumRequests), hidden apps \(configuration.hiddenApps.count)"
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
        if consumer.link != .active && random.percent(40) {
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
        } else if !consumer.link.isSubscribed {
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
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAttributes(attributes, for: target, at: now, into: &actions)
        track(id, actions)
    }

    mutating func submitAppFetch() {
        let app = random.pick(RandomRun.apps)
        let attributes: [AppAttributeID] = random.percent(80) ? [.displayName] : [.displayName, AppAttributeID(rawValue: 7)]
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAppAttributes(app, attributes, at: now, into: &actions)
        track(id, actions)
    }

    mutating func submitAction() {
        let action = ActionID(rawValue: random.pick([0, 0, 1, 1, 2]))
        let target = uid(UInt32(random.int(1...8)))
        var actions: [ConsumerAction] = []
        let id = consumer.performAction(action, on: target, at: now, into: &actions)
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
        perform(consumer.tick(at: now))
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
        case .hidden(let uid):
            check(inSession, "\(event) outside a session")
            check(consumer.notifications[uid] != nil, "\(uid) hidden but not in the model")
        case .attributes, .appAttributes, .unknownEvent, .protocolError, .dataSourceUnavailable, .displayFailed:
            check(inSession, "\(event) outside a session")
        case .health:
            break  // told whenever the phone's answers change it, in a session or not
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
            let liveness = consumer.probeTime != nil || consumer.watchesSilence
            check(open > 0 || !consumer.session.entries.isEmpty || !consumer.writeSlot.isFree || liveness, "a deadline \(deadline) with nothing pending")
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
