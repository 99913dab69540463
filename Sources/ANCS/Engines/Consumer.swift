// Consumer — the Notification Consumer (NC) as a sans-I/O state machine: what
// every accessory runs. It never calls a transport; each input returns the
// actions its caller performs, in order (DESIGN: "Sans-I/O engines"). Every
// input also comes in an `into:` form that appends the actions to a buffer
// the caller owns and may reuse, so a firmware allocates no array per input.
//
// Session phases:
//
//   idle ──linkUp (ANCS published)──► subscribingDataSource
//   subscribingDataSource ──DS subscription result (any)──► subscribingNotificationSource
//        (a failed DS subscription leaves a session without fetches)
//   subscribingNotificationSource ──NS subscribed──► active
//   subscribingNotificationSource ──NS subscription failed──► idle   (sessionEnded)
//   any ──linkDown | stop | ANCS unpublished──► idle                  (sessionEnded if one began)
//   idle ──ANCS published (link up)──► subscribingDataSource
//
// Data Source before Notification Source (spec: "Sessions"): GATT
// notifications may start the moment Notification Source is subscribed, so
// the session begins (and events are processed) as that subscription goes out.
//
// Requests: each application request gets a ConsumerRequestID and ends
// exactly once with `.completed`. Identical commands in flight are coalesced
// into one entry with several waiters. Entries move
//
//   queued ──write issued──► writing ──write OK──► awaitingResponse ──response──► done
//                              └── write failed ──► done (no Data Source follows, spec "Errors")
//
// with at most one Control Point write in flight (ATT) and at most
// `pipeliningDepth` commands whose response is still due. A waiter times out
// on its own deadline; an entry left without waiters is abandoned, and the
// reassembler still consumes its response if it comes. An abandoned write
// keeps the link busy until its result comes (ATT allows one write at a
// time), or until a request timeout after it was issued if it never does.
// A session's end forgets its write in flight: the caller drops results of
// an earlier session's writes, so the next session writes at once.

public struct Consumer: Sendable {
    enum Phase: Hashable, Sendable {
        case idle
        case subscribingDataSource
        case subscribingNotificationSource
        case active
    }

    struct Waiter: Hashable, Sendable {
        /// nil for the engine's own (eager) fetches.
        var id: ConsumerRequestID?
        var deadline: Timestamp
    }

    enum EntryState: Hashable, Sendable {
        case queued
        case writing(WriteToken)
        case awaitingResponse
    }

    struct Entry: Sendable {
        var key: UInt32
        var command: ControlPointCommand
        var bytes: [UInt8]
        var waiters: [Waiter]
        var state: EntryState
        var expectsResponse: Bool { command.commandID != .performNotificationAction }
    }

    public let configuration: ConsumerConfiguration
    var phase: Phase = .idle
    var published = true
    /// The ATT MTU of the link, while it is up.
    public private(set) var mtu: Int?
    /// Whether this session can fetch (Data Source subscribed).
    public private(set) var dataSourceAvailable = false

    /// The session's model: every live notification by UID.
    /// Kept as an array in arrival order (oldest first) and searched by UID:
    /// at most `maximumNotifications` entries, and no Dictionary or hashing
    /// in a firmware image.
    var model: [ConsumerNotification] = []

    /// The session's model: every live notification by UID (built on each
    /// read; `notification(_:)` looks one up without building it).
    public var notifications: [NotificationUID: ConsumerNotification] {
        var result: [NotificationUID: ConsumerNotification] = [:]
        result.reserveCapacity(model.count)
        for notification in model { result[notification.uid] = notification }
        return result
    }

    /// The live notification with this UID, if the model has it.
    public func notification(_ uid: NotificationUID) -> ConsumerNotification? {
        modelIndex(uid).map { model[$0] }
    }

    /// The live notifications, oldest first.
    public var liveNotifications: [ConsumerNotification] { model }

    func modelIndex(_ uid: NotificationUID) -> Int? {
        model.firstIndex { $0.uid == uid }
    }
    /// App attributes per AppIdentifier, for this session only, oldest first.
    /// AppIdentifiers are matched by their bytes everywhere (cache, coalescing,
    /// eager fetches), as the NP does: no Unicode normalization (which would
    /// also pull its tables into firmware), and two AppIdentifiers that are
    /// not valid UTF-8 are never confused through their lenient decoding.
    var appCache: [AppAttributesResponse] = []
    /// AppIdentifiers the NP answered 0xA2 (Invalid parameter) for in this
    /// session, oldest first (at most `maximumCachedApps`): eager fetches do
    /// not ask for their names again with every notification.
    var unknownApps: [[UInt8]] = []

    /// App attributes per AppIdentifier fetched in this session. Keyed by the
    /// text: AppIdentifiers that are not valid UTF-8 may share a key here;
    /// `cachedApp(appIdentifierBytes:)` tells them apart.
    public var appAttributes: [String: AppAttributesResponse] {
        var result: [String: AppAttributesResponse] = [:]
        for app in appCache { result[app.appIdentifier] = app }
        return result
    }

    /// The cached app attributes of an AppIdentifier, if fetched in this session.
    public func cachedApp(_ appIdentifier: String) -> AppAttributesResponse? {
        cacheIndex(appIdentifier.utf8).map { appCache[$0] }
    }

    /// The cached app attributes of the AppIdentifier with exactly these bytes.
    public func cachedApp(appIdentifierBytes: [UInt8]) -> AppAttributesResponse? {
        cacheIndex(appIdentifierBytes).map { appCache[$0] }
    }

    func cacheIndex<Bytes: Collection<UInt8>>(_ appIdentifier: Bytes) -> Int? {
        appCache.firstIndex { $0.appIdentifierBytes.elementsEqual(appIdentifier) }
    }

    var entries: [Entry] = []
    var writeInFlight: WriteToken?
    /// When the write in flight was issued, plus the request timeout.
    var writeDeadline = Timestamp.zero
    /// No request waits on the write in flight any more (cancelled, timed out,
    /// session ended): its result is still awaited, but only until `writeDeadline`.
    var writeAbandoned = false
    /// The reassembler's key of the abandoned write's response: forgotten if
    /// the write fails, since no response follows (spec: "Errors").
    var abandonedResponseKey: UInt32?
    var reassembler: DataSourceReassembler
    /// Reused by `received(dataSource:)` for the reassembler's events.
    var eventBuffer: [ReassemblyEvent] = []
    var nextRequest: UInt32 = 0
    var nextEntryKey: UInt32 = 0
    var nextToken: UInt32 = 0

    public init(configuration: ConsumerConfiguration = .default) {
        self.configuration = configuration
        reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: configuration.unlimitedValueLength))
    }

    /// True from the moment Notification Source is being subscribed until the session ends.
    public var isInSession: Bool { phase == .subscribingNotificationSource || phase == .active }

    /// Requests not yet ended (waiting to be written, being written, or awaiting a response).
    public var pendingRequestCount: Int {
        var count = 0
        for entry in entries { count += entry.waiters.reduce(0) { $0 + ($1.id == nil ? 0 : 1) } }
        return count
    }

    /// The earliest deadline of a pending request: call `tick` then.
    public var nextDeadline: Timestamp? {
        var earliest: Timestamp?
        for entry in entries {
            for waiter in entry.waiters where earliest == nil || waiter.deadline < earliest! {
                earliest = waiter.deadline
            }
        }
        if writeInFlight != nil, writeAbandoned, earliest == nil || writeDeadline < earliest! {
            earliest = writeDeadline
        }
        return earliest
    }

    /// The cached display name of an app, if fetched in this session.
    public func displayName(of appIdentifier: String) -> AttributeValue? {
        cachedApp(appIdentifier)?[.displayName]
    }

    /// The cached display name of the app whose AppIdentifier has exactly these bytes.
    public func displayName(ofAppBytes appIdentifier: [UInt8]) -> AttributeValue? {
        cachedApp(appIdentifierBytes: appIdentifier)?[.displayName]
    }

    // MARK: - Link and session inputs

    /// The link is up (connected, encrypted, ANCS discovered) with this ATT MTU.
    public mutating func linkUp(mtu: Int, at now: Timestamp, into actions: inout [ConsumerAction]) {
        if phase != .idle { endSession(.linkDown, into: &actions) }
        writeInFlight = nil  // a new link has no write in flight
        self.mtu = mtu
        if published { startSubscribing(into: &actions) }
    }

    public mutating func linkUp(mtu: Int, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        linkUp(mtu: mtu, at: now, into: &actions)
        return actions
    }

    public mutating func mtuChanged(_ mtu: Int) {
        if self.mtu != nil { self.mtu = mtu }
    }

    public mutating func linkDown(at now: Timestamp, into actions: inout [ConsumerAction]) {
        endSession(.linkDown, into: &actions)
        mtu = nil
    }

    public mutating func linkDown(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        linkDown(at: now, into: &actions)
        return actions
    }

    /// The application ends the session: unsubscribe, forget everything.
    public mutating func stop(at now: Timestamp, into actions: inout [ConsumerAction]) {
        if phase != .idle {
            actions.append(.unsubscribe(.notificationSource))
            if dataSourceAvailable { actions.append(.unsubscribe(.dataSource)) }
        }
        endSession(.unsubscribed, into: &actions)
    }

    public mutating func stop(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        stop(at: now, into: &actions)
        return actions
    }

    /// Service Changed told that ANCS was unpublished (false) or published
    /// again (true, after the transport re-discovered it).
    public mutating func serviceChanged(published: Bool, at now: Timestamp, into actions: inout [ConsumerAction]) {
        self.published = published
        if !published {
            endSession(.serviceUnpublished, into: &actions)
        } else if mtu != nil && phase == .idle {
            startSubscribing(into: &actions)
        }
    }

    public mutating func serviceChanged(published: Bool, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        serviceChanged(published: published, at: now, into: &actions)
        return actions
    }

    /// The result of a `.subscribe` action.
    public mutating func subscriptionCompleted(_ characteristic: ANCSCharacteristic, _ result: ATTResult, at now: Timestamp, into actions: inout [ConsumerAction]) {
        switch (phase, characteristic) {
        case (.subscribingDataSource, .dataSource):
            dataSourceAvailable = result == .success
            phase = .subscribingNotificationSource
            actions.append(.emit(.sessionStarted))
            // After sessionStarted: it tells about this session.
            if !dataSourceAvailable { actions.append(.emit(.dataSourceUnavailable(result))) }
            actions.append(.subscribe(.notificationSource))
        case (.subscribingNotificationSource, .notificationSource):
            if result == .success {
                phase = .active
                pump(at: now, into: &actions)
            } else {
                endSession(.subscriptionFailed(result), into: &actions)
            }
        default:
            break  // a late answer from an earlier session
        }
    }

    public mutating func subscriptionCompleted(_ characteristic: ANCSCharacteristic, _ result: ATTResult, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        subscriptionCompleted(characteristic, result, at: now, into: &actions)
        return actions
    }

    // MARK: - Notification Source

    public mutating func received(notificationSource bytes: [UInt8], at now: Timestamp) -> [ConsumerAction] {
        bytes.withUnsafeBytes { received(notificationSource: $0, at: now) }
    }

    /// A Notification Source notification, read in place (no copy).
    public mutating func received(notificationSource bytes: UnsafeRawBufferPointer, at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard isInSession else { return }
        let event: NotificationSourceEvent
        do {
            event = try NotificationSourceEvent.decode(bytes)
        } catch {
            actions.append(.emit(.protocolError(error)))
            return
        }
        let uid = event.notificationUID
        switch event.eventID {
        case .added:
            let notification = ConsumerNotification(
                uid: uid, eventFlags: event.eventFlags, categoryID: event.categoryID,
                categoryCount: event.categoryCount, isPreExisting: event.eventFlags.contains(.preExisting))
            insert(notification, into: &actions)
            actions.append(.emit(.added(notification)))
            fetchEagerly(uid, modified: false, at: now, into: &actions)
        case .modified:
            let known = modelIndex(uid)
            var notification = known.map { model[$0] } ?? ConsumerNotification(
                uid: uid, eventFlags: event.eventFlags, categoryID: event.categoryID,
                categoryCount: event.categoryCount, isPreExisting: event.eventFlags.contains(.preExisting))
            notification.eventFlags = event.eventFlags
            notification.categoryID = event.categoryID
            notification.categoryCount = event.categoryCount
            // Modified does not make a notification younger.
            if let known { model[known] = notification } else { insert(notification, into: &actions) }
            actions.append(.emit(.modified(notification)))
            fetchEagerly(uid, modified: true, at: now, into: &actions)
        case .removed:
            let notification = modelIndex(uid).map { model.remove(at: $0) } ?? ConsumerNotification(
                uid: uid, eventFlags: event.eventFlags, categoryID: event.categoryID,
                categoryCount: event.categoryCount, isPreExisting: event.eventFlags.contains(.preExisting))
            var removed = notification
            removed.categoryCount = event.categoryCount
            actions.append(.emit(.removed(removed)))
            dropUnwrittenRequests(for: uid, into: &actions)
        default:
            actions.append(.emit(.unknownEvent(event)))
        }
    }

    public mutating func received(notificationSource bytes: UnsafeRawBufferPointer, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        received(notificationSource: bytes, at: now, into: &actions)
        return actions
    }

    // MARK: - Data Source and Control Point results

    public mutating func received(dataSource bytes: [UInt8], at now: Timestamp) -> [ConsumerAction] {
        bytes.withUnsafeBytes { received(dataSource: $0, at: now) }
    }

    public mutating func received(dataSource bytes: UnsafeRawBufferPointer, at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard isInSession else { return }
        // The reassembler's events are collected first (the handler cannot
        // touch the engine while the reassembler, part of it, is fed), in a
        // buffer the engine keeps: no allocation per notification.
        var events = eventBuffer
        eventBuffer = []
        events.removeAll(keepingCapacity: true)
        reassembler.feed(bytes) { events.append($0) }
        defer {
            // Kept for its capacity only: the responses are not held on to.
            events.removeAll(keepingCapacity: true)
            eventBuffer = events
        }
        for event in events {
            switch event {
            case .response(let key, let response):
                guard let index = entries.firstIndex(where: { $0.key == key }) else { continue }
                let entry = entries.remove(at: index)
                apply(response, at: now, into: &actions)
                let result: ConsumerResponse
                switch response {
                case .notificationAttributes(let value): result = .notificationAttributes(value)
                case .appAttributes(let value): result = .appAttributes(value)
                }
                finish(entry, .success(result), into: &actions)
            case .failed(let key, let error):
                guard let index = entries.firstIndex(where: { $0.key == key }) else { continue }
                finish(entries.remove(at: index), .failure(.invalidResponse(error)), into: &actions)
            case .unsolicited(let error):
                actions.append(.emit(.protocolError(error)))
            }
        }
        pump(at: now, into: &actions)
    }

    public mutating func received(dataSource bytes: UnsafeRawBufferPointer, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        received(dataSource: bytes, at: now, into: &actions)
        return actions
    }

    /// The answer to a `.writeControlPoint` action.
    public mutating func writeCompleted(_ token: WriteToken, _ result: ATTResult, at now: Timestamp, into actions: inout [ConsumerAction]) {
        if writeInFlight == token {
            writeInFlight = nil
            if writeAbandoned, result != .success, let key = abandonedResponseKey {
                reassembler.cancel(key, responseMayFollow: false)
            }
            writeAbandoned = false
            abandonedResponseKey = nil
        }
        if let index = entries.firstIndex(where: { $0.state == .writing(token) }) {
            let entry = entries[index]
            if result != .success {
                entries.remove(at: index)
                reassembler.cancel(entry.key, responseMayFollow: false)
                if result == .attError(.invalidParameter), case .getAppAttributes(let request) = entry.command,
                   !unknownApps.contains(request.appIdentifierBytes) {
                    if unknownApps.count >= configuration.maximumCachedApps { unknownApps.removeFirst() }
                    unknownApps.append(request.appIdentifierBytes)
                }
                finish(entry, .failure(ConsumerError(result)), into: &actions)
            } else if entry.expectsResponse {
                entries[index].state = .awaitingResponse
            } else {
                entries.remove(at: index)
                finish(entry, .success(.actionPerformed), into: &actions)
            }
        }
        pump(at: now, into: &actions)
    }

    public mutating func writeCompleted(_ token: WriteToken, _ result: ATTResult, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        writeCompleted(token, result, at: now, into: &actions)
        return actions
    }

    // MARK: - Application requests

    /// Fetch attributes of a notification (spec: Get Notification Attributes).
    public mutating func fetchAttributes(_ attributes: [NotificationAttributeRequest], for uid: NotificationUID, at now: Timestamp) -> (ConsumerRequestID, [ConsumerAction]) {
        submit(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes)), at: now)
    }

    /// Fetch attributes of an app (spec: Get App Attributes); answered from
    /// the session's cache when the app was already fetched.
    public mutating func fetchAppAttributes(_ appIdentifier: String, _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp) -> (ConsumerRequestID, [ConsumerAction]) {
        submit(.getAppAttributes(GetAppAttributes(appIdentifier: appIdentifier, attributes: attributes)), at: now)
    }

    /// Fetch attributes of the app whose AppIdentifier has exactly these bytes
    /// (as a notification's AppIdentifier attribute carries them, valid UTF-8 or not).
    public mutating func fetchAppAttributes(appIdentifierBytes: [UInt8], _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp) -> (ConsumerRequestID, [ConsumerAction]) {
        submit(.getAppAttributes(GetAppAttributes(appIdentifierBytes: appIdentifierBytes, attributes: attributes)), at: now)
    }

    /// Perform the positive or negative action of a notification whose flags announce it.
    public mutating func performAction(_ action: ActionID, on uid: NotificationUID, at now: Timestamp) -> (ConsumerRequestID, [ConsumerAction]) {
        submit(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action)), at: now)
    }

    // The same four requests, appending their actions to the caller's buffer
    // (which it may reuse from input to input: no allocation per input).

    public mutating func fetchAttributes(_ attributes: [NotificationAttributeRequest], for uid: NotificationUID, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes)), at: now, into: &actions)
    }

    public mutating func fetchAppAttributes(_ appIdentifier: String, _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getAppAttributes(GetAppAttributes(appIdentifier: appIdentifier, attributes: attributes)), at: now, into: &actions)
    }

    public mutating func fetchAppAttributes(appIdentifierBytes: [UInt8], _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getAppAttributes(GetAppAttributes(appIdentifierBytes: appIdentifierBytes, attributes: attributes)), at: now, into: &actions)
    }

    public mutating func performAction(_ action: ActionID, on uid: NotificationUID, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action)), at: now, into: &actions)
    }

    /// Ends a request with `cancelled`; its response, if it comes, is still consumed.
    public mutating func cancel(_ id: ConsumerRequestID, at now: Timestamp, into actions: inout [ConsumerAction]) {
        for index in entries.indices {
            if let waiter = entries[index].waiters.firstIndex(where: { $0.id == id }) {
                entries[index].waiters.remove(at: waiter)
                actions.append(.emit(.completed(id, .failure(.cancelled))))
                if entries[index].waiters.isEmpty { abandon(at: index) }
                break
            }
        }
        pump(at: now, into: &actions)
    }

    public mutating func cancel(_ id: ConsumerRequestID, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        cancel(id, at: now, into: &actions)
        return actions
    }

    /// Fails every request whose deadline has passed.
    public mutating func tick(_ now: Timestamp, into actions: inout [ConsumerAction]) {
        var index = 0
        while index < entries.count {
            var waiter = 0
            while waiter < entries[index].waiters.count {
                let due = entries[index].waiters[waiter]
                guard due.deadline <= now else {
                    waiter += 1
                    continue
                }
                if let id = due.id { actions.append(.emit(.completed(id, .failure(.timedOut)))) }
                entries[index].waiters.remove(at: waiter)
            }
            if entries[index].waiters.isEmpty { abandon(at: index) } else { index += 1 }
        }
        if writeInFlight != nil, writeAbandoned, writeDeadline <= now {
            // Its result never came: stop waiting, so later requests proceed.
            writeInFlight = nil
            writeAbandoned = false
            abandonedResponseKey = nil
        }
        pump(at: now, into: &actions)
    }

    public mutating func tick(_ now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        tick(now, into: &actions)
        return actions
    }

    // MARK: - Internals

    private mutating func submit(_ command: ControlPointCommand, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        nextRequest &+= 1
        let id = ConsumerRequestID(rawValue: nextRequest)
        func fail(_ error: ConsumerError) -> ConsumerRequestID {
            actions.append(.emit(.completed(id, .failure(error))))
            return id
        }
        guard isInSession else { return fail(.notConnected) }
        switch command {
        case .getNotificationAttributes:
            guard dataSourceAvailable else { return fail(.dataSourceUnavailable) }
        case .getAppAttributes(let request):
            guard dataSourceAvailable else { return fail(.dataSourceUnavailable) }
            if let cached = cachedApp(appIdentifierBytes: request.appIdentifierBytes),
               request.attributes.allSatisfy({ id in cached.attributes.contains { $0.id == id } }) {
                let answer = AppAttributesResponse(
                    appIdentifierBytes: request.appIdentifierBytes,
                    attributes: request.attributes.map { id in AppAttribute(id, cached[id] ?? .empty) })
                actions.append(.emit(.completed(id, .success(.appAttributes(answer)))))
                return id
            }
        case .performNotificationAction(let request):
            let flag: EventFlags = request.actionID == .positive ? .positiveAction : request.actionID == .negative ? .negativeAction : []
            guard let notification = notification(request.notificationUID), !flag.isEmpty,
                  notification.eventFlags.contains(flag)
            else { return fail(.actionNotAvailable) }
        }
        let waiter = Waiter(id: id, deadline: now + configuration.requestTimeout)
        let bytes: [UInt8]
        do {
            bytes = try command.encode()
        } catch {
            return fail(.encoding(error))
        }
        // Identical commands in flight are coalesced (compared as bytes).
        if let index = entries.firstIndex(where: { $0.bytes == bytes }) {
            entries[index].waiters.append(waiter)
            return id
        }
        guard pendingRequestCount < configuration.maximumRequests else { return fail(.tooManyRequests) }
        enqueue(command, bytes: bytes, waiter: waiter)
        pump(at: now, into: &actions)
        return id
    }
    private mutating func submit(_ command: ControlPointCommand, at now: Timestamp) -> (ConsumerRequestID, [ConsumerAction]) {
        var actions: [ConsumerAction] = []
        let id = submit(command, at: now, into: &actions)
        return (id, actions)
    }


    private mutating func enqueue(_ command: ControlPointCommand, bytes: [UInt8], waiter: Waiter) {
        nextEntryKey &+= 1
        entries.append(Entry(key: nextEntryKey, command: command, bytes: bytes, waiters: [waiter], state: .queued))
    }

    /// Issues the next write if the link allows one (one in flight, pipelining depth).
    private mutating func pump(at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard phase == .active, writeInFlight == nil,
              let index = entries.firstIndex(where: { $0.state == .queued })
        else { return }
        if entries[index].expectsResponse {
            var outstanding = 0
            for entry in entries where entry.state != .queued && entry.expectsResponse { outstanding += 1 }
            if outstanding >= configuration.pipeliningDepth { return }
        }
        nextToken &+= 1
        let token = WriteToken(rawValue: nextToken)
        let entry = entries[index]
        if let request = DataSourceRequest(entry.command) {
            reassembler.expect(request, id: entry.key)
        }
        entries[index].state = .writing(token)
        writeInFlight = token
        writeDeadline = now + configuration.requestTimeout
        writeAbandoned = false
        abandonedResponseKey = nil
        actions.append(.writeControlPoint(entry.bytes, token))
    }

    private mutating func abandon(at index: Int) {
        let entry = entries.remove(at: index)
        switch entry.state {
        case .queued:
            break
        case .writing(let token):
            // The write still occupies the link until its result comes.
            if writeInFlight == token {
                writeAbandoned = true
                abandonedResponseKey = entry.key
            }
            reassembler.cancel(entry.key, responseMayFollow: true)
        case .awaitingResponse:
            reassembler.cancel(entry.key, responseMayFollow: true)
        }
    }

    private mutating func finish(_ entry: Entry, _ result: ConsumerResult, into actions: inout [ConsumerAction]) {
        for waiter in entry.waiters {
            if let id = waiter.id { actions.append(.emit(.completed(id, result))) }
        }
    }

    private mutating func apply(_ response: DataSourceResponse, at now: Timestamp, into actions: inout [ConsumerAction]) {
        switch response {
        case .notificationAttributes(let value):
            if let index = modelIndex(value.notificationUID) {
                model[index].merge(value.attributes)
            }
            actions.append(.emit(.attributes(value)))
            if configuration.eagerAppNames, !configuration.eagerAttributes.isEmpty,
               let identifier = value[.appIdentifier], !identifier.isEmpty {
                // Its bytes as received: a lenient decoding could name another app.
                fetchAppNameEagerly(identifier.bytes, at: now)
            }
        case .appAttributes(let value):
            let cached = cacheIndex(value.appIdentifierBytes)
            var merged = cached.map { appCache.remove(at: $0) } ?? AppAttributesResponse(appIdentifierBytes: value.appIdentifierBytes, attributes: [])
            if appCache.count >= configuration.maximumCachedApps { appCache.removeFirst() }
            for attribute in value.attributes {
                if let index = merged.attributes.firstIndex(where: { $0.id == attribute.id }) {
                    merged.attributes[index] = attribute
                } else {
                    merged.attributes.append(attribute)
                }
            }
            appCache.append(merged)
            actions.append(.emit(.appAttributes(value)))
        }
    }

    /// The eager fetch of an Added or Modified notification. A Modified
    /// notification changed on the NP, so a fetch already written may have
    /// read the old content: it is fetched again unless an identical fetch is
    /// still queued (so a burst of Modified events costs one fetch).
    private mutating func fetchEagerly(_ uid: NotificationUID, modified: Bool, at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard !configuration.eagerAttributes.isEmpty, dataSourceAvailable else { return }
        let command = ControlPointCommand.getNotificationAttributes(
            GetNotificationAttributes(notificationUID: uid, attributes: configuration.eagerAttributes))
        guard let bytes = try? command.encode(),
              !entries.contains(where: { $0.bytes == bytes && (!modified || $0.state == .queued) }),
              entries.count < configuration.maximumRequests else { return }
        enqueue(command, bytes: bytes, waiter: Waiter(id: nil, deadline: now + configuration.requestTimeout))
        pump(at: now, into: &actions)
    }

    private mutating func fetchAppNameEagerly(_ identifier: [UInt8], at now: Timestamp) {
        guard cacheIndex(identifier) == nil, dataSourceAvailable,
              !unknownApps.contains(identifier) else { return }
        let alreadyAsked = entries.contains { entry in
            if case .getAppAttributes(let request) = entry.command { return request.appIdentifierBytes == identifier }
            return false
        }
        guard !alreadyAsked, entries.count < configuration.maximumRequests else { return }
        let command = ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifierBytes: identifier, attributes: [.displayName]))
        // Placed ahead of queued attribute fetches: the name is needed to show them.
        guard let bytes = try? command.encode() else { return }
        enqueue(command, bytes: bytes, waiter: Waiter(id: nil, deadline: now + configuration.requestTimeout))
        if let firstQueued = entries.firstIndex(where: { $0.state == .queued }), firstQueued < entries.count - 1 {
            let entry = entries.removeLast()
            entries.insert(entry, at: firstQueued)
        }
    }

    /// A removed notification names nothing on the NP any more (it would
    /// answer 0xA2): its requests not yet written (eager fetches, application
    /// fetches and actions) are dropped, and whoever waits on them is told.
    private mutating func dropUnwrittenRequests(for uid: NotificationUID, into actions: inout [ConsumerAction]) {
        var index = 0
        while index < entries.count {
            let target: NotificationUID?
            switch entries[index].command {
            case .getNotificationAttributes(let request): target = request.notificationUID
            case .performNotificationAction(let request): target = request.notificationUID
            case .getAppAttributes: target = nil
            }
            if entries[index].state == .queued, target == uid {
                finish(entries.remove(at: index), .failure(.notificationRemoved), into: &actions)
            } else {
                index += 1
            }
        }
    }

    private mutating func insert(_ notification: ConsumerNotification, into actions: inout [ConsumerAction]) {
        if let known = modelIndex(notification.uid) {
            // Added again: it is the youngest now.
            model.remove(at: known)
        } else if model.count >= configuration.maximumNotifications {
            // Oldest first: a bounded model under an NP that never removes.
            // The application hears it as removed (from the model; the NP
            // still has it), so a display never shows what the model lost.
            actions.append(.emit(.removed(model.removeFirst())))
        }
        model.append(notification)
    }

    private mutating func startSubscribing(into actions: inout [ConsumerAction]) {
        phase = .subscribingDataSource
        actions.append(.subscribe(.dataSource))
    }

    /// Nothing survives a session (spec: "Sessions").
    private mutating func endSession(_ reason: SessionEndReason, into actions: inout [ConsumerAction]) {
        let hadSession = isInSession
        let ended = entries
        entries.removeAll()
        for entry in ended { finish(entry, .failure(.sessionEnded), into: &actions) }
        reassembler = DataSourceReassembler(configuration: reassembler.configuration)
        // The caller drops the results of this session's writes (they answer
        // nothing in the next one), so the next session must not wait for
        // them: it writes at once, and the transport keeps ATT's one write at
        // a time on a link that stays up.
        writeInFlight = nil
        writeAbandoned = false
        abandonedResponseKey = nil
        model.removeAll()
        appCache.removeAll()
        unknownApps.removeAll()
        dataSourceAvailable = false
        phase = .idle
        if hadSession { actions.append(.emit(.sessionEnded(reason))) }
    }
}
