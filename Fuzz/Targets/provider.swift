// The Provider engine fed random commands from several consumers and random
// changes to its notification center. Invariants: no trap; every Control
// Point write is answered exactly once; a Data Source or Notification Source
// notification never exceeds that consumer's MTU − 3; notifications go only
// to subscribed consumers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    var provider = Provider()
    provider.registerApp(identifier: "a", displayName: "A")
    var uids: [NotificationUID] = []

    func checkNotifications(_ actions: [ProviderAction]) {
        for case .notify(let connection, let characteristic, let bytes) in actions {
            guard let mtu = provider.mtu(of: connection) else { return check(false, "notification to unknown \(connection)") }
            check(bytes.count <= mtu - 3, "notification of \(bytes.count) bytes at MTU \(mtu)")
            check(provider.isSubscribed(connection, to: characteristic), "notification to an unsubscribed consumer")
        }
    }

    while !input.isAtEnd {
        let op = input.byte()
        let connection = ConnectionID(UInt32(input.byte() % 3))
        switch op % 8 {
        case 0: checkNotifications(provider.connect(connection, mtu: Int(input.byte()) * 2 + 23))
        case 1: checkNotifications(provider.setSubscription(connection, input.byte() & 1 == 0 ? .dataSource : .notificationSource, enabled: input.byte() & 1 == 0))
        case 2, 3:
            let actions = provider.controlPointWritten(connection, input.take(Int(input.byte() % 48)))
            var answers = 0
            for case .respond(let target, _) in actions {
                check(target == connection, "answer to the writer")
                answers += 1
            }
            check(answers == 1, "one answer per write, got \(answers)")
            checkNotifications(actions)
        case 4:
            let flags = EventFlags(rawValue: input.byte())
            let text = String(decoding: input.take(Int(input.byte() % 24)), as: UTF8.self)
            if let (uid, actions) = try? provider.add(ProviderNotification(
                appIdentifier: input.byte() & 1 == 0 ? "a" : "b", categoryID: CategoryID(rawValue: input.byte() % 14), flags: flags,
                title: text, message: text, positiveActionLabel: "Yes", negativeActionLabel: "No")) {
                check(!uids.contains(uid), "UID reused")
                uids.append(uid)
                checkNotifications(actions)
            }
        case 5:
            if !uids.isEmpty, let actions = try? provider.remove(uids[Int(input.byte()) % uids.count]) { checkNotifications(actions) }
        case 6:
            if !uids.isEmpty, var n = provider.notificationCenter[uids[Int(input.byte()) % uids.count]] {
                n.message = "changed"
                if let actions = try? provider.modify(uids[0], to: n) { checkNotifications(actions) }
            }
        default:
            checkNotifications(provider.disconnect(connection))
        }
    }
    return 0
}
