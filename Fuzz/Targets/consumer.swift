// The Consumer engine fed random input sequences (a hostile or broken NP and
// a busy application). Invariants: no trap; every request ends exactly once
// (checked after a final link down); right after a session ends the model is
// empty; the model never holds a notification whose removal was processed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    var consumer = Consumer(configuration: ConsumerConfiguration(
        requestTimeout: .seconds(2), pipeliningDepth: Int(input.byte() % 3) + 1,
        eagerAttributes: input.byte() & 1 == 0 ? [] : ConsumerConfiguration.displayAttributes,
        maximumNotifications: 8, maximumCachedApps: 4, maximumRequests: 8, unlimitedValueLength: 64))
    var now = Timestamp.zero
    var submitted: [ConsumerRequestID] = []
    var ended: [ConsumerRequestID: Int] = [:]
    var tokens: [WriteToken] = []

    func absorb(_ actions: [ConsumerAction]) {
        for action in actions {
            switch action {
            case .writeControlPoint(_, let token): tokens.append(token)
            case .emit(.completed(let id, _)): ended[id, default: 0] += 1
            case .emit(.sessionEnded):
                check(consumer.notifications.isEmpty, "model empty after session end")
                check(consumer.appAttributes.isEmpty, "app cache empty after session end")
            case .emit(.removed(let n)):
                check(consumer.notifications[n.uid] == nil, "removed notification still in the model")
            default: break
            }
        }
    }
    func result(_ byte: UInt8) -> ATTResult {
        switch byte % 4 {
        case 0, 1: .success
        case 2: .attError(ANCSErrorCode(rawValue: 0xA0 + byte % 5))
        default: .transportFailure
        }
    }

    while !input.isAtEnd {
        let op = input.byte()
        switch op % 14 {
        case 0: absorb(consumer.linkUp(mtu: Int(input.byte()) + 23, at: now))
        case 1: absorb(consumer.subscriptionCompleted(.dataSource, result(input.byte()), at: now))
        case 2: absorb(consumer.subscriptionCompleted(.notificationSource, result(input.byte()), at: now))
        case 3:
            var event = input.take(8)
            if event.count == 8 { event[0] %= 4; event[4] %= 4; event[5] = 0; event[6] = 0; event[7] = 0 }
            absorb(consumer.received(notificationSource: event, at: now))
        case 4: absorb(consumer.received(dataSource: input.take(Int(input.byte() % 40)), at: now))
        case 5:
            let choice = Int(input.byte())
            let token = tokens.isEmpty ? WriteToken(rawValue: UInt32(choice)) : tokens[choice % tokens.count]
            absorb(consumer.writeCompleted(token, result(input.byte()), at: now))
        case 6:
            let (id, actions) = consumer.fetchAttributes([.init(.title, maxLength: UInt16(input.byte())), .init(.date)], for: NotificationUID(UInt32(input.byte() % 4)), at: now)
            submitted.append(id); absorb(actions)
        case 7:
            let (id, actions) = consumer.fetchAppAttributes(input.byte() & 1 == 0 ? "a" : "com.x", at: now)
            submitted.append(id); absorb(actions)
        case 8:
            let (id, actions) = consumer.performAction(ActionID(rawValue: input.byte() % 3), on: NotificationUID(UInt32(input.byte() % 4)), at: now)
            submitted.append(id); absorb(actions)
        case 9:
            if !submitted.isEmpty { absorb(consumer.cancel(submitted[Int(input.byte()) % submitted.count], at: now)) }
        case 10:
            now = now + .milliseconds(Int64(input.byte()) * 20)
            absorb(consumer.tick(now))
        case 11: absorb(consumer.linkDown(at: now))
        case 12: absorb(consumer.serviceChanged(published: input.byte() & 1 == 0, at: now))
        default: absorb(consumer.stop(at: now))
        }
        check(consumer.notifications.count <= 8, "model bounded")
    }
    absorb(consumer.linkDown(at: now))
    for id in submitted {
        check(ended[id] == 1, "request \(id) ended \(ended[id] ?? 0) times")
    }
    check(consumer.pendingRequestCount == 0, "nothing pending after link down")
    return 0
}
