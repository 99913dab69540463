// The heap of a consumer session at its worst under the microcontroller
// preset (`ConsumerConfiguration.microcontroller`): a phone that announces
// more notifications than the model keeps, each from another app, and
// answers every fetch with every value as long as the consumer accepts
// (the max length asked, or the preset's 128 bytes for a value asked
// without one), while the application keeps its four requests waiting.
// The peak must stay within the bound BENCHMARKS.md section 8 and ancs.h
// state for a 32-bit target (`worstCaseHeapBound`): a firmware sizes its
// heap by it.
import ANCS

/// The heap (this allocator's blocks, 16-byte headers and rounding
/// included) a session under the microcontroller preset may take.
/// ancs.h's ANCS_MICROCONTROLLER_HEAP_BOUND (firmware/run.sh checks that the two agree).
let worstCaseHeapBound = 8192

/// A value of exactly `count` bytes that begins with `prefix`.
func padded(_ prefix: String, _ count: Int) -> [UInt8] {
    var bytes = Array(prefix.utf8)
    if bytes.count > count { bytes.removeLast(bytes.count - count) }
    while bytes.count < count { bytes.append(0x78) }
    return bytes
}

/// The response a hostile phone sends to `command`: every value as long as
/// it may be (its max length, or `unlimited`), each notification's app its own.
func longestResponse(to command: [UInt8], unlimited: Int) -> [UInt8]? {
    guard let decoded = try? ControlPointCommand.decode(command) else { return nil }
    switch decoded {
    case .getNotificationAttributes(let request):
        var bytes: [UInt8] = [CommandID.getNotificationAttributes.rawValue] + uidBytes(request.notificationUID.rawValue)
        for attribute in request.attributes {
            let length = attribute.maxLength.map { Int($0) } ?? unlimited
            let value = attribute.id == .appIdentifier ? padded("app.\(request.notificationUID.rawValue).", length) : padded("", length)
            bytes += [attribute.id.rawValue, UInt8(truncatingIfNeeded: value.count), UInt8(truncatingIfNeeded: value.count >> 8)] + value
        }
        return bytes
    case .getAppAttributes(let request):
        var bytes: [UInt8] = [CommandID.getAppAttributes.rawValue] + request.appIdentifierBytes + [0]
        for attribute in request.attributes {
            let value = padded("Name of ", unlimited)
            bytes += [attribute.rawValue, UInt8(truncatingIfNeeded: value.count), UInt8(truncatingIfNeeded: value.count >> 8)] + value
        }
        return bytes
    case .performNotificationAction:
        return nil
    }
}

func runWorstCaseSession(_ log: inout Log) -> SessionFigures {
    print("Worst case under the microcontroller preset: 40 notifications from 40 apps (the last 8 unknown to the phone), every value as long as accepted, 4 application requests waiting")
    var shown = 0, named = 0, answered = 0
    let figures = measured("worst case: ", &log) { log in worstCaseSteps(&shown, &named, &answered, &log) }
    log.check(shown >= 16 && named == 32 && answered == 4,
              "worst case: \(shown) notifications shown, \(named) app names fetched (8 more refused 0xA2), \(answered) application requests answered")
    log.check(figures.heapPeak <= worstCaseHeapBound,
              "worst case: heap peak \(figures.heapPeak) B within the stated bound of \(worstCaseHeapBound) B")
    return figures
}

@inline(never)
func worstCaseSteps(_ shown: inout Int, _ named: inout Int, _ answered: inout Int, _ log: inout Log) {
    let configuration = ConsumerConfiguration.microcontroller
    let unlimited = configuration.unlimitedValueLength
    var consumer = Consumer(configuration: configuration)
    var now = Timestamp.zero
    var pending: [ConsumerAction] = consumer.linkUp(mtu: 185, at: now)
    var announced: UInt32 = 0
    var asked = 0
    var appNamesAsked = 0
    // Plays the phone: subscriptions granted, every write taken and answered
    // at MTU 185 with the longest response; a notification announced, and
    // an application request made, every few turns.
    var turns = 0
    while !pending.isEmpty || announced < 40 {
        turns += 1
        if turns > 10_000 { log.check(false, "worst case: the session did not settle"); break }
        now = now + .milliseconds(20)
        if pending.isEmpty {
            announced += 1
            let flags: EventFlags = announced % 2 == 0 ? [.positiveAction, .negativeAction] : [.preExisting]
            pending += consumer.received(notificationSource: sourceEvent(.added, flags, .social, count: 1, uid: announced), at: now)
            if announced > 30 && asked < configuration.maximumRequests {
                // The application asks for the newest notification's attributes, as the display does.
                let actions = consumer.fetchAttributes(ConsumerConfiguration.displayAttributes, for: NotificationUID(announced &- UInt32(asked)), at: now).actions
                asked += 1
                pending += actions
            }
            continue
        }
        let action = pending.removeFirst()
        switch action {
        case .subscribe(let characteristic):
            pending += consumer.subscriptionCompleted(characteristic, .success, at: now)
        case .writeControlPoint(let bytes, let token):
            // The phone knows the first 32 apps asked for by name, not the
            // last 8 (0xA2): the app cache is full of names when the apps
            // the phone did not know take their places (one list holds both).
            if bytes.first == CommandID.getAppAttributes.rawValue {
                appNamesAsked += 1
                if appNamesAsked > 32 {
                    pending += consumer.writeCompleted(token, .attError(.invalidParameter), at: now)
                    break
                }
            }
            pending += consumer.writeCompleted(token, .success, at: now)
            guard let response = longestResponse(to: bytes, unlimited: unlimited) else { break }
            for fragment in split(response, mtu: 185) { pending += consumer.received(dataSource: fragment, at: now) }
        case .emit(.ready):
            shown += 1
        case .emit(.appAttributes):
            named += 1
        case .emit(.completed(_, .success(.notificationAttributes))):
            answered += 1
        default:
            break
        }
    }
    log.check(consumer.liveNotifications.count == configuration.maximumNotifications,
              "worst case: the model keeps \(consumer.liveNotifications.count) notifications")
    pending = consumer.linkDown(at: now)
}
