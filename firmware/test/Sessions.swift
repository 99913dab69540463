// Whole sessions. The consumer session is what an accessory lives through,
// with the phone's bytes scripted from the conformance vectors; its heap and
// stack peaks are the figures the budget applies to. The loopback session
// runs a Consumer against a Provider over a perfect link at MTU 23 and checks
// the bytes the Provider sends and the answers 0xA0–0xA3.
import ANCS

struct SessionFigures {
    var heapPeak = 0
    var heapRequestedPeak = 0
    var stackPeak = 0
    var instructions = 0
    var allocations = 0
}

/// Tuple bytes as the spec lays them out: id, u16le length, value.
func tuple(_ id: UInt8, _ value: String) -> [UInt8] {
    let bytes = Array(value.utf8)
    return [id, UInt8(truncatingIfNeeded: bytes.count), UInt8(truncatingIfNeeded: bytes.count >> 8)] + bytes
}

/// Splits like an NP at this MTU: MTU − 3 bytes per notification.
func split(_ bytes: [UInt8], mtu: Int) -> [[UInt8]] {
    var out: [[UInt8]] = []
    var start = 0
    while start < bytes.count {
        let end = min(start + mtu - 3, bytes.count)
        out.append(Array(bytes[start..<end]))
        start = end
    }
    return out
}

/// True when some boundary between fragments falls inside a UTF-8 sequence.
func splitsAUTF8Sequence(_ fragments: [[UInt8]]) -> Bool {
    for fragment in fragments.dropFirst() where !fragment.isEmpty && fragment[0] & 0xC0 == 0x80 { return true }
    return false
}

func events(_ actions: [ConsumerAction]) -> [ConsumerEvent] {
    var out: [ConsumerEvent] = []
    for action in actions { if case .emit(let event) = action { out.append(event) } }
    return out
}

// MARK: - Consumer session (scripted phone)

/// Events the application heard, counted without keeping them (no heap).
struct EventCount {
    var added = 0
    var attributes = 0
    var removed = 0

    mutating func count(_ actions: [ConsumerAction]) {
        for action in actions {
            switch action {
            case .emit(.added): added += 1
            case .emit(.attributes): attributes += 1
            case .emit(.removed): removed += 1
            default: break
            }
        }
    }
}

func runConsumerSession(_ log: inout Log) -> SessionFigures {
    print("Consumer session at MTU 23: link up, subscriptions, PreExisting, eager fetch in MTU-23 fragments, app names, an action, link down")
    // Everything the phone sends, prepared before the measurement starts.
    let mtu23 = dsVectors.first { vector in vector.fragments.count > 1 && vector.fragments.allSatisfy { $0.count <= 20 } && vector.fragments[0].count == 20 }
    let mail = dsVectors.first { vector in vector.request.first == 1 }
    guard let mtu23, let mail, case .response(.notificationAttributes(let expectedSMS), _, _) = mtu23.expected,
          case .response(.appAttributes(let expectedMail), _, _) = mail.expected,
          case .getNotificationAttributes(let eager)? = try? ControlPointCommand.decode(mtu23.request)
    else {
        log.check(false, "the vectors hold no MTU-23 notification response and no app response")
        return SessionFigures()
    }
    let smsApp = expectedSMS[.appIdentifier]?.string ?? ""
    let preExisting = sourceEvent(.added, [.preExisting], .social, count: 1, uid: eager.notificationUID.rawValue)
    let appAnswer = split([1] + Array(smsApp.utf8) + [0] + tuple(0, "Messages"), mtu: 23)
    let call = sourceEvent(.added, [.positiveAction, .negativeAction], .incomingCall, count: 1, uid: 3)
    let callGone = sourceEvent(.removed, [.positiveAction, .negativeAction], .incomingCall, count: 0, uid: 3)
    log.check(splitsAUTF8Sequence(mtu23.fragments), "the MTU-23 fragments split a UTF-8 sequence")

    let inputs = SessionInputs(mtu23: mtu23, mail: mail, expectedSMS: expectedSMS, expectedMail: expectedMail, eager: eager,
                               smsApp: smsApp, preExisting: preExisting, appAnswer: appAnswer, call: call, callGone: callGone)
    var heard = EventCount()
    let figures = measured("", &log) { log in consumerSessionSteps(inputs, &heard, &log) }
    // The phone's bytes stay allocated until here, so the peak is the session's alone.
    withExtendedLifetime(inputs) {}
    log.check(heard.added == 2 && heard.attributes == 1 && heard.removed == 1,
              "events: \(heard.added) added, \(heard.attributes) attributes, \(heard.removed) removed")
    return figures
}

/// What the scripted phone sends, prepared before the measurement starts.
struct SessionInputs {
    let mtu23: DSVector
    let mail: DSVector
    let expectedSMS: NotificationAttributesResponse
    let expectedMail: AppAttributesResponse
    let eager: GetNotificationAttributes
    let smsApp: String
    let preExisting: [UInt8]
    let appAnswer: [[UInt8]]
    let call: [UInt8]
    let callGone: [UInt8]
}

/// The session itself. A function of its own so that everything it
/// allocates is released when it returns, before the heap is looked at.
@inline(never)
func consumerSessionSteps(_ inputs: SessionInputs, _ heard: inout EventCount, _ log: inout Log) {
    let mtu23 = inputs.mtu23, mail = inputs.mail, expectedSMS = inputs.expectedSMS, expectedMail = inputs.expectedMail
    let eager = inputs.eager, smsApp = inputs.smsApp, preExisting = inputs.preExisting, appAnswer = inputs.appAnswer
    let call = inputs.call, callGone = inputs.callGone
        var now = Timestamp.zero
        var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: eager.attributes, eagerAppNames: true))
        var actions = consumer.linkUp(mtu: 23, at: now)
        log.check(actions == [.subscribe(.dataSource)], "link up: subscribe to Data Source first")
        actions = consumer.subscriptionCompleted(.dataSource, .success, at: now)
        log.check(actions == [.emit(.sessionStarted), .subscribe(.notificationSource)], "then Notification Source; the session starts")
        actions = consumer.subscriptionCompleted(.notificationSource, .success, at: now)
        log.check(consumer.isInSession && consumer.dataSourceAvailable, "in session, Data Source available")

        now = now + .milliseconds(40)
        actions = consumer.received(notificationSource: preExisting, at: now)
        heard.count(actions)
        var written = writes(actions)
        log.check(consumer.notifications[eager.notificationUID]?.isPreExisting == true, "PreExisting notification \(eager.notificationUID) in the model")
        log.check(written.count == 1 && written[0].bytes == mtu23.request, "eager fetch writes \(written.first.map { hex($0.bytes) } ?? "nothing")")
        guard let first = written.first else { return }
        actions = consumer.writeCompleted(first.token, .success, at: now)
        for fragment in mtu23.fragments {
            now = now + .milliseconds(30)
            actions += consumer.received(dataSource: fragment, at: now)
        }
        heard.count(actions)
        let message = consumer.notifications[eager.notificationUID]?[.message]
        log.check(message == expectedSMS[.message], "message across \(mtu23.fragments.count) fragments: \(message?.string ?? "none")")
        log.check(consumer.notifications[eager.notificationUID]?.attributes == expectedSMS.attributes, "every fetched attribute in the model")

        written = writes(actions)
        log.check(written.count == 1 && written[0].bytes == [1] + Array(smsApp.utf8) + [0, 0], "eager app-name fetch for \(smsApp)")
        guard let second = written.first else { return }
        actions = consumer.writeCompleted(second.token, .success, at: now)
        for fragment in appAnswer { actions += consumer.received(dataSource: fragment, at: now) }
        heard.count(actions)
        log.check(consumer.displayName(of: smsApp)?.string == "Messages", "display name cached: \(consumer.displayName(of: smsApp)?.string ?? "none")")

        // The application asks for another app's name (the 邮件 vector).
        let mailFetch = consumer.fetchAppAttributes(expectedMail.appIdentifier, at: now)
        let mailRequest = mailFetch.id, mailActions = mailFetch.actions
        written = writes(mailActions)
        log.check(written.count == 1 && written[0].bytes == mail.request, "app attributes request for \(expectedMail.appIdentifier)")
        guard let third = written.first else { return }
        actions = consumer.writeCompleted(third.token, .success, at: now)
        for fragment in mail.fragments { actions += consumer.received(dataSource: fragment, at: now) }
        if case .success(.appAttributes(let app))? = completion(of: mailRequest, in: actions) {
            log.check(app == expectedMail, "display name: \(app[.displayName]?.string ?? "none")")
        } else {
            log.check(false, "the app attributes request did not succeed")
        }

        // An incoming call: its eager fetch is refused (0xA2), then declined.
        actions = consumer.received(notificationSource: call, at: now)
        heard.count(actions)
        written = writes(actions)
        guard let fourth = written.first else { return }
        actions = consumer.writeCompleted(fourth.token, .attError(.invalidParameter), at: now)
        log.check(consumer.pendingRequestCount == 0, "a refused eager fetch leaves nothing pending")
        let declined = consumer.performAction(.negative, on: NotificationUID(3), at: now)
        let decline = declined.id, declineActions = declined.actions
        written = writes(declineActions)
        log.check(written.count == 1 && written[0].bytes == [2, 3, 0, 0, 0, 1], "decline writes \(written.first.map { hex($0.bytes) } ?? "nothing")")
        guard let fifth = written.first else { return }
        actions = consumer.writeCompleted(fifth.token, .success, at: now)
        log.check(completion(of: decline, in: actions) == .success(.actionPerformed), "action performed")
        actions = consumer.received(notificationSource: callGone, at: now)
        heard.count(actions)
        log.check(consumer.notifications[NotificationUID(3)] == nil && consumer.notifications.count == 1, "the call is gone from the model")

        now = now + .seconds(1)
        actions = consumer.linkDown(at: now)
        heard.count(actions)
        log.check(actions == [.emit(.sessionEnded(.linkDown))] && consumer.notifications.isEmpty && !consumer.isInSession,
                  "link down: the session ends, nothing survives")
    }

/// Each ANCS error answer to a Control Point write, as the application hears it.
func runErrorAnswers(_ log: inout Log) {
    print("ANCS error answers to a Consumer's write")
    let cases: [(ATTErrorCode, ConsumerError)] = [
        (.unknownCommand, .unknownCommand), (.invalidCommand, .invalidCommand),
        (.invalidParameter, .invalidParameter), (.actionFailed, .actionFailed),
    ]
    for (code, expected) in cases {
        var consumer = connectedConsumer(log: &log)
        let submitted = consumer.fetchAppAttributes("com.example.app", at: .zero)
        let request = submitted.id, actions = submitted.actions
        guard let token = writes(actions).first?.token else {
            log.check(false, "no write")
            continue
        }
        let result = completion(of: request, in: consumer.writeCompleted(token, .attError(code), at: .zero))
        log.check(result == .failure(expected), "\(code): \(result?.error.map { "\($0)" } ?? "no failure")")
    }
}

// MARK: - Loopback session (Consumer <-> Provider)

/// A Consumer and a Provider joined by a perfect link: each one's actions are
/// the other's inputs, in order. Records what the Provider sent.
struct Loopback {
    var consumer: Consumer
    var provider: Provider
    var now = Timestamp.zero
    var heard: [ConsumerEvent] = []
    var providerHeard: [ProviderEvent] = []
    var sourceSent: [[UInt8]] = []
    var dataSent: [[UInt8]] = []
    var answers: [ATTResult] = []

    /// Carries the consumer's actions to the provider until the link is quiet.
    mutating func run(_ actions: [ConsumerAction]) {
        var queue = actions
        var index = 0
        while index < queue.count {
            let action = queue[index]
            index += 1
            switch action {
            case .subscribe(let characteristic):
                let fromProvider = provider.setSubscription(phone, characteristic, enabled: true)
                queue += consumer.subscriptionCompleted(characteristic, .success, at: now)
                queue += deliver(fromProvider)
            case .unsubscribe(let characteristic):
                queue += deliver(provider.setSubscription(phone, characteristic, enabled: false))
            case .writeControlPoint(let bytes, let token):
                let fromProvider = provider.controlPointWritten(phone, bytes)
                let result = answer(fromProvider) ?? .transportFailure
                answers.append(result)
                let delivered = deliver(Array(fromProvider.dropFirst()))
                queue += consumer.writeCompleted(token, result, at: now)
                queue += delivered
            case .emit(let event):
                heard.append(event)
            }
        }
    }

    /// Provider actions into the consumer; returns the consumer's actions.
    mutating func deliver(_ actions: [ProviderAction]) -> [ConsumerAction] {
        var out: [ConsumerAction] = []
        for action in actions {
            switch action {
            case .notify(_, .notificationSource, let bytes):
                sourceSent.append(bytes)
                out += consumer.received(notificationSource: bytes, at: now)
            case .notify(_, .dataSource, let bytes):
                dataSent.append(bytes)
                out += consumer.received(dataSource: bytes, at: now)
            case .notify(_, .controlPoint, _):
                break
            case .respond:
                break  // answered where the write is carried
            case .emit(let event):
                providerHeard.append(event)
            }
        }
        return out
    }

    mutating func request(_ made: (inout Consumer) -> ConsumerRequest) -> ConsumerResult? {
        let made = made(&consumer)
        let id = made.id, actions = made.actions
        let before = heard.count
        run(actions)
        for event in heard[before...] {
            if case .completed(let done, let result) = event, done == id { return result }
        }
        return nil
    }
}

func runLoopbackSession(_ log: inout Log) -> SessionFigures {
    print("Loopback session at MTU 23: Consumer (eager attributes and app names) against Provider")
    let date = ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 42, second: 0)
    // 20 ASCII bytes, then a bicycle: the notification boundary falls inside it.
    let text = "Running late, sorry \u{1F6B2} see you at the café"
    return measured("", &log) { log in loopbackSteps(text: text, date: date, &log) }
}

/// Runs `steps` with the heap, the stack and the instruction counter
/// measured from their start, and checks that they left no heap in use
/// (`what` begins that check's line).
func measured(_ what: String, _ log: inout Log, _ steps: (inout Log) -> Void) -> SessionFigures {
    fwStackMark()
    let baseline = fwHeapMark()
    let requestedBaseline = fwHeapRequested()
    let allocationsBefore = fwHeapAllocations()
    let start = fwInstructions()
    steps(&log)
    var figures = SessionFigures()
    figures.instructions = Int(truncatingIfNeeded: fwInstructions() &- start)
    figures.heapPeak = fwHeapPeak() - baseline
    figures.heapRequestedPeak = fwHeapRequestedPeak() - requestedBaseline
    figures.stackPeak = fwStackPeak()
    figures.allocations = fwHeapAllocations() - allocationsBefore
    log.check(fwHeapInUse() == baseline, "\(what)no heap left in use after the session (\(fwHeapInUse() - baseline) B)")
    return figures
}

/// The loopback session itself, in a function of its own (see consumerSessionSteps).
@inline(never)
func loopbackSteps(text: String, date: ANCSDate, _ log: inout Log) {
        var provider = Provider(configuration: ProviderConfiguration(firstNotificationUID: 40))
        provider.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages")
        let sms = ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Alice", message: text, date: date)
        let call = ProviderNotification(appIdentifier: "com.apple.mobilephone", categoryID: .incomingCall, flags: [.positiveAction, .negativeAction],
                                        title: "Mum", date: date, positiveActionLabel: "Answer", negativeActionLabel: "Decline",
                                        positiveActionEffect: .fail)
        do throws(ProviderError) {
            _ = try provider.add(sms)
            _ = try provider.add(call)
        } catch {
            log.check(false, "provider: \(error)")
        }
        let consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes, eagerAppNames: true))
        var link = Loopback(consumer: consumer, provider: provider)
        _ = link.provider.linkUp(phone, mtu: 23)
        link.run(link.consumer.linkUp(mtu: 23, at: link.now))

        log.check(link.sourceSent.count >= 2
                  && link.sourceSent[0] == sourceEvent(.added, [.preExisting], .social, count: 1, uid: 40)
                  && link.sourceSent[1] == sourceEvent(.added, [.positiveAction, .negativeAction, .preExisting], .incomingCall, count: 1, uid: 41),
                  "provider announces both as PreExisting: \(link.sourceSent.prefix(2).map(hex))")
        // Eager fetch of the SMS: the bytes on Data Source, independently encoded.
        let expectedSMS: [UInt8] = [0] + uidBytes(40) + tuple(0, "com.apple.MobileSMS") + tuple(1, "Alice") + tuple(3, text) + tuple(5, "20140322T154200")
        let smsFragments = split(expectedSMS, mtu: 23)
        log.check(link.dataSent.count >= smsFragments.count && Array(link.dataSent.prefix(smsFragments.count)) == smsFragments,
                  "provider sends the SMS attributes in \(smsFragments.count) MTU-23 notifications")
        log.check(splitsAUTF8Sequence(smsFragments), "one of them ends inside the bicycle's UTF-8 sequence")
        log.check(link.consumer.notifications[NotificationUID(40)]?[.message]?.string == text, "consumer: message \(link.consumer.notifications[NotificationUID(40)]?[.message]?.string ?? "none")")
        log.check(link.consumer.notifications[NotificationUID(40)]?[.date]?.date == date, "consumer: date parsed")
        log.check(link.consumer.displayName(of: "com.apple.MobileSMS")?.string == "Messages", "consumer: app name fetched eagerly")
        log.check(link.consumer.notifications[NotificationUID(41)]?[.title]?.string == "Mum", "consumer: the call's title")
        log.check(link.consumer.displayName(of: "com.apple.mobilephone")?.isEmpty == true, "an app known only from its notification has an empty name")

        // Application requests answered with each ANCS error the Provider can give.
        var result = link.request { $0.fetchAppAttributes("com.example.unknown", at: .zero) }
        log.check(result == .failure(.invalidParameter), "unknown app: \(describe(result))")
        result = link.request { $0.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 8)], for: NotificationUID(99), at: .zero) }
        log.check(result == .failure(.invalidParameter), "unknown notification: \(describe(result))")
        result = link.request { $0.performAction(.positive, on: NotificationUID(41), at: .zero) }
        log.check(result == .failure(.actionFailed), "answer configured to fail (0xA3): \(describe(result))")
        let bytesBefore = link.dataSent.count
        result = link.request { $0.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 3)], for: NotificationUID(41), at: .zero) }
        log.check(result.flatMap { r in if case .success(.notificationAttributes(let v)) = r { v[.title]?.string } else { nil } } == "Mum"
                  && link.dataSent.count == bytesBefore + 1 && link.dataSent.last == [0] + uidBytes(41) + tuple(1, "Mum"),
                  "title cut to max length 3: \(link.dataSent.last.map(hex) ?? "nothing")")

        // A new notification during the session, then the call is declined.
        let sourceBefore = link.sourceSent.count
        do throws(ProviderError) {
            let added = try link.provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social, title: "Bob", message: "ok"))
            link.run(link.deliver(added.actions))
        } catch {
            log.check(false, "provider: \(error)")
        }
        log.check(link.sourceSent.count > sourceBefore && link.sourceSent[sourceBefore] == sourceEvent(.added, [], .social, count: 2, uid: 42),
                  "provider announces uid 42: \(link.sourceSent.count > sourceBefore ? hex(link.sourceSent[sourceBefore]) : "nothing")")
        log.check(link.consumer.notifications[NotificationUID(42)]?[.title]?.string == "Bob", "consumer fetched it eagerly")
        result = link.request { $0.performAction(.negative, on: NotificationUID(41), at: .zero) }
        log.check(result == .success(.actionPerformed), "decline the call: \(describe(result))")
        log.check(link.sourceSent.suffix(2) == [sourceEvent(.removed, [.positiveAction, .negativeAction], .incomingCall, count: 0, uid: 41),
                                                sourceEvent(.added, [.negativeAction], .missedCall, count: 1, uid: 43)],
                  "provider: call removed, missed call added: \(link.sourceSent.suffix(2).map(hex))")
        log.check(link.consumer.notifications[NotificationUID(41)] == nil && link.consumer.notifications[NotificationUID(43)]?.categoryID == .missedCall,
                  "consumer's model follows")

        link.run(link.consumer.linkDown(at: link.now))
        _ = link.provider.linkDown(phone)
        log.check(!link.consumer.isInSession && link.provider.connections.isEmpty, "link down on both sides")
        log.check(link.consumer.pendingRequestCount == 0, "nothing pending")
    }
