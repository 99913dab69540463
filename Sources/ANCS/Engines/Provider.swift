// Provider — the Notification Provider (NP: what an iPhone is) as a sans-I/O
// state machine. It never calls a transport; each input returns the actions
// its caller performs, in order (so tests, firmware and every transport drive the same engine). It reads no
// clock: nothing it does depends on time.
//
// One notification center is shared by any number of consumers, one per
// connection, each with its own ATT MTU and its own subscriptions:
//
//   unknown ──connect(mtu)──► connected (nothing subscribed)
//   connected ──Data Source on / off──► connected (Get … Attributes answered / refused)
//   connected ──Notification Source on──► inSession
//        (every active notification announced: Added + PreExisting)
//   inSession ──Notification Source off──► connected        (sessionEnded)
//   any ──disconnect──► unknown                             (sessionEnded if in one)
//   any ──connect again──► connected, everything reset      (sessionEnded if in one)
//
// Notification Source events go to the consumers in a session only; Data
// Source notifications to the consumer that asked, only if it subscribed.
//
// Faults of real iPhones, for testing accessories (docs/PROVIDE.md, "Act as an
// iPhone", the fault steps): sharing off (every Control Point write answered
// 0x03 Write Not Permitted, no Notification Source event, CCCD writes still
// taken), Notification Source quiet (the Control Point still answers), and
// subscriptions forgotten in silence (the consumer is not told; its CCCDs
// look enabled, nothing reaches it, and Get … Attributes is answered 0xFD
// since Data Source is not subscribed any more).
//
// A Control Point write is answered entirely in the actions it returns:
// first the write response, then on success either the Data Source response
// in MTU − 3 byte fragments (Get … Attributes) or the Notification Source
// events of the action's effect (Perform Notification Action). A failed write
// produces nothing more (spec: "Errors"). Nothing is queued, so a consumer
// costs a fixed few bytes however it behaves, and one write's output is
// bounded by `ProviderConfiguration.maximumResponseLength` (plus 3 bytes per
// tuple asked and the attributes that are never cut: AppIdentifier,
// MessageSize, Date, the action labels).

public struct Provider: Sendable {
    struct Link: Sendable {
        var id: ConnectionID
        var mtu: Int
        /// In a session (spec: "Sessions"): Notification Source subscribed.
        var notificationSource = false
        var dataSource = false
        /// Data Source lost in silence (`loseSubscription`): the phone takes
        /// Control Point writes and answers none on Data Source.
        var dataSourceLost = false
    }

    public let configuration: ProviderConfiguration
    /// The active iOS notifications and the known apps.
    public private(set) var notificationCenter: ProviderNotificationCenter
    /// Connected consumers, in the order they connected (the order events go out in).
    var links: [Link] = []
    /// "Share System Notifications" is on for the accessories (a fault when off).
    public private(set) var sharing = true
    /// Notification Source sends nothing while the Control Point answers (a fault when true).
    public private(set) var notificationSourceQuiet = false
    /// Notification Source events go out: shared and not quiet.
    var announces: Bool { sharing && !notificationSourceQuiet }

    public init(configuration: ProviderConfiguration = .default) {
        self.configuration = configuration
        notificationCenter = ProviderNotificationCenter(firstNotificationUID: configuration.firstNotificationUID)
    }

    /// The connected consumers, in the order they connected.
    public var connections: [ConnectionID] { links.map { $0.id } }

    /// A consumer's ATT MTU, nil when it is not connected.
    public func mtu(of connection: ConnectionID) -> Int? {
        linkIndex(connection).map { links[$0].mtu }
    }

    /// Whether a consumer has subscribed to a characteristic (Control Point never notifies: false).
    public func isSubscribed(_ connection: ConnectionID, to characteristic: ANCSCharacteristic) -> Bool {
        guard let index = linkIndex(connection) else { return false }
        switch characteristic {
        case .notificationSource: return links[index].notificationSource
        case .dataSource: return links[index].dataSource
        case .controlPoint: return false
        }
    }

    // MARK: - Connections

    /// A consumer connected with this ATT MTU (clamped to 23…517). A known
    /// connection starts over: its session, if any, ends.
    public mutating func linkUp(_ connection: ConnectionID, mtu: Int) -> [ProviderAction] {
        var actions: [ProviderAction] = []
        if let index = linkIndex(connection) {
            if links[index].notificationSource { actions.append(.emit(.sessionEnded(connection))) }
            links[index] = Link(id: connection, mtu: Provider.clamp(mtu))
        } else {
            links.append(Link(id: connection, mtu: Provider.clamp(mtu)))
        }
        return actions
    }

    /// The consumer's ATT MTU changed (an MTU exchange); later Data Source responses use it.
    public mutating func mtuChanged(_ connection: ConnectionID, _ mtu: Int) {
        guard let index = linkIndex(connection) else { return }
        links[index].mtu = Provider.clamp(mtu)
    }

    /// The consumer wrote a CCCD (the transport answers that write itself).
    /// Subscribing to Notification Source starts a session: every active
    /// notification is announced as Added with PreExisting, oldest first.
    /// Writing the value a CCCD already has changes nothing.
    public mutating func setSubscription(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, enabled: Bool) -> [ProviderAction] {
        guard let index = linkIndex(connection) else { return [] }
        switch characteristic {
        case .dataSource:
            links[index].dataSource = enabled
            links[index].dataSourceLost = false  // written anew: delivered again
            return []
        case .controlPoint:
            return []
        case .notificationSource:
            guard links[index].notificationSource != enabled else { return [] }
            links[index].notificationSource = enabled
            guard enabled else { return [.emit(.sessionEnded(connection))] }
            // Subscribed anew: a quiet Notification Source speaks again (its
            // subscription was what had stopped; what the consumer does about it).
            notificationSourceQuiet = false
            var actions: [ProviderAction] = []
            announcePreExisting(to: connection, into: &actions)
            return actions
        }
    }

    /// A session starts: every active notification announced as Added with
    /// PreExisting, oldest first (none while not shared or quiet).
    private func announcePreExisting(to connection: ConnectionID, into actions: inout [ProviderAction]) {
        var count = 0
        if announces {
            actions.reserveCapacity(actions.count + notificationCenter.count + 1)
            for entry in notificationCenter.entries {
                let event = sourceEvent(.added, entry.uid, entry.notification, preExisting: true)
                actions.append(.notify(connection, .notificationSource, event))
            }
            count = notificationCenter.count
        }
        actions.append(.emit(.sessionStarted(connection, preExisting: count)))
    }

    // MARK: - Faults

    /// "Share System Notifications" turned off or on for the accessories.
    /// Off: CCCD writes are still taken, every Control Point write is
    /// answered 0x03 Write Not Permitted, and no Notification Source event
    /// goes out. On again: each consumer subscribed to Notification Source
    /// is announced every notification (PreExisting), as a new session.
    public mutating func setSharing(_ sharing: Bool) -> [ProviderAction] {
        guard self.sharing != sharing else { return [] }
        self.sharing = sharing
        var actions: [ProviderAction] = []
        if sharing {
            for link in links where link.notificationSource { announcePreExisting(to: link.id, into: &actions) }
        }
        return actions
    }

    /// Notification Source goes quiet (true) while the Control Point still
    /// answers, or speaks again (false; what happened meanwhile is not told).
    /// A consumer that subscribes to it again (off, then on) ends the quiet,
    /// and is announced what the phone holds.
    public mutating func setNotificationSourceQuiet(_ quiet: Bool) {
        notificationSourceQuiet = quiet
    }

    /// Every consumer's Notification Source and Data Source subscriptions
    /// are forgotten in silence, as iOS does when it resets its GATT state:
    /// the consumer is not told. Its next CCCD write (off, then on) starts
    /// a session again. The provider's own events tell each session ended.
    public mutating func forgetSubscriptions() -> [ProviderAction] {
        var actions: [ProviderAction] = []
        for index in links.indices {
            if links[index].notificationSource { actions.append(.emit(.sessionEnded(links[index].id))) }
            links[index].notificationSource = false
            links[index].dataSource = false
        }
        return actions
    }

    /// One subscription of every consumer lost in silence, the other kept,
    /// as iPhones do in the field (the consumer is not told; its next write
    /// of that CCCD mends it). Notification Source: nothing is announced to
    /// it any more (the provider's own event tells the session ended).
    /// Data Source: Control Point writes are still taken and answered (an
    /// unknown UID 0xA2), but no Data Source response reaches the consumer.
    public mutating func loseSubscription(_ characteristic: ANCSCharacteristic) -> [ProviderAction] {
        var actions: [ProviderAction] = []
        for index in links.indices {
            switch characteristic {
            case .notificationSource:
                if links[index].notificationSource { actions.append(.emit(.sessionEnded(links[index].id))) }
                links[index].notificationSource = false
            case .dataSource:
                if links[index].dataSource { links[index].dataSourceLost = true }
            case .controlPoint:
                break
            }
        }
        return actions
    }

    /// The consumer's link is gone; so is everything about it.
    public mutating func linkDown(_ connection: ConnectionID) -> [ProviderAction] {
        guard let index = linkIndex(connection) else { return [] }
        let link = links.remove(at: index)
        return link.notificationSource ? [.emit(.sessionEnded(connection))] : []
    }

    // MARK: - Notification center

    /// Registers an app's DisplayName, answered to Get App Attributes; a later
    /// registration replaces it.
    public mutating func registerApp(identifier: String, displayName: String) {
        notificationCenter.registerApp(identifier: identifier, displayName: displayName)
    }

    /// Adds an iOS notification under a new NotificationUID and announces it
    /// (Added) to every consumer in a session.
    public mutating func add(_ notification: ProviderNotification) throws(ProviderError) -> ProviderAdded {
        let uid = try notificationCenter.add(notification)
        var actions: [ProviderAction] = []
        announce(.added, uid, notification, into: &actions)
        return ProviderAdded(uid: uid, actions: actions)
    }

    /// Replaces an active notification's content and announces it (Modified).
    public mutating func modify(_ uid: NotificationUID, to notification: ProviderNotification) throws(ProviderError) -> [ProviderAction] {
        try notificationCenter.modify(uid, to: notification)
        var actions: [ProviderAction] = []
        announce(.modified, uid, notification, into: &actions)
        return actions
    }

    /// Removes an active notification and announces it (Removed); its UID is never given out again.
    public mutating func remove(_ uid: NotificationUID) throws(ProviderError) -> [ProviderAction] {
        let removed = try notificationCenter.remove(uid)
        var actions: [ProviderAction] = []
        announce(.removed, uid, removed, into: &actions)
        return actions
    }

    // MARK: - Control Point

    /// A consumer wrote to the Control Point. Returns the write response
    /// (`respond`) first, then what follows it. Any bytes are accepted: a
    /// hostile write is answered with an error, never a trap.
    public mutating func controlPointWritten(_ connection: ConnectionID, _ bytes: [UInt8]) -> [ProviderAction] {
        guard let index = linkIndex(connection) else { return reject(connection, .unknownConnection) }
        guard sharing else { return reject(connection, .notShared) }
        guard bytes.count <= ControlPointCommand.maximumLength else {
            return reject(connection, .commandTooLong(length: bytes.count))
        }
        let command: ControlPointCommand
        do throws(DecodingError) {
            command = try ControlPointCommand.decode(bytes)
        } catch {
            return reject(connection, .malformed(error))
        }
        switch command {
        case .getNotificationAttributes(let request):
            return answer(request, on: index)
        case .getAppAttributes(let request):
            return answer(request, on: index)
        case .performNotificationAction(let request):
            return perform(request, from: connection)
        }
    }

    /// Get Notification Attributes: one tuple per requested attribute, in
    /// order; Title, Subtitle and Message cut bytewise to their max length
    /// and to the response budget, every other attribute sent whole.
    private func answer(_ request: GetNotificationAttributes, on index: Int) -> [ProviderAction] {
        let link = links[index]
        guard link.dataSource else { return reject(link.id, .dataSourceNotSubscribed) }
        guard let notification = notificationCenter[request.notificationUID] else {
            return reject(link.id, .unknownNotification(request.notificationUID))
        }
        // Only Title, Subtitle and Message (the attributes with a max length)
        // are ever cut: AppIdentifier, MessageSize, Date and the labels are
        // short and meaningless in part, so they are sent whole and the budget
        // left after them is what the cuttable values share, in order.
        var budget = configuration.maximumResponseLength - 5 - 3 * request.attributes.count
        for requested in request.attributes where !requested.id.takesMaxLength {
            budget -= min(notification.value(of: requested.id)?.utf8.count ?? 0, Int(UInt16.max))
        }
        var attributes: [NotificationAttribute] = []
        attributes.reserveCapacity(request.attributes.count)
        for requested in request.attributes {
            let value: AttributeValue
            if requested.id.takesMaxLength {
                value = Provider.cut(notification.value(of: requested.id), maxLength: requested.maxLength, budget: &budget)
            } else {
                var unlimited = Int(UInt16.max)
                value = Provider.cut(notification.value(of: requested.id), maxLength: nil, budget: &unlimited)
            }
            attributes.append(NotificationAttribute(requested.id, value))
        }
        let response = DataSourceResponse.notificationAttributes(
            NotificationAttributesResponse(notificationUID: request.notificationUID, attributes: attributes))
        var actions = respond(response, to: link)
        actions.append(.emit(.notificationAttributesSent(link.id, request)))
        return actions
    }

    /// Get App Attributes: DisplayName from the registry ("" — Length 0 — for
    /// an app known only from its notifications); reserved IDs get Length 0.
    private func answer(_ request: GetAppAttributes, on index: Int) -> [ProviderAction] {
        let link = links[index]
        guard link.dataSource else { return reject(link.id, .dataSourceNotSubscribed) }
        // Matched by bytes: no Unicode equivalence, and invalid UTF-8 names no app.
        guard let displayName = notificationCenter.displayName(ofAppBytes: request.appIdentifierBytes) else {
            return reject(link.id, .unknownApp(request.appIdentifier))
        }
        var budget = configuration.maximumResponseLength - 2 - request.appIdentifierBytes.count - 3 * request.attributes.count
        var attributes: [AppAttribute] = []
        attributes.reserveCapacity(request.attributes.count)
        for id in request.attributes {
            let value = Provider.cut(id == .displayName ? displayName : nil, maxLength: nil, budget: &budget)
            attributes.append(AppAttribute(id, value))
        }
        // The header echoes the AppIdentifier as asked, so the consumer can match it.
        let response = DataSourceResponse.appAttributes(
            AppAttributesResponse(appIdentifierBytes: request.appIdentifierBytes, attributes: attributes))
        var actions = respond(response, to: link)
        actions.append(.emit(.appAttributesSent(link.id, request)))
        return actions
    }

    /// The write response, then the Data Source response in MTU − 3 byte notifications.
    private func respond(_ response: DataSourceResponse, to link: Link) -> [ProviderAction] {
        let fragments = response.fragments(mtu: link.mtu)
        var actions: [ProviderAction] = []
        actions.reserveCapacity(fragments.count + 2)
        actions.append(.respond(link.id, .success))
        if link.dataSourceLost { return actions }  // taken, never delivered
        for fragment in fragments { actions.append(.notify(link.id, .dataSource, fragment)) }
        return actions
    }

    /// Perform Notification Action: no Data Source traffic, whatever happens.
    /// Its effect reaches Notification Source after the write response.
    private mutating func perform(_ request: PerformNotificationAction, from connection: ConnectionID) -> [ProviderAction] {
        let uid = request.notificationUID
        let action = request.actionID
        guard let notification = notificationCenter[uid] else { return reject(connection, .unknownNotification(uid)) }
        let announced: EventFlags
        switch action {
        case .positive: announced = .positiveAction
        case .negative: announced = .negativeAction
        default: return reject(connection, .unknownAction(uid, action))
        }
        guard notification.flags.contains(announced) else { return reject(connection, .actionNotAnnounced(uid, action)) }
        let effect = notification.effect(of: action).resolved(for: action, in: notification.categoryID)
        if effect == .fail { return reject(connection, .actionFailed(uid, action)) }

        var actions: [ProviderAction] = [.respond(connection, .success)]
        var missedCallUID: NotificationUID?
        switch effect {
        case .remove, .removeAndAddMissedCall:
            // The notification exists (checked above): removal cannot fail.
            if let removed = try? notificationCenter.remove(uid) {
                announce(.removed, uid, removed, into: &actions)
            }
            if effect == .removeAndAddMissedCall {
                let missedCall = Provider.missedCall(after: notification)
                // Only when UIDs are exhausted is there no missed call.
                if let added = try? notificationCenter.add(missedCall) {
                    announce(.added, added, missedCall, into: &actions)
                    missedCallUID = added
                }
            }
        case .automatic, .keep, .fail:
            break
        }
        actions.append(.emit(.actionPerformed(ProviderPerformedAction(
            connection: connection, notificationUID: uid, actionID: action, effect: effect, missedCallUID: missedCallUID))))
        return actions
    }

    /// The missed call a declined call leaves: same app, title and date; it
    /// can be cleared (NegativeAction, labelled with the spec's "Clear").
    static func missedCall(after call: ProviderNotification) -> ProviderNotification {
        ProviderNotification(
            appIdentifier: call.appIdentifier,
            categoryID: .missedCall,
            flags: .negativeAction,
            title: call.title,
            date: call.date,
            negativeActionLabel: "Clear")
    }

    // MARK: - Helpers

    private func reject(_ connection: ConnectionID, _ rejection: ProviderRejection) -> [ProviderAction] {
        [.respond(connection, .attError(rejection.code)), .emit(.commandRejected(connection, rejection))]
    }

    /// Sends a Notification Source event to every consumer in a session, in connection order.
    private func announce(_ eventID: EventID, _ uid: NotificationUID, _ notification: ProviderNotification, into actions: inout [ProviderAction]) {
        guard announces else { return }
        var event: [UInt8]?
        for link in links where link.notificationSource {
            if event == nil { event = sourceEvent(eventID, uid, notification, preExisting: false) }
            actions.append(.notify(link.id, .notificationSource, event!))
        }
    }

    /// The 8 bytes of a Notification Source event. CategoryCount is taken
    /// after the change: it includes an Added or Modified notification and
    /// excludes a Removed one.
    private func sourceEvent(_ eventID: EventID, _ uid: NotificationUID, _ notification: ProviderNotification, preExisting: Bool) -> [UInt8] {
        var flags = notification.flags
        flags.remove(.preExisting)
        if preExisting { flags.insert(.preExisting) }
        return NotificationSourceEvent(
            eventID: eventID,
            eventFlags: flags,
            categoryID: notification.categoryID,
            categoryCount: notificationCenter.categoryCountByte(notification.categoryID),
            notificationUID: uid
        ).encode()
    }

    /// An attribute value as sent: cut bytewise (possibly inside a UTF-8
    /// sequence, as iOS does) to the max length asked and to what is left of
    /// the response budget; nil becomes Length 0.
    static func cut(_ value: String?, maxLength: UInt16?, budget: inout Int) -> AttributeValue {
        guard let value else { return .empty }
        var limit = min(max(budget, 0), Int(UInt16.max))
        if let maxLength { limit = min(limit, Int(maxLength)) }
        let length = value.utf8.count
        if length <= limit {
            budget -= length
            return AttributeValue(value)
        }
        budget -= limit
        return AttributeValue(bytes: Array(value.utf8.prefix(limit)))
    }

    static func clamp(_ mtu: Int) -> Int {
        min(max(mtu, DataSourceResponse.mtuRange.lowerBound), DataSourceResponse.mtuRange.upperBound)
    }

    func linkIndex(_ connection: ConnectionID) -> Int? {
        links.firstIndex { $0.id == connection }
    }
}
