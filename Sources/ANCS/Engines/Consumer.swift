// Consumer — the Notification Consumer (NC) as a sans-I/O state machine: what
// every accessory runs. It never calls a transport; each input returns the
// actions its caller performs, in order, and time is an input, so one engine
// serves every host (the async runtime, the C API, a test's virtual clock). Every
// input also comes in an `into:` form that appends the actions to a buffer
// the caller owns and may reuse, so a firmware allocates no array per input.
//
// The link and its session (`LinkState`, one byte: whether the link is up,
// whether ANCS is published on it, whether the application stopped, and the
// session's step; the link's MTU and whether Data Source is subscribed are
// kept beside it, meaningful where it says so):
//
//   down ──linkUp (ANCS published)──► subscribingDataSource
//   down ──Service Changed: no ANCS (before linkUp)──► downUnpublished ──linkUp──► unpublished
//   subscribingDataSource ──DS subscription result (any)──► subscribingNotificationSource
//        (a failed DS subscription leaves a session without fetches)
//   subscribingNotificationSource ──NS subscribed──► active
//   subscribingNotificationSource ──NS subscription failed──► waiting   (sessionEnded)
//   any ──linkDown──► down                                  (sessionEnded if one began)
//   any up ──stop──► stopped (unpublished stays so);  ──ANCS unpublished──► unpublished   (sessionEnded if one began)
//   unpublished | stopped | waiting ──ANCS published──► subscribingDataSource
//   waiting | active without DS ──retryInterval after the NS (DS) subscription
//        failed──► subscribingDataSource (the session ended first: subscribe again)
//   any session ──subscribe again (unsubscribe both, then as at link up)──► subscribingDataSource
//   active ──refresh (Notification Source off, then on; the session kept)──► subscribingNotificationSource
//
// Health and liveness (what the phone's answers say, the probe, the
// refresh, subscribing again): ConsumerLiveness.swift, with their diagram.
//
// Subscribing again is decided where it cannot be made (in the
// reassembler's handler, in a loop over the entries) and made by `pump`,
// which ends every input.
//
// "ANCS unpublished" belongs to the link it was told on: a link that drops
// takes it along, since the next link has a new GATT database (a host whose
// discovery finds no ANCS says so with `serviceChanged(published: false)`
// before `linkUp`). Kept, it left every later connection silent.
//
// Data Source before Notification Source (spec: "Sessions"): GATT
// notifications may start the moment Notification Source is subscribed, so
// the session begins (and events are processed) as that subscription goes out.
//
// Requests: each application request gets a ConsumerRequestID and ends
// exactly once with `.completed`. A request identical to a command in flight
// that only the display or the probe waits on joins it (counted against
// `maximumRequests`); two of the application's are written twice. Entries move
//
//   queued ──write issued──► writing ──write OK──► awaitingResponse ──response──► done
//                              └── write failed ──► done (no Data Source follows, spec "Errors")
//
// with at most one Control Point write in flight (ATT) and at most
// `pipeliningDepth` commands whose response is still due. A request's
// timeout counts from its write (the NP's time to answer), not from its
// submission: a request queued behind others is never failed for the
// others' time. Queued requests go out in order, ahead of the display's
// fetches, so an application's action never waits behind a backlog.
// An entry left without anyone waiting is abandoned, and the reassembler
// still consumes its response if it comes. An abandoned write keeps the link
// busy until its result comes (ATT allows one write at a time), or until a
// request timeout after it was issued if it never does. That holds across
// sessions on a link that stays up (Service Changed, stop): the next
// session's first write waits for the last one's result; a link that drops
// takes its write with it. The write slot (`WriteSlot`):
//
//   free ──write issued──► busy ──result──► free
//   busy ──its entry abandoned (cancel, timeout, session end)──► abandoned
//   abandoned ──result | its deadline | link down or up──► free
//
// Ready to show (with `eagerAttributes`): every live notification in the
// model carries its display stage (`DisplayStage`),
//
//   wanted ──fetch written──► fetching ──attributes──► naming ──app name ended──► settled (.ready, later .updated)
//                                 │                       └── (name cached, refused, or not wanted) ──► settled
//                                 ├── Modified after the write ──► fetching(again) ──ended──► wanted
//                                 └── failed ──► settled (.displayFailed)
//   wanted ──its AppIdentifier alone written (apps hidden, app not known)──► fetching(again) ──answered──► wanted
//
// so the display's fetches cost no application request: they are written
// when nothing the application asked for is queued, live notifications
// before PreExisting ones and the PreExisting backlog newest first, and they
// are bounded by the model itself (`maximumNotifications`). What the display
// does not fetch is settled as it comes up (`Session.displayFetch`): a hidden
// category, a Silent notification when those are not fetched, a hidden
// app (known from a first fetch of the AppIdentifier alone), the backlog
// past `maximumPreExisting`. A Modified notification is wanted again (a
// fetch already written may have read the old content). Each app's name
// is asked once per session, and never again after the NP answered 0xA2.

/// The Notification Consumer engine: inputs in, actions out, time an input.
///
/// ## Two forms of each input
/// Each input returns its actions as a new array
/// (`linkUp(mtu:at:) -> [ConsumerAction]`; a request returns a
/// `ConsumerRequest`): the form to use. Each also has a firmware form,
/// marked `@_disfavoredOverload`, that appends to a buffer the caller
/// owns and reuses from input to input (`linkUp(mtu:at:into:)`; a request
/// returns its `ConsumerRequestID`), so that no array is made per input.
/// Both run the same code; the C API and hot loops use the second.
public struct Consumer: Sendable {
    /// The link and the session on it (the diagram at the top of this
    /// file), in one byte, ordered so that each question about it is one
    /// comparison. The link's MTU is kept beside it (`linkMTU`), meaningful
    /// whenever the link is up, and so is whether Data Source is
    /// subscribed (`dataSourceAvailable`), meaningful in a session.
    enum LinkState: UInt8, Sendable {
        /// No link.
        case down
        /// No link, and the host found no ANCS in the next link's
        /// database (told before `linkUp`).
        case downUnpublished
        /// The link is up, ANCS not published on it.
        case unpublished
        /// The link is up; the application stopped the session: nothing
        /// starts until the link or ANCS does.
        case stopped
        /// The link is up, with no session: a subscription failed, or a
        /// session ended; asked again after the retry interval.
        case waiting
        /// A session's first step: Data Source being subscribed.
        case subscribingDataSource
        /// Notification Source being subscribed (at the start, or again in
        /// place: a refresh).
        case subscribingNotificationSource
        case active

        /// The link is up.
        var isUp: Bool { rawValue >= LinkState.unpublished.rawValue }
        /// A session is being made or is on (something subscribed or being subscribed).
        var isSubscribed: Bool { rawValue >= LinkState.subscribingDataSource.rawValue }
        /// Notification Source is being subscribed, or the session is on.
        var isInSession: Bool { rawValue >= LinkState.subscribingNotificationSource.rawValue }
    }

    /// Where an entry stands (`Entry.step`); a written one has its
    /// deadline (`Entry.due`): the write and the response must end by then.
    enum EntryStep: UInt8, Sendable {
        case queued
        /// Its write is in flight (the write slot's): one
        /// entry at most.
        case writing
        case awaitingResponse
    }

    /// The Control Point write in flight: ATT allows one at a time. Its
    /// entry's key and its deadline (the entry's `due`) are kept beside it
    /// (`slotKey`, `slotDeadline`: plain fields, as an entry's,
    /// `Entry.step`); its token is the last one given (`nextToken`: a write
    /// goes out only with the slot free). Busy exactly while an entry is
    /// writing.
    enum WriteSlot: UInt8, Sendable {
        case free
        /// The write of the one entry `.writing`.
        case busy
        /// A write no request waits on any more (cancelled, timed out,
        /// session ended): its result is still awaited, but only until
        /// `slotDeadline`. If it fails, no response follows (spec
        /// "Errors"): the reassembler forgets the one it expects under
        /// `slotKey` (after a session's end it expects none: it was
        /// emptied, and nothing is written while the slot is taken).
        case abandoned

        var isFree: Bool {
            if case .free = self { true } else { false }
        }
    }

    struct Entry: Sendable {
        var key: UInt32
        /// The command, as written.
        var bytes: [UInt8]
        /// The application's request waiting on it: one at most. An
        /// identical request joins an entry only the display or the probe
        /// waits on; two of the application's get two writes (a rare case,
        /// and a list of waiters cost 416 bytes of Cortex-M4 text).
        /// (Kept as its raw value, 0 for none: no ID is 0, `submit`.)
        var waiterID: UInt32 = 0
        var waiter: ConsumerRequestID? {
            get { waiterID == 0 ? nil : ConsumerRequestID(rawValue: waiterID) }
            set { waiterID = newValue?.rawValue ?? 0 }
        }
        /// Whether the display waits on it too, and whether it was written
        /// twice: each set once and never cleared, in one byte (an entry is
        /// made and joined with one store; 44 bytes of firmware fewer than a
        /// Bool each).
        struct Flags: OptionSet, Sendable {
            var rawValue: UInt8
            /// The display fetches with it the attributes of the notification
            /// its command names (`displayUID`): a flag, not the UID again.
            static let displayFetch = Flags(rawValue: 1)
            /// The display asks an app's name with it.
            static let asksAppName = Flags(rawValue: 2)
            /// Written a second time after its first write timed out unanswered
            /// (`tick`): the reassembler still expects the first write's
            /// response under `key`, and the second's is expected behind it,
            /// abandoned, so that whichever comes first answers it.
            static let retried = Flags(rawValue: 4)
        }
        var flags: Flags
        var displayFetch: Bool { flags.contains(.displayFetch) }
        var asksAppName: Bool { flags.contains(.asksAppName) }
        var retried: Bool { flags.contains(.retried) }
        // Where it stands, as plain fields: an enum with payloads is moved
        // and matched as a whole (BENCHMARKS.md section 5, "Why the core is
        // shaped for size"; the write slot's the same).
        var step = EntryStep.queued
        /// Written: when the write and the response must have ended.
        var due = Timestamp.zero
        var deadline: Timestamp? {
            if case .queued = step { nil } else { due }
        }
        var isQueued: Bool {
            if case .queued = step { true } else { false }
        }
        var isWriting: Bool {
            if case .writing = step { true } else { false }
        }
        /// Its write goes out; it must end by `deadline`. (Both fields set
        /// in one access to the array: one uniqueness check, not two.)
        mutating func write(until deadline: Timestamp) {
            step = .writing
            due = deadline
        }
        /// The display's fetch (or app-name fetch), written, taken and
        /// unanswered, and not yet asked twice: `tick` writes it again.
        var asksAgainOnTimeout: Bool {
            guard case .awaitingResponse = step else { return false }
            return !retried && !flags.isDisjoint(with: [.displayFetch, .asksAppName])
        }
        /// Queued again, to be written a second time (`retried`).
        mutating func retry() {
            flags.insert(.retried)
            step = .queued
        }
        var expectsResponse: Bool { bytes[0] != CommandID.performNotificationAction.rawValue }
        /// What its response must look like (read from `bytes`, sharing
        /// them); nil for Perform Notification Action, which has none.
        var request: DataSourceRequest? { DataSourceRequest(encoded: bytes) }
        /// Nobody waits for it any more.
        var isUnwanted: Bool { waiter == nil && flags.isDisjoint(with: [.displayFetch, .asksAppName]) }
        /// The notification the display fetches with it.
        var displayUID: NotificationUID? { displayFetch ? NotificationUID(readUInt32LE(bytes, at: 1)) : nil }
        /// Whether the command names this notification: Get Notification
        /// Attributes and Perform Notification Action carry its UID after
        /// their CommandID (Get App Attributes names an app).
        func names(_ uid: NotificationUID) -> Bool {
            bytes[0] != CommandID.getAppAttributes.rawValue
                && readUInt32LE(bytes, at: 1) == uid.rawValue
        }
    }

    /// Where a notification stands on its way to being shown (with eager attributes).
    enum DisplayStage: Hashable, Sendable {
        /// Nothing to do: lazy, shown, or its fetch failed.
        case settled
        /// Its attributes are to be fetched.
        case wanted
        /// A fetch of its attributes is queued or written; `again`: it was
        /// Modified after the fetch was written (which may have read the old
        /// content), so it is fetched again when this one ends.
        case fetching(again: Bool)
        /// Its attributes are in; its app's name is being asked.
        case naming

        var isWanted: Bool {
            if case .wanted = self { true } else { false }
        }
        var isNaming: Bool {
            if case .naming = self { true } else { false }
        }
        /// The display's fetch of it is written, or its app's name asked.
        var isShowing: Bool {
            if case .fetching = self { true } else { isNaming }
        }
    }

    struct Tracked: Sendable {
        var notification: ConsumerNotification
        /// Changed by `Session.move` alone (read by `Session.stage`).
        var stage = DisplayStage.settled
        /// `.ready` was told: the next show is `.updated`.
        var shown = false
    }

    /// What the session holds: its requests, its notifications, its app
    /// cache (everything a Data Source response can change).
    var session: Session
    public var configuration: ConsumerConfiguration { session.configuration }
    var link = LinkState.down
    /// The link's ATT MTU, while it is up (`mtu`).
    var linkMTU = 0
    /// The ATT MTU of the link, while it is up.
    public var mtu: Int? { link.isUp ? linkMTU : nil }
    /// Whether this session can fetch (Data Source subscribed).
    public private(set) var dataSourceAvailable = false
    /// ANCS is published on the link (or, the link down, not known to be absent from the next).
    var published: Bool { link != .downUnpublished && link != .unpublished }

    /// The session's model: every live notification by UID (built on each
    /// read; `notification(_:)` looks one up without building it).
    public var notifications: [NotificationUID: ConsumerNotification] {
        var result: [NotificationUID: ConsumerNotification] = [:]
        result.reserveCapacity(session.model.count)
        for tracked in session.model { result[tracked.notification.uid] = tracked.notification }
        return result
    }

    /// The live notification with this UID, if the model has it.
    public func notification(_ uid: NotificationUID) -> ConsumerNotification? {
        session.modelIndex(uid).map { session.model[$0].notification }
    }

    /// The live notifications, oldest first.
    public var liveNotifications: [ConsumerNotification] { session.model.map { $0.notification } }

    /// App attributes per AppIdentifier fetched in this session. Keyed by the
    /// text: AppIdentifiers that are not valid UTF-8 may share a key here;
    /// `cachedApp(appIdentifierBytes:)` tells them apart.
    public var appAttributes: [String: AppAttributesResponse] {
        var result: [String: AppAttributesResponse] = [:]
        for app in session.appCache where !app.attributes.isEmpty { result[app.appIdentifier] = app }
        return result
    }

    /// The cached app attributes of an AppIdentifier, if fetched in this session.
    public func cachedApp(_ appIdentifier: String) -> AppAttributesResponse? {
        cachedApp(AttributeValue(appIdentifier))
    }

    /// The cached app attributes of the AppIdentifier with exactly these bytes.
    public func cachedApp(appIdentifierBytes: [UInt8]) -> AppAttributesResponse? {
        cachedApp(AttributeValue(bytes: appIdentifierBytes))
    }

    /// (An app the phone did not know is cached with no attributes: not told here.)
    func cachedApp(_ appIdentifier: AttributeValue) -> AppAttributesResponse? {
        guard let index = session.cacheIndex(appIdentifier), !session.appCache[index].attributes.isEmpty else { return nil }
        return session.appCache[index]
    }

    var writeSlot = WriteSlot.free
    /// The key of the entry whose write is in the slot (busy: the entry
    /// writing; abandoned: the one that was), as the reassembler knows
    /// its response.
    var slotKey: UInt32 = 0
    /// The deadline of the write in the slot (its entry's `due`): an
    /// abandoned one's result is awaited until then.
    var slotDeadline = Timestamp.zero
    var reassembler: DataSourceReassembler
    var nextRequest: UInt32 = 0
    /// The token of the last write: the write slot's, unless it is free.
    var nextToken: UInt32 = 0

    // Liveness and health, after the fields every input touches (their
    // offsets stay small: short loads and stores in Thumb code).
    /// Whether notifications reach the accessory, as the phone's answers tell.
    public internal(set) var health: ConsumerHealth = .healthy
    /// Probe as soon as nothing is in flight (a new session).
    var probeSoon = false
    /// The last Control Point write was refused with 0x03 (two in a row: not shared).
    var lastWriteNotPermitted = false
    /// Notification Source was subscribed again in place in this session
    /// (`refresh`): a PreExisting announcement is one the phone made again,
    /// known unless newer than every announcement.
    var refreshing = false
    /// Liveness steps taken since the health last changed or the link came
    /// up, up to four: while something is retried (`probeTime`), each
    /// doubles the wait before the next (15 s, 30 s, 1 min, 2 min, then
    /// every 4 min with the default retry interval).
    var retries: UInt8 = 0
    /// The UID after the highest announced (0 before any: a phone may
    /// number from 0): the probe asks for it, and a refresh's announcement
    /// of it or a later one was never announced before.
    var probeUID: UInt32 = 0
    /// When anything last came from the phone (a notification, a write or subscription result).
    var lastHeard = Timestamp.zero
    /// When Notification Source last spoke (or the session became active).
    var lastSourceEvent = Timestamp.zero

    /// `configuration.requestTimeout`, in nanoseconds.
    var requestTimeout: Int64 { session.configuration.requestNanoseconds }

    public init(configuration: ConsumerConfiguration = .default) {
        session = Session(configuration: configuration)
        // Responses held only while shown: each may share the reassembler's
        // buffer, reused once it is let go (none kept per notification; a
        // kept AppIdentifier of a hidden-apps filter would hold one each).
        reassembler = DataSourceReassembler(
            configuration: .init(unlimitedValueLength: configuration.unlimitedValueLength),
            lendsBuffers: !configuration.keepsAttributes && configuration.hiddenApps.isEmpty)
    }

    /// True from the moment Notification Source is being subscribed until the session ends.
    public var isInSession: Bool { link.isInSession }

    /// With eager attributes the engine fetches what each notification needs to be shown.
    var fetchesForDisplay: Bool { !configuration.eagerAttributes.isEmpty }

    /// Application requests not yet ended (waiting to be written, being written, or awaiting a response).
    public var pendingRequestCount: Int {
        var count = 0
        for index in session.entries.indices where session.entries[index].waiter != nil { count &+= 1 }
        return count
    }

    /// The earliest deadline of a written request (or of an abandoned
    /// write's result), a retry, the probe or the silence limit: call `tick` then.
    public var nextDeadline: Timestamp? {
        var earliest: Timestamp?
        func consider(_ deadline: Timestamp?) {
            if let deadline, earliest == nil || deadline < earliest! { earliest = deadline }
        }
        for index in session.entries.indices { consider(session.entries[index].deadline) }
        if case .abandoned = writeSlot { consider(slotDeadline) }
        consider(probeTime)
        if watchesSilence { consider(lastSourceEvent.adding(nanoseconds: configuration.silenceNanoseconds)) }
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
    @_disfavoredOverload
    public mutating func linkUp(mtu: Int, at now: Timestamp, into actions: inout [ConsumerAction]) {
        let published = published
        if link.isSubscribed { endSession(.linkDown, into: &actions) }
        writeSlot = .free  // a new link has no write in flight
        retries = 0  // a new link is asked soon again
        lastHeard = now
        link = .unpublished
        linkMTU = mtu
        if published { startSubscribing(into: &actions) }
    }

    public mutating func linkUp(mtu: Int, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        linkUp(mtu: mtu, at: now, into: &actions)
        return actions
    }

    public mutating func mtuChanged(_ mtu: Int) {
        if link.isUp { linkMTU = mtu }
    }

    @_disfavoredOverload
    public mutating func linkDown(at now: Timestamp, into actions: inout [ConsumerAction]) {
        endSession(.linkDown, into: &actions)
        writeSlot = .free  // the link took it
        link = .down  // and its GATT database: the next link's discovery tells anew
    }

    public mutating func linkDown(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        linkDown(at: now, into: &actions)
        return actions
    }

    /// The application ends the session: unsubscribe, forget everything.
    @_disfavoredOverload
    public mutating func stop(at now: Timestamp, into actions: inout [ConsumerAction]) {
        unsubscribe(.unsubscribed, into: &actions)
        // No retry: nothing starts again until the link or ANCS does. (A
        // session ended leaves the link waiting; down, unpublished or
        // stopped already, it stays so.)
        if link == .waiting { link = .stopped }
    }

    public mutating func stop(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        stop(at: now, into: &actions)
        return actions
    }

    /// Service Changed told that ANCS was unpublished (false) or published
    /// again (true, after the transport re-discovered it).
    @_disfavoredOverload
    public mutating func serviceChanged(published: Bool, at now: Timestamp, into actions: inout [ConsumerAction]) {
        if !published {
            endSession(.serviceUnpublished, into: &actions)
            link = link.isUp ? .unpublished : .downUnpublished
        } else if !link.isUp {
            link = .down
        } else if !link.isSubscribed {
            startSubscribing(into: &actions)
        }
    }

    public mutating func serviceChanged(published: Bool, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        serviceChanged(published: published, at: now, into: &actions)
        return actions
    }

    /// The result of a `.subscribe` action.
    @_disfavoredOverload
    public mutating func subscriptionCompleted(_ characteristic: ANCSCharacteristic, _ result: ATTResult, at now: Timestamp, into actions: inout [ConsumerAction]) {
        lastHeard = now
        switch (link, characteristic) {
        case (.subscribingDataSource, .dataSource):
            link = .subscribingNotificationSource
            dataSourceAvailable = result == .success
            actions.appendOutOfLine(.emit(.sessionStarted))
            // After sessionStarted: it tells about this session.
            if !dataSourceAvailable { actions.appendOutOfLine(.emit(.dataSourceUnavailable(result))) }
            subscription(.dataSource, result, into: &actions)
            actions.appendOutOfLine(.subscribe(.notificationSource))
        case (.subscribingNotificationSource, .notificationSource):
            if result == .success {
                link = .active
                lastSourceEvent = now
                subscription(.notificationSource, result, into: &actions)
                pump(at: now, into: &actions)
            } else {
                endSession(.subscriptionFailed(result), into: &actions)
                subscription(.notificationSource, result, into: &actions)
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
    @_disfavoredOverload
    public mutating func received(notificationSource bytes: UnsafeRawBufferPointer, at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard isInSession else { return }
        // While not shared, an announcement is a reason to probe, not an
        // answer: the probe goes at its retry interval (`probeTime`), its
        // backoff started again (sharing may have come back).
        if !isNotShared { lastHeard = now } else { retries = 0 }
        let event: NotificationSourceEvent
        do {
            event = try NotificationSourceEvent.decode(bytes)
        } catch {
            actions.appendOutOfLine(.emit(.protocolError(error)))
            return
        }
        lastSourceEvent = now
        works(.notificationSource, into: &actions)
        let uid = event.notificationUID
        let newest = uid.rawValue >= probeUID
        if newest {
            probeUID = uid.rawValue &+ 1
            // The probe asked for it (it crossed the announcement): its
            // answer, attributes, is no missed notification, nor its own answer.
            session.probeKey = nil
        }
        // The notification as this event tells it (what the model does not know yet).
        let announced = ConsumerNotification(
            uid: uid, eventFlags: event.eventFlags, categoryID: event.categoryID,
            categoryCount: event.categoryCount, isPreExisting: event.eventFlags.contains(.preExisting))
        switch event.eventID {
        case .added, .modified:
            let added = event.eventID == .added
            if !added, let known = session.modelIndex(uid) {
                // Modified does not make a notification younger: a known one
                // is changed in place (its attributes kept); an unknown one
                // is added, as an Added one is (below).
                // (In place, unchecked: "An element at an index just found", at
                // the end of this file.)
                let modified = session.model.withUnsafeMutableBufferPointer {
                    $0[known].notification.take(event)
                    return $0[known].notification
                }
                actions.appendOutOfLine(.emit(.modified(modified)))
                if configuration.refreshOnModified { want(known) }
                break
            }
            if added && refreshing && announced.isPreExisting {
                // Announced again after `refresh`: known (or dropped by the
                // model's bound), unless it is newer than every announcement:
                // then Notification Source had stopped, and a new session
                // hears what the phone holds now.
                if newest { session.pendingResubscribe = .missedNotification }
                break
            }
            let index = session.insert(announced, into: &actions)
            actions.appendOutOfLine(.emit(added ? .added(announced) : .modified(announced)))
            want(index)
        case .removed:
            var removed = session.modelIndex(uid).map { session.forget(at: $0).notification } ?? announced
            removed.categoryCount = event.categoryCount
            actions.appendOutOfLine(.emit(.removed(removed)))
            session.dropUnwrittenRequests(for: uid, into: &actions)
        default:
            actions.appendOutOfLine(.emit(.unknownEvent(event)))
        }
        pump(at: now, into: &actions)
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

    @_disfavoredOverload
    public mutating func received(dataSource bytes: UnsafeRawBufferPointer, at now: Timestamp, into actions: inout [ConsumerAction]) {
        guard isInSession else { return }
        // Most notifications lie inside a value (at MTU 23 a response takes
        // tens of them): collected at once, they cause no event and change
        // nothing the queue depends on, so nothing to pump.
        if reassembler.absorbInsideValue(bytes) { return }
        receivedAny(dataSource: bytes, at: now, into: &actions)
    }

    /// `received(dataSource:)` for a notification that may end a response.
    @inline(never)
    private mutating func receivedAny(dataSource bytes: UnsafeRawBufferPointer, at now: Timestamp, into actions: inout [ConsumerAction]) {
        // The reassembler's events are handled as it reports them, by the
        // session (`Session.take`): the two are separate fields, so the
        // handler cannot reach the reassembler in the middle of its `feed`
        // (the compiler's exclusivity checks hold it), and nothing is stored
        // or moved per notification (BENCHMARKS.md section 5, "Why the core
        // is shaped for size"). Only `pump`, after the feed, writes the next request.
        // (Not `feed`, which would ask `absorbInsideValue` again.)
        reassembler.feedAnyFragment(bytes) { event in session.take(event, into: &actions) }
        pump(at: now, into: &actions)
    }

    public mutating func received(dataSource bytes: UnsafeRawBufferPointer, at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        received(dataSource: bytes, at: now, into: &actions)
        return actions
    }

    /// The answer to a `.writeControlPoint` action (also for a write of a
    /// session that ended while the link stayed up: the link is free again).
    @_disfavoredOverload
    public mutating func writeCompleted(_ token: WriteToken, _ result: ATTResult, at now: Timestamp, into actions: inout [ConsumerAction]) {
        lastHeard = now
        // What the answer says of the phone, before the entry ends (a
        // display fetch refused while not shared is wanted again, not failed).
        switch result {
        case .success:
            answered(.controlPoint, into: &actions)  // taken: not refused, though not yet answered
        case .attError(let code):
            switch code {
            case .writeNotPermitted:
                if !lastWriteNotPermitted {
                    retries = 0  // the first: asked again soon
                    lastWriteNotPermitted = true
                } else if !isNotShared {
                    setHealth(.notShared, into: &actions)
                }
            case .insufficientAuthentication, .insufficientAuthorization, .insufficientEncryptionKeySize, .insufficientEncryption:
                refused(.controlPoint, result, into: &actions)
            case .cccdImproperlyConfigured:  // the phone holds no subscription of ours
                // (Outside a session, `resubscribe` lets it go.)
                session.pendingResubscribe = .subscriptionLost
            case .unknownCommand, .invalidCommand, .invalidParameter, .actionFailed:  // an ANCS error is an answer
                answered(.dataSource, into: &actions)  // as a response would be
            default:
                break
            }
        case .transportFailure:
            break
        }
        // The write in the slot, or a late result of an earlier one (ignored).
        if !writeSlot.isFree && token.rawValue == nextToken {
            if case .abandoned = writeSlot, result != .success {
                reassembler.cancel(slotKey, responseMayFollow: false)
            }
            writeSlot = .free
            // The entry writing, unless the write was abandoned (its entry gone).
            if let index = session.entries.firstIndex(where: { $0.isWriting }) {
                if result != .success {
                    let entry = session.entries.removeOutOfLine(at: index)
                    reassembler.cancel(entry.key, responseMayFollow: entry.retried)
                    if result == .attError(.invalidParameter), let identifier = entry.request?.appIdentifierValue {
                        session.cache(identifier, [])
                    }
                    session.finish(entry, .failure(ConsumerError(result)), into: &actions)
                } else if session.entries[index].expectsResponse {
                    session.entries.withUnsafeMutableBufferPointer { $0[index].step = .awaitingResponse }
                } else {
                    session.finish(session.entries.removeOutOfLine(at: index), .success(.actionPerformed), into: &actions)
                }
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
    public mutating func fetchAttributes(_ attributes: [NotificationAttributeRequest], for uid: NotificationUID, at now: Timestamp) -> ConsumerRequest {
        submit(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes)), at: now)
    }

    /// Fetch attributes of an app (spec: Get App Attributes); answered from
    /// the session's cache when the app was already fetched.
    public mutating func fetchAppAttributes(_ appIdentifier: String, _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp) -> ConsumerRequest {
        submit(.getAppAttributes(GetAppAttributes(appIdentifier: appIdentifier, attributes: attributes)), at: now)
    }

    /// Fetch attributes of the app whose AppIdentifier has exactly these bytes
    /// (as a notification's AppIdentifier attribute carries them, valid UTF-8 or not).
    public mutating func fetchAppAttributes(appIdentifierBytes: [UInt8], _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp) -> ConsumerRequest {
        submit(.getAppAttributes(GetAppAttributes(appIdentifierBytes: appIdentifierBytes, attributes: attributes)), at: now)
    }

    /// Perform the positive or negative action of a notification whose flags announce it.
    public mutating func performAction(_ action: ActionID, on uid: NotificationUID, at now: Timestamp) -> ConsumerRequest {
        submit(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action)), at: now)
    }

    // The same four requests in their firmware form (see "Two forms of
    // each input" in the type's documentation).

    @_disfavoredOverload
    public mutating func fetchAttributes(_ attributes: [NotificationAttributeRequest], for uid: NotificationUID, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes)), at: now, into: &actions)
    }

    @_disfavoredOverload
    public mutating func fetchAppAttributes(_ appIdentifier: String, _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getAppAttributes(GetAppAttributes(appIdentifier: appIdentifier, attributes: attributes)), at: now, into: &actions)
    }

    @_disfavoredOverload
    public mutating func fetchAppAttributes(appIdentifierBytes: [UInt8], _ attributes: [AppAttributeID] = [.displayName], at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.getAppAttributes(GetAppAttributes(appIdentifierBytes: appIdentifierBytes, attributes: attributes)), at: now, into: &actions)
    }

    @_disfavoredOverload
    public mutating func performAction(_ action: ActionID, on uid: NotificationUID, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        submit(.performNotificationAction(PerformNotificationAction(notificationUID: uid, actionID: action)), at: now, into: &actions)
    }

    /// Ends a request with `cancelled`; its response, if it comes, is still consumed.
    @_disfavoredOverload
    public mutating func cancel(_ id: ConsumerRequestID, at now: Timestamp, into actions: inout [ConsumerAction]) {
        for index in session.entries.indices {
            if session.entries[index].waiter == id {
                let unwanted = session.entries.withUnsafeMutableBufferPointer {
                    $0[index].waiter = nil
                    return $0[index].isUnwanted
                }
                if unwanted { abandon(session.entries.removeOutOfLine(at: index)) }
                actions.complete(id, .failure(.cancelled))
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

    /// Fails every written request whose deadline has passed.
    @_disfavoredOverload
    public mutating func tick(at now: Timestamp, into actions: inout [ConsumerAction]) {
        var index = 0
        while index < session.entries.count {
            guard let deadline = session.entries[index].deadline, deadline <= now else {
                index &+= 1
                continue
            }
            if session.entries.withUnsafeBufferPointer({ $0[index].asksAgainOnTimeout }) {
                // The display's fetch (or app-name fetch), written and taken,
                // unanswered: asked once more (a phone answering just past the
                // timeout is still heard: the first answer to come serves it,
                // and an application's request that joined it). Asked of Data
                // Source alone, this is its check: unanswered again, it
                // subscribes again (below).
                session.entries.withUnsafeMutableBufferPointer { $0[index].retry() }
                index &+= 1
                continue
            }
            let entry = session.entries.removeOutOfLine(at: index)
            abandon(entry)
            // Asked twice and answered neither time: Data Source is not
            // delivering. Or more requests left unanswered than the pipeline
            // holds: a phone that takes the writes and answers none (its Data
            // Source subscription gone, while Notification Source may still
            // speak and keep the display's fetches, and so the probe, coming).
            // Subscribe again, as for an unanswered probe; the reassembler,
            // which keeps each request for its late response, is emptied with
            // the session instead of growing with every timeout.
            if entry.retried || reassembler.outstandingCount &- 2 > configuration.pipeliningDepth {
                session.pendingResubscribe = .probeUnanswered
            }
            // Its response is still consumed if it comes; whoever waited hears it timed out.
            session.finish(entry, .failure(.timedOut), into: &actions)
        }
        if case .abandoned = writeSlot, slotDeadline <= now {
            // Its result never came: stop waiting, so later requests proceed.
            writeSlot = .free
        }
        if watchesSilence, lastSourceEvent.adding(nanoseconds: configuration.silenceNanoseconds) <= now {
            session.pendingResubscribe = .notificationSourceSilent
        }
        pump(at: now, into: &actions)
        if let due = probeTime, due <= now {
            // Each step doubles the next retry's wait, four times at most (16 × the retry interval).
            if retries < 4 { retries += 1 }
            // A subscription missing (refused, or failed): subscribe again; else probe.
            if link == .active && dataSourceAvailable { writeProbe(at: now, into: &actions) } else { restartSession(into: &actions) }
        }
    }

    public mutating func tick(at now: Timestamp) -> [ConsumerAction] {
        var actions: [ConsumerAction] = []
        tick(at: now, into: &actions)
        return actions
    }

    // MARK: - Internals

    private mutating func submit(_ command: ControlPointCommand, at now: Timestamp, into actions: inout [ConsumerAction]) -> ConsumerRequestID {
        nextRequest &+= 1
        if nextRequest == 0 { nextRequest = 1 }  // 0 is no request (`Entry.waiterID`)
        let id = ConsumerRequestID(rawValue: nextRequest)
        func fail(_ error: ConsumerError) -> ConsumerRequestID {
            actions.complete(id, .failure(error))
            return id
        }
        guard isInSession else { return fail(.notConnected) }
        switch command {
        case .getNotificationAttributes, .getAppAttributes:
            guard dataSourceAvailable else { return fail(.dataSourceUnavailable) }
            if case .getAppAttributes(let request) = command, let answer = session.cachedAnswer(request) {
                actions.complete(id, .success(.appAttributes(answer)))
                return id
            }
        case .performNotificationAction(let request):
            let flag: EventFlags = request.actionID == .positive ? .positiveAction : request.actionID == .negative ? .negativeAction : []
            // Its flags tell whether the action exists: a UID this session never announced has none to tell.
            guard let index = session.modelIndex(request.notificationUID) else { return fail(.unknownNotification) }
            guard !flag.isEmpty, session.model.withUnsafeBufferPointer({ $0[index].notification.eventFlags }).contains(flag) else { return fail(.actionNotAvailable) }
        }
        // Every waiting caller counts, those of identical requests included.
        guard pendingRequestCount < configuration.maximumRequests else { return fail(.tooManyRequests) }
        let bytes: [UInt8]
        do {
            bytes = try command.encode()
        } catch {
            return fail(.encoding(error))
        }
        // An identical command in flight that only the display or the probe
        // waits on is joined (compared as bytes).
        if let index = session.entryIndex(bytes), session.entries.withUnsafeBufferPointer({ $0[index].waiter == nil }) {
            session.entries.withUnsafeMutableBufferPointer { $0[index].waiter = id }
            return id
        }
        session.enqueue(bytes, waiter: id)
        pump(at: now, into: &actions)
        return id
    }
    private mutating func submit(_ command: ControlPointCommand, at now: Timestamp) -> ConsumerRequest {
        var actions: [ConsumerAction] = []
        let id = submit(command, at: now, into: &actions)
        return ConsumerRequest(id: id, actions: actions)
    }

    /// Issues the next write if the link allows one (one in flight, pipelining
    /// depth): a queued request first, else the display's next fetch.
    /// Afterwards nothing more could start until some input changes the state
    /// (a write in flight, the pipeline full, or nothing left to ask), so an
    /// input that changed none of that need not pump.
    private mutating func pump(at now: Timestamp, into actions: inout [ConsumerAction]) {
        if let reason = session.pendingResubscribe {
            resubscribe(reason, into: &actions)
        } else if session.refreshDue {
            refresh(into: &actions)
        }
        guard link == .active, writeSlot.isFree else { return }
        var outstanding = 0
        // The probe's response never holds back a request. (With the slot
        // free no entry is writing, and only a command with a response
        // awaits one: `writeCompleted`.)
        for entry in session.entries {
            if case .awaitingResponse = entry.step, entry.key != session.probeEntryKey { outstanding &+= 1 }
        }
        // An app's name first (a notification waits on it), then in order.
        if let index = session.entries.firstIndex(where: { $0.isQueued && $0.asksAppName }) ?? session.entries.firstIndex(where: { $0.isQueued }) {
            if session.entries[index].expectsResponse && outstanding >= configuration.pipeliningDepth { return }
            write(at: index, now, into: &actions)
            return
        }
        // Not shared: the display's fetches wait (each would be refused); the probe asks.
        guard outstanding < configuration.pipeliningDepth, !isNotShared else { return }
        // Each turn either writes, or settles one wanted notification without a write.
        // (Only a session with Data Source wants any: `want`.)
        while session.wantedCount > 0, let next = session.nextWanted() {
            session.wantedCount &-= 1
            guard let identifies = session.displayFetch(next) else {
                session.settle(next)
                actions.appendOutOfLine(.emit(.hidden(session.model.withUnsafeBufferPointer { $0[next].notification.uid })))
                continue
            }
            // Its app asked first when apps are hidden: wanted again when the answer comes.
            session.move(next, to: .fetching(again: identifies))
            let uid = session.model.withUnsafeBufferPointer { $0[next].notification.uid }
            let bytes = identifies ? Self.appIdentifierCommand(uid.rawValue) : session.displayCommand(uid)
            guard let bytes else {
                session.settle(next)
                continue
            }
            // The application asked for the same, already written: it answers both.
            guard let index = session.enqueueForDisplay(bytes, fetch: true) else { continue }
            write(at: index, now, into: &actions)
            return
        }
    }

    mutating func write(at index: Int, _ now: Timestamp, into actions: inout [ConsumerAction]) {
        nextToken &+= 1
        let token = WriteToken(rawValue: nextToken)
        // (Changed and read in place, unchecked: every caller has just found
        // or made the entry at `index`; reading a field of an element copies
        // the whole element. One access: one uniqueness check.)
        let due = now.adding(nanoseconds: requestTimeout)
        let (bytes, key, retried) = session.entries.withUnsafeMutableBufferPointer {
            $0[index].write(until: due)
            return ($0[index].bytes, $0[index].key, $0[index].retried)
        }
        if let request = DataSourceRequest(encoded: bytes) {
            // Written again (`retried`): the first write's response is still
            // expected under the entry's key, and this one's behind it under
            // the same key, abandoned: the first to come answers, the other
            // is consumed (`cancel` of the key finds the first).
            reassembler.expect(request, id: key, abandoned: retried)
        }
        writeSlot = .busy
        slotKey = key
        slotDeadline = due
        actions.appendOutOfLine(.writeControlPoint(bytes, token))
    }

    /// The display wants the notification at `index` fetched (again).
    private mutating func want(_ index: Int) {
        guard fetchesForDisplay, dataSourceAvailable else { return }
        // (Read in place, unchecked: every caller has just found or made the
        // notification at `index`.)
        let (stage, uid) = session.model.withUnsafeBufferPointer { ($0[index].stage, $0[index].notification.uid) }
        switch stage {
        case .settled, .naming:
            session.want(index)
        case .fetching:
            // A fetch of it is queued or written: a written one may have read
            // the old content; a queued one reads the new. (A display fetch
            // is always Get Notification Attributes, of `displayUID`.)
            if let fetch = session.entries.firstIndex(where: { $0.displayUID == uid }), !session.entries[fetch].isQueued {
                session.move(index, to: .fetching(again: true))
            }
        case .wanted:
            break
        }
    }

    /// The entry just removed from `entries`, which nobody waits for any
    /// more (or whose waiter is told next), is given up.
    @inline(never)
    private mutating func abandon(_ entry: Entry) {
        if case .writing = entry.step {
            // The write (the slot's) still occupies the link until its result comes.
            writeSlot = .abandoned
        }
        // Its response may still come: written, or a retried one's first write's.
        if !entry.isQueued || entry.retried { reassembler.cancel(entry.key, responseMayFollow: true) }
    }

    // MARK: - App names kept by the host

    /// A name the host already knows for an app, as `.appAttributes` told
    /// it in an earlier session (a watch keeps them in flash, so that it
    /// does not ask the phone for every app's name again after each
    /// reconnection): cached as if fetched, so neither the display nor a
    /// request for exactly these attributes asks the phone for it. Told
    /// between sessions or after `.sessionStarted`; the session's end
    /// forgets it as it forgets what was fetched (the cache keeps
    /// `maximumCachedApps`, the oldest dropped). Emits nothing.
    public mutating func learn(_ app: AppAttributesResponse) {
        var told: [ConsumerAction] = []
        session.apply(.appAttributes(app), into: &told)
    }

    /// Subscribes again: off, then on, so that the phone sees a new
    /// subscription and announces what it holds; the session ends
    /// (`.resubscribing`) and a new one starts as at link up.
    mutating func restartSession(into actions: inout [ConsumerAction]) {
        unsubscribe(.resubscribing, into: &actions)
        if link == .waiting { startSubscribing(into: &actions) }
    }

    /// Unsubscribes what the session subscribed, and ends it.
    mutating func unsubscribe(_ reason: SessionEndReason, into actions: inout [ConsumerAction]) {
        if link.isSubscribed {
            actions.appendOutOfLine(.unsubscribe(.notificationSource))
            if dataSourceAvailable { actions.appendOutOfLine(.unsubscribe(.dataSource)) }
        }
        endSession(reason, into: &actions)
    }

    /// (Out of line: its four callers each had a copy, 42 bytes.)
    @inline(never)
    mutating func startSubscribing(into actions: inout [ConsumerAction]) {
        link = .subscribingDataSource
        probeSoon = true  // each session is probed soon: a phone that refuses or ignores it is told within seconds
        actions.appendOutOfLine(.subscribe(.dataSource))
    }

    /// Nothing survives a session (spec: "Sessions").
    mutating func endSession(_ reason: SessionEndReason, into actions: inout [ConsumerAction]) {
        let hadSession = isInSession
        for entry in session.entries { actions.complete(entry.waiter, .failure(.sessionEnded)) }
        session.entries.removeAll()
        session.model.removeAll()
        session.wantedCount = 0
        session.preExistingFetched = 0
        // A write still in flight (the slot busy: its entry was one of those ended)
        // on a link that stays up (Service Changed, stop) answers nothing
        // in the next session, but ATT allows one write at a time: the next
        // session's first write waits for its result, or for its deadline.
        // (linkDown and linkUp forget it.) The new reassembler has no
        // response to forget if it fails.
        if case .busy = writeSlot { writeSlot = .abandoned }
        reassembler.reset()
        session.appCache.removeAll()
        dataSourceAvailable = false
        session.probeKey = nil
        session.refreshDue = false
        refreshing = false
        if link.isSubscribed { link = .waiting }
        if hadSession { actions.appendOutOfLine(.emit(.sessionEnded(reason))) }
    }
}

// Array mutations the engine makes at many call sites, kept out of line: an
// inlined `append` of an action is firmware code at each of two dozen places
// (BENCHMARKS.md section 5, "Why the core is shaped for size"). A call per action or removed request costs
// nothing measurable next to the bytes of a response.
extension Array {
    @inline(never)
    mutating func appendOutOfLine(_ element: Element) {
        append(element)
    }

    @inline(never) @discardableResult
    mutating func removeOutOfLine(at index: Int) -> Element {
        remove(at: index)
    }
}

// An element at an index just found (by a search, `enqueue`, `nextWanted`,
// a loop's bound) is read or changed through the array's buffer: in place,
// with no bounds check, since the index is valid there. A checked subscript
// costs a comparison and a trap at each such place; a change through one
// access also checks uniqueness once for the fields it sets together.

// A request's end, told from five places: one copy of the event's making.
extension [ConsumerAction] {
    @inline(never)
    mutating func complete(_ id: ConsumerRequestID, _ result: ConsumerResult) {
        appendOutOfLine(.emit(.completed(id, result)))
    }

    @inline(never)
    mutating func complete(_ waiter: ConsumerRequestID?, _ result: ConsumerResult) {
        if let waiter { complete(waiter, result) }
    }
}
