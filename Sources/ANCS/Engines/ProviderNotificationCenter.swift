// ProviderNotificationCenter — the NP's Notification Center: the active iOS
// notifications, their NotificationUIDs and CategoryCounts, and the apps the
// NP knows (spec: "Notification Source", "Get App Attributes").
//
// NotificationUIDs come from a counter and are never reused, even after a
// removal, so an NC can never confuse two notifications inside a session.
// Entries are kept in UID order, which is also the order they were added.

public struct ProviderNotificationCenter: Sendable {
    struct Entry: Sendable {
        var uid: NotificationUID
        var notification: ProviderNotification
    }

    /// Ascending NotificationUID.
    var entries: [Entry] = []
    /// Active notifications per category (absent means 0).
    var counts: [CategoryID: Int] = [:]
    struct App: Sendable {
        /// The AppIdentifier's UTF-8 bytes: apps are told apart by their
        /// bytes, as on the wire, never by Unicode equivalence ("é"
        /// precomposed and decomposed name two apps).
        var identifier: [UInt8]
        /// "" for an app known only from its notifications.
        var displayName: String
    }
    /// The known apps, in the order they became known.
    var apps: [App] = []
    /// The next NotificationUID to give out; nil once all have been.
    var nextUID: UInt32?

    init(firstNotificationUID: UInt32) {
        nextUID = firstNotificationUID
    }

    /// Number of active notifications.
    public var count: Int { entries.count }

    /// The active NotificationUIDs, oldest first.
    public var uids: [NotificationUID] { entries.map { $0.uid } }

    /// The active notification with this UID, if any.
    public subscript(uid: NotificationUID) -> ProviderNotification? {
        guard let index = index(of: uid) else { return nil }
        return entries[index].notification
    }

    /// CategoryCount: the number of active notifications in the category.
    public func categoryCount(_ category: CategoryID) -> Int { counts[category] ?? 0 }

    /// The DisplayName of an app: nil for an unknown app, "" for an app known
    /// only because notifications of it were added (never registered).
    public func displayName(ofApp identifier: String) -> String? {
        appIndex(identifier.utf8).map { apps[$0].displayName }
    }

    /// The DisplayName of the app whose AppIdentifier has exactly these bytes.
    public func displayName(ofAppBytes identifier: [UInt8]) -> String? {
        appIndex(identifier).map { apps[$0].displayName }
    }

    func appIndex<Bytes: Collection<UInt8>>(_ identifier: Bytes) -> Int? {
        apps.firstIndex { $0.identifier.elementsEqual(identifier) }
    }

    /// The CategoryCount byte of an event in this category (saturates at 255).
    func categoryCountByte(_ category: CategoryID) -> UInt8 {
        UInt8(min(categoryCount(category), Int(UInt8.max)))
    }

    mutating func registerApp(identifier: String, displayName: String) {
        if let index = appIndex(identifier.utf8) {
            apps[index].displayName = displayName
        } else {
            apps.append(App(identifier: Array(identifier.utf8), displayName: displayName))
        }
    }

    /// An app stays known once a notification of it was added, so a consumer
    /// may still ask its attributes after that notification is gone.
    private mutating func noteApp(_ identifier: String) {
        if appIndex(identifier.utf8) == nil { apps.append(App(identifier: Array(identifier.utf8), displayName: "")) }
    }

    mutating func add(_ notification: ProviderNotification) throws(ProviderError) -> NotificationUID {
        guard let raw = nextUID else { throw .notificationUIDsExhausted }
        nextUID = raw == UInt32.max ? nil : raw + 1
        let uid = NotificationUID(raw)
        entries.append(Entry(uid: uid, notification: notification))
        counts[notification.categoryID, default: 0] += 1
        noteApp(notification.appIdentifier)
        return uid
    }

    mutating func modify(_ uid: NotificationUID, to notification: ProviderNotification) throws(ProviderError) {
        guard let index = index(of: uid) else { throw .unknownNotification(uid) }
        let old = entries[index].notification.categoryID
        decrement(old)
        counts[notification.categoryID, default: 0] += 1
        entries[index].notification = notification
        noteApp(notification.appIdentifier)
    }

    /// Removes and returns the notification.
    mutating func remove(_ uid: NotificationUID) throws(ProviderError) -> ProviderNotification {
        guard let index = index(of: uid) else { throw .unknownNotification(uid) }
        let removed = entries.remove(at: index).notification
        decrement(removed.categoryID)
        return removed
    }

    private mutating func decrement(_ category: CategoryID) {
        let remaining = categoryCount(category) - 1
        counts[category] = remaining > 0 ? remaining : nil
    }

    /// Binary search: UIDs are given out in ascending order.
    func index(of uid: NotificationUID) -> Int? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = low + (high - low) / 2
            if entries[middle].uid < uid { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].uid == uid ? low : nil
    }
}
