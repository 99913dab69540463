import ANCS
import ANCSRuntime
import Testing

@Suite("PreExisting replays")
struct ReplayTests {
    func shown(_ uid: UInt32, _ title: String, preExisting: Bool) -> DisplayedNotification {
        var flags: EventFlags = []
        if preExisting { flags.insert(.preExisting) }
        let notification = ConsumerNotification(
            uid: NotificationUID(uid), eventFlags: flags, categoryID: .social, categoryCount: 1, isPreExisting: preExisting,
            attributes: [NotificationAttribute(.appIdentifier, "com.apple.MobileSMS"), NotificationAttribute(.title, AttributeValue(title)),
                         NotificationAttribute(.date, "20261123T150000")])
        return DisplayedNotification(notification: notification, appName: "Messages")
    }

    func check(_ filter: inout PreExistingReplays, _ notification: DisplayedNotification, _ expected: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let replay = filter.isReplay(notification)
        #expect(replay == expected, "\(notification.uid) \(notification.title ?? "")", sourceLocation: sourceLocation)
    }

    @Test("a reconnection's PreExisting announcements of what was shown are replays; new ones and changed ones are not")
    func replays() {
        var filter = PreExistingReplays()
        filter.sessionStarted()
        check(&filter, shown(1, "Alice", preExisting: true), false)   // first session: shown
        check(&filter, shown(2, "Bob", preExisting: false), false)
        filter.sessionStarted()                                            // the link came back
        check(&filter, shown(1, "Alice", preExisting: true), true)
        check(&filter, shown(2, "Bob", preExisting: true), true)
        check(&filter, shown(3, "Carol", preExisting: true), false)    // new while away
        check(&filter, shown(1, "Alice (edited)", preExisting: true), false)
        check(&filter, shown(2, "Bob", preExisting: false), false)     // not PreExisting: a real event
        filter.sessionStarted()                                            // and again: still replays
        check(&filter, shown(3, "Carol", preExisting: true), true)
        check(&filter, shown(1, "Alice (edited)", preExisting: true), true)
    }
}
