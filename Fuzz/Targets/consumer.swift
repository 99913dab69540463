// The Consumer engine (our NC) fed random input sequences: a hostile or
// broken NP, a flaky link and a busy application.
//
//   byte 0   pipeliningDepth 1…3 (b % 3 + 1); bit 2: eager attributes; bit 3: no eager app names;
//            bit 4: liveness off (else probe 3 s, silence limit 20 s, retry 1 s);
//            bit 5: the display's filters (app "a", Social, Silent, the backlog past 2)
//   byte 1   unlimitedValueLength: 0 → 64, else the byte
//   then, repeated: an op byte (op % 16) and its operands
//    0 linkUp(mtu 23 + b)            1 Data Source subscribed (result b)
//    2 Notification Source subscribed (result b)
//    3 Notification Source event (8 bytes; EventID % 4, UID 0…3)
//    4 raw Data Source notification (a length byte, then that many bytes)
//    5 write result (token b, result b)
//    6 fetch notification attributes   7 fetch app attributes
//    8 perform action   9 cancel   10 tick (+20 ms × b)   11 linkDown
//   12 serviceChanged(b)   13 stop   15 mtuChanged(23 + b)
//   14 the NP answers the oldest accepted Get … Attributes write with a
//      well-formed response, cut in MTU − 3 fragments (or b % 32 + 1 if b is
//      odd; the last fragment dropped if b & 2)
//
// Invariants: no trap; one Control Point write at a time, across sessions
// on a link that stays up (a write whose result never comes holds the link
// for one request timeout after it was issued, or until the link drops);
// with eager attributes, ready at most once per notification and session
// and only for a notification in the model, updated only after ready,
// hidden only with a filter and for a notification in the model; every request ends exactly once, and all of them by
// the end of their session; a successful fetch answers its request and
// completes in the session it was made in, while it lasts (nothing of a
// previous session survives); at a session's start and end the model and
// the app cache are empty; model changes are reported only inside a
// session; the model holds only notifications announced in this session
// and at most maximumNotifications; health is told on each change only, and
// the last told is the engine's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runConsumer(FuzzInput(start, count))
    return 0
}

func runConsumer(_ input: FuzzInput) {
    var input = input
    let setup = input.byte()
    let unlimitedByte = input.byte()
    let unlimited = unlimitedByte == 0 ? 64 : Int(unlimitedByte)
    var configuration = ConsumerConfiguration(
        requestTimeout: .seconds(2), pipeliningDepth: Int(setup % 3) + 1,
        eagerAttributes: setup & 4 == 0 ? [] : ConsumerConfiguration.displayAttributes,
        eagerAppNames: setup & 8 == 0,
        maximumNotifications: 8, maximumCachedApps: 4, maximumRequests: 8, unlimitedValueLength: unlimited)
    // Liveness on a scale the ticks reach (each up to 5.1 s): a probe after
    // 3 s, the silence limit 20 s, a retry after 1 s; or off (bit 4).
    configuration.probeInterval = setup & 16 == 0 ? .seconds(3) : .zero
    configuration.silenceLimit = setup & 16 == 0 ? .seconds(20) : .zero
    configuration.retryInterval = setup & 16 == 0 ? .seconds(1) : .zero
    // The display's filters (bit 5): an app, a category, Silent ones, the backlog past 2.
    let hides = setup & 32 != 0
    if hides {
        configuration.hide(app: "a")
        configuration.hiddenCategories = [.social]
        configuration.fetchesSilent = false
        configuration.maximumPreExisting = 2
    }
    // The model keeps values only while the display needs them (bit 6, the
    // microcontroller preset's way: `keepsAttributes`).
    configuration.keepsAttributes = setup & 64 == 0
    var consumer = Consumer(configuration: configuration)
    let texts: [[UInt8]] = [[], Array("com.apple.MobileSMS".utf8), Array("On my way — 5 min 🚲".utf8), Array(repeating: 0x41, count: 300)]
    let apps = ["com.apple.mobilemail", "a", "", "a\u{0}b", String(repeating: "x", count: 600)]

    var now = Timestamp.zero
    var inSession = false
    var epoch = 0
    var seen: Set<NotificationUID> = []
    var shown: Set<NotificationUID> = []  // told ready in this session
    var submitted: [ConsumerRequestID: (command: ControlPointCommand, epoch: Int)] = [:]
    var ended: Set<ConsumerRequestID> = []
    var tokens: [WriteToken] = []
    var written: [WriteToken: [UInt8]] = [:]
    var accepted: [[UInt8]] = []  // writes the NP accepted and owes a response to, oldest first
    var inFlight: (WriteToken, Timestamp)?  // the last write whose result has not come, when issued
    var toldHealth = ConsumerHealth.healthy  // the last health told
    // The last responses told, as the application holds them, with a copy
    // that shares no storage with them: a later response (read into the
    // buffer a response may share with the reassembler: `keepsAttributes`
    // false) must never change one still held.
    var held: [(told: [NotificationAttribute], copy: [NotificationAttribute])] = []
    func hold(_ attributes: [NotificationAttribute]) {
        held.append((attributes, attributes.map { NotificationAttribute($0.id, AttributeValue(bytes: $0.value.withBytes { Array($0) })) }))
        if held.count > 4 { held.removeFirst() }
    }

    func absorb(_ actions: [ConsumerAction]) {
        // An input may tell a notification ready and then end the session
        // (subscribing again): the model read afterwards is already empty.
        let endsSession = actions.contains { if case .emit(.sessionEnded) = $0 { true } else { false } }
        for action in actions {
            guard case .emit(let event) = action else {
                if case .writeControlPoint(let bytes, let token) = action {
                    check(written[token] == nil, "token reused")
                    // ATT: one write at a time; an unanswered one holds the link for a request timeout.
                    if let (busy, issued) = inFlight {
                        check(now >= issued + configuration.requestTimeout, "write \(token.rawValue) while \(busy.rawValue) is in flight")
                    }
                    inFlight = (token, now)
                    tokens.append(token)
                    written[token] = bytes
                }
                continue
            }
            switch event {
            case .sessionStarted:
                check(!inSession, "session started twice")
                inSession = true
                epoch += 1
                seen = []
                shown = []
                check(consumer.notifications.isEmpty && consumer.appAttributes.isEmpty, "a new session starts empty")
            case .sessionEnded:
                check(inSession, "session ended outside a session")
                inSession = false
                check(consumer.notifications.isEmpty, "model empty after session end")
                check(consumer.appAttributes.isEmpty, "app cache empty after session end")
                check(consumer.pendingRequestCount == 0, "requests pending after session end")
                for id in submitted.keys { check(ended.contains(id), "request \(id) survived its session") }
            case .added(let n), .modified(let n):
                check(inSession, "\(event) outside a session")
                seen.insert(n.uid)
                if case .added = event { shown.remove(n.uid) }  // Added again: shown anew
            case .removed(let n):
                check(inSession, "\(event) outside a session")
                shown.remove(n.uid)
                check(consumer.notifications[n.uid] == nil, "removed notification still in the model")
            case .attributes(let response):
                check(inSession, "\(event) outside a session")
                hold(response.attributes)
            case .appAttributes:
                check(inSession, "\(event) outside a session")
            case .completed(let id, let result):
                guard let request = submitted[id] else { return check(false, "completion of unknown request \(id)") }
                check(!ended.contains(id), "request \(id) ended twice")
                ended.insert(id)
                guard case .success(let response) = result else { break }
                check(inSession && request.epoch == epoch, "request \(id) succeeded outside its session")
                switch (response, request.command) {
                case (.notificationAttributes(let r), .getNotificationAttributes):
                    checkResponse(.notificationAttributes(r), answers: DataSourceRequest(request.command)!, unlimited: unlimited)
                case (.appAttributes(let r), .getAppAttributes):
                    checkResponse(.appAttributes(r), answers: DataSourceRequest(request.command)!, unlimited: unlimited)
                case (.actionPerformed, .performNotificationAction):
                    break
                default:
                    check(false, "\(response) answers \(request.command)")
                }
            case .ready(let n, _):
                check(inSession && (endsSession || consumer.notification(n.uid) != nil), "ready outside a session or for a notification not in the model")
                check(!shown.contains(n.uid), "ready twice for \(n.uid) in one session")
                check(!configuration.eagerAttributes.isEmpty, "ready without eager attributes")
                shown.insert(n.uid)
                hold(n.attributes)
            case .updated(let n, _):
                check(inSession && (endsSession || consumer.notification(n.uid) != nil), "updated outside a session or for a notification not in the model")
                check(shown.contains(n.uid), "updated before ready for \(n.uid)")
                hold(n.attributes)
            case .displayFailed:
                check(inSession, "displayFailed outside a session")
            case .hidden(let uid):
                check(inSession && (endsSession || consumer.notification(uid) != nil), "hidden outside a session or for a notification not in the model")
                check(hides, "hidden without a filter")
            case .unknownEvent, .protocolError, .dataSourceUnavailable:
                break
            case .health(let state):
                // Told on each change only (and the last told is what the engine holds: below).
                check(state != toldHealth, "health \(state) told twice in a row")
                toldHealth = state
            }
        }
        check(toldHealth == consumer.health, "health told \(toldHealth), engine holds \(consumer.health)")
    }
    func result(_ byte: UInt8) -> ATTResult {
        switch byte % 8 {
        case 0, 1, 2: .success
        case 3: .attError(ATTErrorCode(rawValue: 0xA0 + byte % 5))
        case 4: .attError(.writeNotPermitted)
        case 5: .attError(.insufficientAuthentication)
        case 6: .attError(.cccdImproperlyConfigured)
        default: .transportFailure
        }
    }
    func submit(_ command: ControlPointCommand, _ call: (inout Consumer) -> ConsumerRequest) {
        let request = call(&consumer)
        let id = request.id, actions = request.actions
        check(submitted[id] == nil, "request ID \(id) reused")
        submitted[id] = (command, inSession ? epoch : -1)
        absorb(actions)
    }
    /// The NP's answer to an accepted write, as tuples of the texts cut to the max lengths.
    func answer(_ bytes: [UInt8], _ choice: UInt8) -> [UInt8]? {
        guard let command = try? ControlPointCommand.decode(bytes), let request = DataSourceRequest(command) else { return nil }
        var response = Array(request.bytes[..<request.headerCount])
        for (index, tuple) in request.tuples.enumerated() {
            let text = texts[(Int(choice) + index) % texts.count]
            let value = text.prefix(min(tuple.maxLength ?? text.count, text.count))
            response.append(tuple.id)
            response.append(UInt8(value.count & 0xFF))
            response.append(UInt8(value.count >> 8))
            response.append(contentsOf: value)
        }
        return response
    }

    while !input.isAtEnd {
        let op = input.byte()
        switch op % 16 {
        case 0:
            accepted.removeAll()
            inFlight = nil
            absorb(consumer.linkUp(mtu: Int(input.byte()) + 23, at: now))
        case 1: absorb(consumer.subscriptionCompleted(.dataSource, result(input.byte()), at: now))
        case 2: absorb(consumer.subscriptionCompleted(.notificationSource, result(input.byte()), at: now))
        case 3:
            var event = input.take(8)
            if event.count == 8 { event[0] %= 4; event[4] %= 4; event[5] = 0; event[6] = 0; event[7] = 0 }
            absorb(consumer.received(notificationSource: event, at: now))
        case 4: absorb(consumer.received(dataSource: input.chunk(), at: now))
        case 5:
            let choice = Int(input.byte())
            let token = tokens.isEmpty ? WriteToken(rawValue: UInt32(choice)) : tokens[choice % tokens.count]
            let outcome = result(input.byte())
            if outcome == .success, let bytes = written.removeValue(forKey: token) { accepted.append(bytes) }
            if inFlight?.0 == token { inFlight = nil }
            absorb(consumer.writeCompleted(token, outcome, at: now))
        case 6:
            var attributes: [NotificationAttributeRequest] = []
            for _ in 0...(input.byte() % 8) {
                attributes.append(NotificationAttributeRequest(NotificationAttributeID(rawValue: input.byte() % 9), maxLength: UInt16(input.byte())))
            }
            let uid = NotificationUID(UInt32(input.byte() % 4))
            submit(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes))) {
                $0.fetchAttributes(attributes, for: uid, at: now)
            }
        case 7:
            let choice = input.byte()
            let app = apps[Int(choice) % apps.count]
            let attributes = choice & 0x80 == 0 ? [AppAttributeID.displayName] : [.displayName, AppAttributeID(rawValue: 1)]
            submit(.getAppAttributes(GetAppAttributes(appIdentifier: app, attributes: attributes))) {
                $0.fetchAppAttributes(app, attributes, at: now)
            }
        case 8:
            let action = ActionID(rawValue: input.byte() % 3)
            let uid = NotificationUID(UInt32(input.byte() % 4))
            submit(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action))) {
                $0.performAction(action, on: uid, at: now)
            }
        case 9:
            let choice = Int(input.byte())
            let ids = submitted.keys.sorted { $0.rawValue < $1.rawValue }
            if !ids.isEmpty { absorb(consumer.cancel(ids[choice % ids.count], at: now)) }
        case 10:
            now = now + .milliseconds(Int64(input.byte()) * 20)
            absorb(consumer.tick(at: now))
        case 11:
            accepted.removeAll()
            inFlight = nil
            absorb(consumer.linkDown(at: now))
        case 12: absorb(consumer.serviceChanged(published: input.byte() & 1 == 0, at: now))
        case 13: absorb(consumer.stop(at: now))
        case 14:
            let choice = input.byte()
            guard !accepted.isEmpty, let response = answer(accepted.removeFirst(), choice) else { break }
            let size = choice & 1 == 1 ? Int(choice >> 1) % 32 + 1 : max((consumer.mtu ?? 23) - 3, 20)
            var fragments = stride(from: 0, to: response.count, by: size).map { Array(response[$0..<min($0 + size, response.count)]) }
            if choice & 2 == 2 { fragments.removeLast() }
            for fragment in fragments { absorb(consumer.received(dataSource: fragment, at: now)) }
        default:
            consumer.mtuChanged(Int(input.byte()) + 23)
        }
        check(consumer.notifications.count <= configuration.maximumNotifications, "model bounded")
        for response in held { check(response.told == response.copy, "a response held changed after it was told") }
        if !configuration.keepsAttributes {
            // Values only where the display needs them (or one, an AppIdentifier the app filter reads).
            for tracked in consumer.session.model where !tracked.stage.isShowing && !tracked.notification.attributes.isEmpty {
                check(hides && tracked.stage != .settled && tracked.notification.attributes.count == 1,
                      "\(tracked.notification.uid) holds \(tracked.notification.attributes.count) values, not being shown")
            }
        }
        for uid in consumer.notifications.keys { check(inSession && seen.contains(uid), "\(uid) in the model, not announced in this session") }
    }
    absorb(consumer.linkDown(at: now))
    for id in submitted.keys { check(ended.contains(id), "request \(id) never ended") }
    check(consumer.pendingRequestCount == 0, "nothing pending after link down")
}
