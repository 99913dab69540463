// Consumer.Session — what a session of the consumer holds: the requests
// in flight (`entries`), the model of live notifications with their display
// stages, and the app cache; and what a Data Source response does to them.
// The engine (Consumer.swift) keeps the link, the write slot, the
// reassembler and the liveness state beside it. Nothing here reaches the
// reassembler, so the reassembler reports its events straight to the
// session while it is being fed (`take`): the two are disjoint by
// construction. The session's end empties its requests, model and caches
// (spec "Sessions"; `Consumer.endSession`).

extension Consumer {
    struct Session: Sendable {
        let configuration: ConsumerConfiguration
        /// The requests: the application's, the display's fetches and the
        /// probe, oldest first (the state diagram at the top of Consumer.swift).
        var entries: [Entry] = []
        var nextEntryKey: UInt32 = 0
        /// The session's model: every live notification, with its display state.
        /// Kept as an array in arrival order (oldest first) and searched by UID:
        /// at most `maximumNotifications` entries, and no Dictionary or hashing
        /// in a firmware image.
        var model: [Tracked] = []
        /// Notifications of the model whose display phase is `.wanted`.
        var wantedCount = 0
        /// PreExisting notifications whose fetch was written this session
        /// (`ConsumerConfiguration.maximumPreExisting`).
        var preExistingFetched = 0
        /// App attributes per AppIdentifier, for this session only, oldest
        /// first (at most `maximumCachedApps`). An app the NP answered 0xA2
        /// (Invalid parameter) for is here with no attributes (a phone that
        /// knows an app answers every attribute asked, at least one): its
        /// name is not asked for again in the session (spec: never ask the
        /// NP twice for the same app in a session), and one list holds both.
        /// AppIdentifiers are matched by their bytes everywhere (cache, coalescing,
        /// eager fetches), as the NP does: no Unicode normalization (which would
        /// also pull its tables into firmware), and two AppIdentifiers that are
        /// not valid UTF-8 are never confused through their lenient decoding.
        var appCache: [AppAttributesResponse] = []
        /// The display's fetch command as last written (`displayCommand`).
        var displayFetchBytes: [UInt8] = []
        /// The entry key of the liveness probe while it is queued or written.
        var probeKey: UInt32? {
            get { probeEntryKey == 0 ? nil : probeEntryKey }
            set { probeEntryKey = newValue ?? 0 }
        }
        /// `probeKey` as it is kept: the key itself, 0 for none (no entry's
        /// key is 0, `enqueue`), so that `finish` compares one word.
        var probeEntryKey: UInt32 = 0
        /// Subscribe again, for this reason, when the input's work is done (`pump`).
        var pendingResubscribe: ResubscribeReason?
        /// The probe written is an interval's: answered 0xA2, Notification
        /// Source is refreshed (`Consumer.refresh`).
        var probeRefreshes = false
        /// Refresh Notification Source when the input's work is done (`pump`).
        var refreshDue = false

        init(configuration: ConsumerConfiguration) {
            self.configuration = configuration
        }

        /// What the display's fetch of the notification at `index`, which it
        /// wanted, asks for: nil when it is not fetched (its category is
        /// hidden, it is Silent and those are not fetched, its app is hidden,
        /// or it is PreExisting and the backlog's cap is reached); true for
        /// its AppIdentifier alone (apps are hidden and its app is not known
        /// yet); false for `eagerAttributes`. The backlog's fetches are
        /// counted here, as they are written (the newest first, `nextWanted`).
        mutating func displayFetch(_ index: Int) -> Bool? {
            let flags = model[index].notification.eventFlags
            if configuration.hiddenCategories.contains(model[index].notification.categoryID)
                || (!configuration.fetchesSilent && flags.contains(.silent)) { return nil }
            var identifies = false
            if !configuration.hiddenApps.isEmpty {
                if let app = appIdentifier(index) {
                    if configuration.hiddenApps.contains(app) { return nil }
                } else {
                    identifies = true
                }
            }
            if flags.contains(.preExisting) {
                if preExistingFetched >= configuration.maximumPreExisting { return nil }
                if !identifies { preExistingFetched &+= 1 }
            }
            return identifies
        }

        /// Whether a fetch of the notification at `index` for the display
        /// is (or was) of its AppIdentifier alone: apps are hidden and its
        /// app is not known yet (`ConsumerConfiguration.hiddenApps`).
        func identifies(_ index: Int) -> Bool {
            !configuration.hiddenApps.isEmpty && appIdentifier(index) == nil
        }

        /// The display wants the notification at `index` fetched.
        @inline(never)
        mutating func want(_ index: Int) {
            move(index, to: .wanted)
            wantedCount &+= 1
        }

        /// The notification at `index` is settled (`move`).
        mutating func settle(_ index: Int) {
            move(index, to: .settled)
        }

        /// The notification at `index` moves to `stage` (every change of a
        /// stage is made here, out of line: one access to the model for it).
        /// Settled or wanted, unless the configuration keeps them
        /// (`keepsAttributes`), its values go, as the display needs them no
        /// more (shown, failed, passed over) or will fetch them anew
        /// (Modified while fetched or named). While apps are hidden, a
        /// wanted one keeps a single value: its AppIdentifier fetched alone,
        /// which the app filter reads (`displayFetch`; more values go, the
        /// AppIdentifier with them, asked alone again). Fetched or named, it
        /// keeps them.
        @inline(never)
        mutating func move(_ index: Int, to stage: DisplayStage) {
            model[index].stage = stage
            switch stage {
            case .settled: break
            case .wanted: if !configuration.hiddenApps.isEmpty && model[index].notification.attributes.count <= 1 { return }
            case .fetching, .naming: return
            }
            if !configuration.keepsAttributes { model[index].notification.attributes = [] }
        }

        // The notification at `index` read in place, unchecked (here, and
        // in `show`): every caller has its index from the model just now
        // (`modelIndex`, `nextWanted`, a walk of `model.indices` that adds
        // or removes nothing). Read through the array, each read checked
        // the bounds again: 40 bytes more of firmware.

        /// The AppIdentifier of the notification at `index`, when fetched
        /// (its value as held: comparing it copies nothing).
        @inline(never)
        func appIdentifier(_ index: Int) -> AttributeValue? {
            model.withUnsafeBufferPointer { $0[index].notification[.appIdentifier] }
        }

        /// The display stage of the notification at `index`.
        func stage(_ index: Int) -> DisplayStage {
            model.withUnsafeBufferPointer { $0[index].stage }
        }

        func modelIndex(_ uid: NotificationUID) -> Int? {
            model.firstIndex { $0.notification.uid == uid }
        }

        /// The index in the cache of the app whose AppIdentifier has
        /// exactly this value's bytes (one comparison for every caller: the
        /// model's values, and the bytes of a request or a response as
        /// `AttributeValue(bytes:)`, which copies nothing).
        func cacheIndex(_ appIdentifier: AttributeValue) -> Int? {
            appCache.firstIndex { AttributeValue(bytes: $0.appIdentifierBytes) == appIdentifier }
        }

        // Entry lookups made at several places, out of line (as `finish`):
        // smaller firmware (BENCHMARKS.md section 5, "Why the core is shaped for size").

        /// The entry with exactly these command bytes (coalescing), compared
        /// as values (`==` of the two arrays measured 16 bytes more).
        @inline(never)
        func entryIndex(_ bytes: [UInt8]) -> Int? {
            entries.firstIndex { AttributeValue(bytes: $0.bytes) == AttributeValue(bytes: bytes) }
        }

        @inline(never)
        func entryIndex(key: UInt32) -> Int? {
            entries.firstIndex { $0.key == key }
        }

        /// The answer to `request` from the session's cache, when the app's
        /// cached attributes are exactly those asked, in the order asked (the
        /// common case: the display's name, asked again); otherwise the phone
        /// is asked, so that the answer is the one the request describes.
        func cachedAnswer(_ request: GetAppAttributes) -> AppAttributesResponse? {
            guard let cached = cacheIndex(AttributeValue(bytes: request.appIdentifierBytes)) else { return nil }
            // (Read in place, as in `show`: each read of the list's element
            // copied the whole app; 8 bytes fewer of firmware each.)
            return appCache.withUnsafeBufferPointer { apps in
                guard apps[cached].attributes.count == request.attributes.count else { return nil }
                for (index, attribute) in request.attributes.enumerated() where apps[cached].attributes[index].id != attribute { return nil }
                return apps[cached]
            }
        }

        /// The display's fetch of `uid`: `eagerAttributes`, encoded once and
        /// then written over in place (its UID) once the last one's entry
        /// and response are done with it, so that a notification shown
        /// allocates nothing; nil if the attributes cannot be encoded.
        mutating func displayCommand(_ uid: NotificationUID) -> [UInt8]? {
            if displayFetchBytes.isEmpty {
                guard let bytes = try? ControlPointCommand.getNotificationAttributes(
                    GetNotificationAttributes(notificationUID: uid, attributes: configuration.eagerAttributes)).encode() else { return nil }
                displayFetchBytes = bytes
            }
            // (A copy first only while an earlier fetch still holds these bytes.)
            displayFetchBytes.withUnsafeMutableBufferPointer { storeUInt32LE(uid.rawValue, at: $0.baseAddress! + 1) }
            return displayFetchBytes
        }

        /// Adds an entry for `bytes`, last, and returns its index. (Every
        /// entry is made here, out of line: one copy of its making in
        /// firmware, 90 bytes fewer.) The bytes are taken owned, here and in
        /// `enqueueForDisplay`: each caller's command is its entry's, not
        /// retained once more (28 bytes fewer).
        @inline(never) @discardableResult
        mutating func enqueue(_ bytes: __owned [UInt8], waiter: ConsumerRequestID?, flags: Entry.Flags = []) -> Int {
            nextEntryKey &+= 1
            if nextEntryKey == 0 { nextEntryKey = 1 }  // 0 is no entry (`probeEntryKey`), even after the key wraps
            entries.append(Entry(
                key: nextEntryKey, bytes: bytes, waiterID: waiter?.rawValue ?? 0, flags: flags))
            return entries.count &- 1
        }

        /// A command of the display's: a fetch of a notification's
        /// attributes (`fetch`), or an app's name. An identical entry
        /// already queued or written (the application's, or the display's)
        /// is joined (nil); else one is added and its index returned. (Out
        /// of line: the display's two commands share it, 22 bytes fewer.)
        @inline(never) @discardableResult
        mutating func enqueueForDisplay(_ bytes: __owned [UInt8], fetch: Bool) -> Int? {
            let flag: Entry.Flags = fetch ? .displayFetch : .asksAppName
            if let index = entryIndex(bytes) {
                // The display waits on it too (one access to the array).
                entries[index].flags.insert(flag)
                return nil
            }
            return enqueue(bytes, waiter: nil, flags: flag)
        }

        // MARK: - Responses

        /// A reassembler event: a response (applied, and its entry ended), a
        /// failed one, or one nobody asked for. Called from the reassembler's
        /// `feed`, which cannot be reached from here: the two are separate
        /// fields of the engine.
        mutating func take(_ event: DataSourceReassembler.Event, into actions: inout [ConsumerAction]) {
            switch event {
            case .response(let key, let response):
                answered(key, response, into: &actions)
            case .failed(let key, let error):
                guard let index = entryIndex(key: key) else { return }
                finish(entries.removeOutOfLine(at: index), .failure(.invalidResponse(error)), into: &actions)
            case .unsolicited(let error):
                actions.appendOutOfLine(.emit(.protocolError(error)))
            }
        }

        /// The response to the entry `key` came: applied, and the entry
        /// ended. (Out of line: the reassembler reports a response from
        /// two places, one per kind.)
        @inline(never)
        mutating func answered(_ key: UInt32, _ response: DataSourceResponse, into actions: inout [ConsumerAction]) {
            guard let index = entryIndex(key: key) else { return }
            let entry = entries.removeOutOfLine(at: index)
            apply(response, into: &actions)
            let result: ConsumerResponse
            switch response {
            case .notificationAttributes(let value): result = .notificationAttributes(value)
            case .appAttributes(let value): result = .appAttributes(value)
            }
            finish(entry, .success(result), into: &actions)
        }

        /// A response applied: to the model (a notification's attributes)
        /// or to the app cache, and told. (Left to the compiler: out of
        /// line it measured 20 bytes more of the whole consumer and of the
        /// NimBLE firmware, 16 fewer of the C API's, which also reaches it
        /// through `learn`.)
        mutating func apply(_ response: DataSourceResponse, into actions: inout [ConsumerAction]) {
            switch response {
            case .notificationAttributes(let value):
                // Told for a notification of the model only: not for the probe's
                // answer about one never announced (or a request's about one the
                // model dropped), which the request's `.completed` carries.
                if let index = modelIndex(value.notificationUID) {
                    // Unless the configuration keeps them, kept only while the
                    // display needs them: fetched and not yet shown (not for a
                    // notification shown, or one the display has not fetched yet).
                    if configuration.keepsAttributes || stage(index).isShowing { model[index].notification.attributes.merge(value.attributes) }
                    actions.appendOutOfLine(.emit(.attributes(value)))
                }
            case .appAttributes(let value):
                cache(AttributeValue(bytes: value.appIdentifierBytes), value.attributes)
                actions.appendOutOfLine(.emit(.appAttributes(value)))
            }
        }

        /// Ends an entry: its waiter hears the result, and the display goes on
        /// with the notification or app it was fetching. Out of line:
        /// inlined into each of its callers it grows the firmware
        /// (BENCHMARKS.md section 5, "Why the core is shaped for size").
        /// The entry is taken owned: every caller has removed it from
        /// `entries`, so it is not copied.
        @inline(never)
        mutating func finish(_ entry: __owned Entry, _ result: ConsumerResult, into actions: inout [ConsumerAction]) {
            if entry.key == probeEntryKey {
                // (An identical request of the application's, or the display's
                // fetch, may have joined the probe: they end with it, below.)
                probeEntryKey = 0
                probeEnded(result)
            }
            actions.complete(entry.waiter, result)
            if let uid = entry.displayUID { displayFetchEnded(uid, result, into: &actions) }
            if entry.asksAppName {
                // Its bytes are the display's command (`displayFetchEnded`;
                // an entry is joined only by identical bytes): the CommandID,
                // the AppIdentifier, its NUL and Display Name's AttributeID
                // (read so, not decoded as a request: 24 bytes fewer).
                appNameEnded(AttributeValue(in: entry.bytes, start: 1, count: entry.bytes.count &- 3), into: &actions)
            }
        }

        mutating func displayFetchEnded(_ uid: NotificationUID, _ result: ConsumerResult, into actions: inout [ConsumerAction]) {
            guard let index = modelIndex(uid), case .fetching(let again) = stage(index) else { return }
            // A failed fetch is told, unless a Modified event came while it
            // was written (fetched again, as after a fetch that succeeded); the
            // fetch of a notification's app alone is wanted again only when
            // it succeeded (`identifies`), so that it never fails in a loop.
            if case .failure(let error) = result, !again || identifies(index) {
                settle(index)
                // Refused as not shared: the health says so (and sharing again
                // starts a new session, which announces it anew). (The other
                // failures never told reach no display fetch here: a
                // session's end and a cancel end no entry through `finish`,
                // and a removed notification has left the model, `modelIndex`
                // above, before its fetch is dropped.)
                if case .att(.writeNotPermitted) = error { return }
                actions.appendOutOfLine(.emit(.displayFailed(uid, error)))
                return
            }
            if again {
                // Modified while it was written: fetch the new content; or its
                // app is known now: fetch it unless the app is hidden (`displayFetch`).
                return want(index)
            }
            guard configuration.eagerAppNames,
                  let identifier = appIdentifier(index), !identifier.isEmpty,
                  cacheIndex(identifier) == nil
            else { return show(at: index, into: &actions) }
            move(index, to: .naming)
            let command = ControlPointCommand.getAppAttributes(GetAppAttributes(appIdentifierBytes: identifier.bytes, attributes: [.displayName]))
            guard let bytes = try? command.encode() else { return show(at: index, into: &actions) }
            // Asked once: a fetch of this app's name already queued or
            // written (the display's, or an application's identical
            // request) serves every notification of it. Else written ahead
            // of the application's queued requests (`pump`): a notification
            // is waiting on it.
            enqueueForDisplay(bytes, fetch: false)
        }

        /// An app-name fetch ended (answered, refused or failed): the
        /// notifications waiting on it are shown, with the name if it came.
        mutating func appNameEnded(_ identifier: AttributeValue, into actions: inout [ConsumerAction]) {
            for index in model.indices where stage(index).isNaming {
                if appIdentifier(index) == identifier { show(at: index, into: &actions) }
            }
        }

        mutating func show(at index: Int, into actions: inout [ConsumerAction]) {
            var appName: AttributeValue?
            if let identifier = appIdentifier(index), let cached = cacheIndex(identifier) { appName = appCache.withUnsafeBufferPointer { $0[cached].attributes.value(for: .displayName) } }
            // Told before it is settled, which drops what the model does not
            // keep: the event carries it. (Read in place, as `appIdentifier`.)
            let (notification, shown) = model.withUnsafeBufferPointer { ($0[index].notification, $0[index].shown) }
            actions.appendOutOfLine(.emit(shown ? .updated(notification, appName: appName) : .ready(notification, appName: appName)))
            model[index].shown = true
            settle(index)
        }

        /// The probe ended. An ANCS error (0xA2) is the answer of a working
        /// phone, and a refusal was judged with the write's result; attributes
        /// mean a notification Notification Source never announced (or, rarely,
        /// one announced while the probe was out: subscribing again costs a
        /// re-announcement then), and no answer means the phone no longer
        /// listens: subscribe again (in `pump`).
        mutating func probeEnded(_ result: ConsumerResult) {
            switch result {
            case .success:
                // The phone holds a notification Notification Source never announced.
                pendingResubscribe = .missedNotification
            case .failure(.invalidParameter):
                // As a working phone answers: now ask what it holds (`Consumer.refresh`).
                refreshDue = probeRefreshes
            case .failure(.timedOut):
                pendingResubscribe = .probeUnanswered
            default:
                break  // (a write that failed never reached the phone: the link is going)
            }
        }

        /// Caches an app's attributes, merged into what the cache holds of
        /// it, as its youngest app (the oldest goes when the cache is full).
        /// With none, the app is one the NP did not know (0xA2), and its
        /// name is not asked again; attributes that come for it later (an
        /// application's request) are kept as any app's.
        @inline(never)
        mutating func cache(_ identifier: AttributeValue, _ attributes: [AppAttribute]) {
            var merged = cacheIndex(identifier).map { appCache.remove(at: $0) } ?? AppAttributesResponse(appIdentifierBytes: identifier.bytes, attributes: [])
            if appCache.count >= configuration.maximumCachedApps { appCache.remove(at: 0) }  // not removeFirst(): one removal code for the cache in firmware
            merged.attributes.merge(attributes)
            appCache.append(merged)
        }

        // MARK: - The model

        /// Adds a notification as the youngest (last) and returns its index.
        /// (Taken owned: it is the model's, not copied; 20 bytes fewer.)
        mutating func insert(_ notification: __owned ConsumerNotification, into actions: inout [ConsumerAction]) -> Int {
            // Added again: it is the youngest now, and is shown anew.
            let known = modelIndex(notification.uid)
            if known != nil || model.count >= configuration.maximumNotifications {
                let dropped = forget(at: known ?? 0)
                // Oldest first: a bounded model under an NP that never removes.
                // The application hears it as removed (from the model; the NP
                // still has it), so a display never shows what the model lost.
                if known == nil { actions.appendOutOfLine(.emit(.removed(dropped.notification))) }
            }
            model.append(Tracked(notification: notification))
            return model.count &- 1
        }

        /// Removes a notification from the model, keeping `wantedCount` right.
        @inline(never)
        mutating func forget(at index: Int) -> Tracked {
            let tracked = model.remove(at: index)
            if tracked.stage.isWanted { wantedCount &-= 1 }
            return tracked
        }

        /// The next notification whose attributes the display wants: live ones
        /// before PreExisting ones (a new call is not kept behind the backlog
        /// of a phone that held many), live ones in arrival order, the
        /// backlog newest first (what a watch shows first).
        func nextWanted() -> Int? {
            var preExisting: Int?
            for index in model.indices where model[index].stage.isWanted {
                if !model[index].notification.isPreExisting { return index }
                preExisting = index
            }
            return preExisting
        }

        /// A removed notification names nothing on the NP any more (it would
        /// answer 0xA2): its requests not yet written (application fetches and
        /// actions) are dropped, and whoever waits on them is told. (Not out
        /// of line: it has one caller.)
        mutating func dropUnwrittenRequests(for uid: NotificationUID, into actions: inout [ConsumerAction]) {
            var index = 0
            while index < entries.count {
                // (Not a retried fetch: its first write's response may still come.)
                if entries[index].isQueued, !entries[index].retried, entries[index].names(uid) {
                    finish(entries.removeOutOfLine(at: index), .failure(.notificationRemoved), into: &actions)
                } else {
                    index &+= 1
                }
            }
        }
    }
}
