import ANCS
import ANCSFormat
import Testing

/// The JSON objects `ancs listen --json` and `ancs demo --json` print for
/// the display's events, in the shape of the other consumer events.
@Suite("Consumer events as JSON: ready, updated, displayFailed, health")
struct ConsumerEventJSONTests {
    static let notification = ConsumerNotification(
        uid: NotificationUID(7), eventFlags: [.positiveAction], categoryID: .social, categoryCount: 2, isPreExisting: false,
        attributes: [NotificationAttribute(.appIdentifier, "com.apple.MobileSMS"), NotificationAttribute(.title, "Alice")])

    @Test("ready and updated: the notification's members, its attributes and the app's name")
    func readyAndUpdated() {
        let ready = ANCSJSON.consumerEvent(.ready(Self.notification, appName: "Messages")).rendered
        #expect(ready.hasPrefix(#"{"event":"ready","uid":7,"category":"social","categoryCount":2,"flags":["positiveAction"],"attributes":["#))
        #expect(ready.contains(#""value":"Alice""#))
        #expect(ready.hasSuffix(#","appName":"Messages"}"#))
        let updated = ANCSJSON.consumerEvent(.updated(Self.notification, appName: nil)).rendered
        #expect(updated.hasPrefix(#"{"event":"updated","uid":7,"#))
        #expect(!updated.contains("appName"))
        // Without contents (privacy), values are lengths.
        let hidden = ANCSJSON.consumerEvent(.ready(Self.notification, appName: "Messages"), includeContents: false).rendered
        #expect(!hidden.contains("Alice") && !hidden.contains("Messages"))
        #expect(hidden.contains(#""appName":{"length":8}"#))
    }

    @Test("displayFailed: the UID and the error, as a person reads it")
    func displayFailed() {
        let failed = ANCSJSON.consumerEvent(.displayFailed(NotificationUID(9), .invalidParameter)).rendered
        #expect(failed == #"{"event":"displayFailed","uid":9,"error":"invalid parameter (ANCS 0xA2)"}"#)
    }

    @Test("health: the state, what it carries, and the remedy when the person has something to do on the iPhone (pairing declined and notifications not allowed told apart by the ATT code)")
    func health() {
        #expect(ANCSJSON.consumerEvent(.health(.healthy)).rendered == #"{"event":"health","state":"healthy"}"#)
        let refused = ANCSJSON.consumerEvent(.health(.waitingForPermission(.dataSource, .insufficientAuthentication))).rendered
        #expect(refused.hasPrefix(#"{"event":"health","state":"waitingForPermission","characteristic":"dataSource","attError":"#))
        #expect(refused.contains("0x05"))
        #expect(refused.contains(#""remedy":"on the iPhone: accept this accessory's pairing request"#))
        // Refused on an encrypted link: paired, the person has not allowed notifications yet.
        let notAllowed = ANCSJSON.consumerEvent(.health(.waitingForPermission(.dataSource, .insufficientAuthorization))).rendered
        #expect(notAllowed.contains(#""remedy":"on the iPhone: allow notifications for this accessory"#))
        #expect(!notAllowed.contains("pairing"))
        let again = ANCSJSON.consumerEvent(.health(.resubscribing(.notificationSourceSilent))).rendered
        #expect(again == #"{"event":"health","state":"resubscribing","reason":"notificationSourceSilent"}"#)
        let notShared = ANCSJSON.consumerEvent(.health(.notShared)).rendered
        #expect(notShared.contains("Share System Notifications"))
    }
}
