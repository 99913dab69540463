import ANCS
import ANCSRuntime
import ANCSSimulation

/// One run of the demo scenario in a `Simulation`: a simulated iPhone (a
/// `ProviderServer` on a `SimulatedServer`) and an accessory (a
/// `ConsumerClient` on a `SimulatedLink`), both the runtime's real actors.
/// The phone plays the scenario's timeline; the accessory shows each
/// notification and presses the actions the scenario asks for. Used by
/// `ancs demo`, `ancs bench`, the end-to-end tests and the soak test.
///
/// Fetch policies:
/// - eager: the client's display policy fetches every notification's
///   attributes and app name as it arrives, and the accessory shows it when
///   it is ready (what a watch face does);
/// - lazy (the spec's recommendation): the accessory shows what the
///   Notification Source event says at once, and fetches a notification's
///   attributes only when the person opens it, here: before pressing one of
///   its actions.
public final class DemoRun: @unchecked Sendable {
    public enum FetchPolicy: String, Hashable, Sendable, CaseIterable { case eager, lazy }

    /// Something a person at the accessory would notice.
    public enum Line: Sendable {
        case consumer(ConsumerEvent)
        /// Eager: all of it is there.
        case ready(DisplayedNotification)
        /// A notification already shown changed (Modified, fetched again).
        case updated(DisplayedNotification)
        /// Lazy: shown from its Notification Source event alone.
        case announced(ConsumerNotification)
        /// Lazy: opened, its attributes fetched.
        case opened(DisplayedNotification)
        case removed(ConsumerNotification, title: String)
        case userAction(title: String, ActionID, label: String?)
        /// How a pressed action ended; `request` numbers the presses of the run from 1.
        case actionResult(title: String, uid: NotificationUID, ActionID, request: Int, ConsumerResult)
        case failed(NotificationUID, ConsumerError)
        /// What is playing changed (a track, play or pause); `elapsed` in
        /// seconds; `cut`: values the phone cut, not yet read in full.
        case nowPlaying(NowPlaying, elapsed: Double?, cut: Set<MediaAttribute>)
        /// The person pressed a button of the now-playing line.
        case mediaPressed(RemoteCommandID)
        /// How it ended: nil when the phone performed it.
        case mediaResult(RemoteCommandID, AMSClientError?)
    }

    /// Air time of the notifications made ready, from Added to ready to show.
    public struct Readiness: Hashable, Sendable {
        public var count = 0
        public var connectionEvents = 0
        public var bytesOnAir = 0
        /// Data Source bytes of the responses that made them ready.
        public var responseBytes = 0
        /// The same for the fewest round trips possible (the attributes, and
        /// the app's name when the app is new in the session).
        public var lowerBoundEvents = 0
        public var lowerBoundBytes = 0
        /// Added → ready latencies in 10 ms buckets (bounded memory for long runs).
        public var latencyBuckets: [Int] = Array(repeating: 0, count: 6001)
        public var maximumLatency: Duration = .zero

        /// The median Added → ready latency, to 10 ms.
        public var medianLatency: Duration {
            var seen = 0
            for (bucket, count) in latencyBuckets.enumerated() {
                seen += count
                if seen * 2 >= self.count && count > 0 { return .milliseconds(bucket * 10) }
            }
            return .zero
        }
    }

    public struct Summary: Hashable, Sendable {
        public var policy = FetchPolicy.eager
        public var depth = 1
        public var notifications = 0
        public var shown = 0
        /// Notifications the configuration's filters left unfetched (`.hidden`).
        public var hidden = 0
        public var requests = 0
        public var failedRequests = 0
        public var appNameFetches = 0
        /// Control Point commands the phone answered with an error.
        public var rejectedCommands = 0
        public var repeatedAppNameFetches = 0
        /// Notifications neither shown, removed nor failed when the run ended.
        public var unsettled = 0
        /// Titles of notifications the phone removed before the accessory
        /// could show them (a slow link: not yet announced, or not yet fetched).
        public var removedBeforeShown: [String] = []
        public var counters = SimulatedLink.Counters()
        public var simulated: Duration = .zero
        public var readiness = Readiness()

        public var line: String {
            var text = "demo: \(notifications) notifications, \(shown) shown, "
                + (hidden > 0 ? "\(hidden) hidden, " : "") + "\(requests) requests (\(failedRequests) failed), "
                + "\(counters.connectionEvents) connection events, \(counters.bytesOnAir) bytes on air, \(seconds(simulated)) s simulated"
            text += "; \(policy.rawValue), depth \(depth)"
            if readiness.count > 0 {
                text += ", Added → ready median \(milliseconds(readiness.medianLatency)) ms, max \(milliseconds(readiness.maximumLatency)) ms"
            }
            if !removedBeforeShown.isEmpty {
                text += "; \(removedBeforeShown.count) removed on the phone before it could be shown ("
                    + removedBeforeShown.map { "“\($0)”" }.joined(separator: ", ") + ")"
            }
            if unsettled > 0 { text += "; \(unsettled) never settled" }
            return text
        }

        func seconds(_ duration: Duration) -> Double {
            let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            return (value * 10).rounded() / 10
        }

        func milliseconds(_ duration: Duration) -> Int {
            Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
        }
    }

    public let scenario: DemoScenario
    public let repetitions: Int
    public let policy: FetchPolicy
    public let simulation = Simulation()
    public let server = SimulatedServer()
    public let link: SimulatedLink
    public let provider: ProviderServer
    public let consumer: ConsumerClient
    /// The phone's AMS and CTS, and the accessory's client of them.
    public let mediaLink: MediaLoopbackLink
    public let media: MediaClient
    /// Called for each line, on the simulation's thread.
    public var onLine: ((Timestamp, Line) -> Void)?
    public private(set) var summary = Summary()
    /// Keep readiness figures (air time per notification).
    public var recordsReadiness = true
    /// The phone has played every round.
    public private(set) var scriptFinished = false

    // The accessory's bookkeeping (touched only on the simulation's thread).
    var uidsByKey: [String: NotificationUID] = [:]
    /// Added and not yet settled (shown, removed or failed): where the air counters stood then.
    var waiting: [NotificationUID: (events: Int, bytes: Int, at: Timestamp)] = [:]
    var titles: [NotificationUID: String] = [:]
    var models: [NotificationUID: ConsumerNotification] = [:]
    var appsShown: Set<String> = []
    /// Apps whose name the NP sent in this session.
    var appNamesFetched: Set<String> = []
    var actionsInFlight = 0
    var started = false
    /// Presses waiting for their notification to be shown (a person acts on what they see).
    var seenWaiters: [NotificationUID: [CheckedContinuation<Bool, Never>]] = [:]
    var seen: Set<NotificationUID> = []
    /// Hidden by the configuration's filters, in this session: never to be shown.
    var hidden: Set<NotificationUID> = []
    /// Notifications the phone's scenario removed while the accessory had
    /// not shown them, by UID, with their title: dropped again if they are
    /// shown after all (a response already on its way). Memory: only those.
    var removedUnshown: [NotificationUID: String] = [:]
    /// Actions pressed so far (numbers the results).
    var presses = 0
    /// The consumer has heard that its session ended.
    var sessionOver = false
    /// Media buttons pressed and not yet answered.
    var mediaInFlight = 0
    /// What the now-playing line last showed, and whether a newer one is due.
    var nowPlayingChanges = NowPlayingChanges()
    var nowPlayingDue = false

    public init(scenario: DemoScenario = .standard, link configuration: SimulatedLink.Configuration = .init(),
                consumer consumerConfiguration: ConsumerConfiguration? = nil, policy: FetchPolicy = .eager,
                repetitions: Int = 1) {
        self.scenario = scenario
        self.repetitions = max(1, repetitions)
        self.policy = policy
        link = SimulatedLink(in: simulation, to: server, configuration: configuration)
        provider = ProviderServer(transport: server)
        // A request waits its turn behind the others (a burst of notifications
        // on a slow link): allow a hundred connection events.
        var consumerConfiguration = consumerConfiguration ?? ConsumerConfiguration()
        consumerConfiguration.requestTimeout = max(consumerConfiguration.requestTimeout, configuration.connectionInterval * 100)
        consumerConfiguration.display = policy == .eager ? DisplayPolicy(attributes: DisplayPolicy.standardAttributes) : nil
        consumer = ConsumerClient(
            transport: link.client, configuration: consumerConfiguration,
            clock: simulation.clock, executor: simulation.executor)
        // AMS and CTS on the same phone: the operations take a connection
        // event each, as on the ANCS link.
        mediaLink = MediaLoopbackLink(player: scenario.player, time: scenario.phoneTime,
                                      zone: LocalTimeInformation(timeZone: 4, dstOffset: 0),
                                      clock: simulation.clock, delay: configuration.connectionInterval)
        // Its operations wait their turn too: the same allowance as the consumer's.
        media = MediaClient(transport: mediaLink,
                            ams: AMSClientConfiguration(requestTimeout: max(.seconds(10), configuration.connectionInterval * 100)),
                            clock: simulation.clock, executor: simulation.executor)
        summary.policy = policy
        summary.depth = consumerConfiguration.pipeliningDepth
    }

    /// Every notification the accessory heard of has settled, no action is
    /// in flight and nothing is left on the link.
    public var isSettled: Bool { waiting.isEmpty && actionsInFlight == 0 && mediaInFlight == 0 && !nowPlayingDue && link.isIdle }

    /// The scenario has been played and everything it caused has settled.
    public var isFinished: Bool { scriptFinished && isSettled }

    /// Starts the phone, the accessory and the scenario in the simulation.
    public func start() {
        guard !started else { return }
        started = true
        let provider = self.provider, consumer = self.consumer
        simulation.spawn { try await provider.run() }
        simulation.spawn { try await consumer.run() }
        simulation.spawn { [self] in
            for await event in consumer.events { await self.accessory(event) }
        }
        simulation.spawn { [self] in
            // The phone's own log of what it did; read, so it is not buffered forever.
            for await event in provider.events { self.phoneEvent(event) }
        }
        simulation.spawn { [self] in try await self.phone() }
        let media = self.media
        simulation.spawn { try await media.run() }
        simulation.spawn { [self] in
            for await output in media.events { self.accessory(output) }
        }
        simulation.spawn { [self] in await self.music() }
    }

    /// Runs the simulation up to virtual time `time`.
    public func run(until time: Timestamp) {
        start()
        simulation.run(until: time)
        summary.counters = link.counters
        summary.requests = link.counters.writes
    }

    /// Runs until the scenario has been played and everything has settled
    /// (or nothing can happen any more); then ends the session.
    public func runToEnd() {
        start()
        while !isFinished {
            let before = simulation.now
            simulation.run(while: { !self.isFinished }, limit: .seconds(60))
            // Nothing left that could settle it: stop rather than wait forever.
            if simulation.now == before && !simulation.executor.hasWork && !isFinished { break }
        }
        finish()
    }

    /// Ends the run: counts what never settled, records the figures.
    public func finish() {
        summary.unsettled = waiting.count
        summary.removedBeforeShown = removedUnshown.sorted { $0.key < $1.key }.map(\.value)
        summary.counters = link.counters
        summary.requests = link.counters.writes
        summary.simulated = simulation.now.sinceOrigin
    }

    /// The person walks away with the accessory: the link drops and the
    /// consumer's session ends (`sessionEnded`, link down), as any session
    /// does. Call after `finish()`, which counts what never settled.
    public func endSession() {
        guard started, link.isConnected else { return }
        mediaLink.close()
        link.disconnect()
        simulation.run(while: { !self.sessionOver }, limit: .seconds(5))
    }

    // MARK: - The phone

    func phone() async throws {
        for app in scenario.apps { await provider.registerApp(identifier: app.identifier, displayName: app.displayName) }
        for (key, notification) in scenario.preExisting {
            uidsByKey[key] = try? await provider.add(notification.providerNotification)
            summary.notifications += 1
        }
        link.connect()
        mediaLink.connect(mtu: link.configuration.mtu)
        let clock = simulation.clock
        await withDiscardingTaskGroup { actions in
            for round in 0..<repetitions {
                let offset = scenario.duration * round
                let suffix = round == 0 ? "" : "#\(round)"
                for (time, step) in scenario.timeline {
                    try? await clock.sleep(until: ManualClock.Instant(offset: offset + time))
                    await perform(step, suffix: suffix, actions: &actions)
                }
                try? await clock.sleep(until: ManualClock.Instant(offset: offset + scenario.duration))
                if round + 1 < repetitions {
                    // Between rounds the person clears the phone's Notification Center.
                    for uid in await provider.notificationCenter.uids { try? await provider.remove(uid) }
                    uidsByKey.removeAll()
                }
            }
        }
        scriptFinished = true
    }

    func perform(_ step: DemoScenario.Step, suffix: String, actions: inout DiscardingTaskGroup) async {
        switch step {
        case .add(let key, let notification):
            uidsByKey[key + suffix] = try? await provider.add(notification.providerNotification)
            summary.notifications += 1
        case .modify(let key, let message):
            guard let uid = uidsByKey[key + suffix], var notification = await provider.notificationCenter[uid] else { return }
            notification.message = message
            try? await provider.modify(uid, to: notification)
        case .remove(let key):
            if let uid = uidsByKey[key + suffix] {
                let title = await provider.notificationCenter[uid]?.title ?? key
                try? await provider.remove(uid)
                if !seen.contains(uid) && !hidden.contains(uid) { removedUnshown[uid] = title }
            }
        case .act(let key, let action):
            guard let uid = uidsByKey[key + suffix] else { return }
            if action == .negative, let notification = await provider.notificationCenter[uid], notification.categoryID == .incomingCall {
                summary.notifications += 1  // the missed call it becomes
            }
            actionsInFlight += 1
            actions.addTask { [self] in
                await self.press(action, on: uid)
            }
        }
    }

    /// The music: the phone's player and the person's presses on the accessory (once).
    func music() async {
        let clock = simulation.clock
        await withDiscardingTaskGroup { presses in
            for (time, step) in scenario.mediaTimeline {
                try? await clock.sleep(until: ManualClock.Instant(offset: time))
                switch step {
                case .onPhone(let command):
                    mediaLink.performOnPhone(command)
                case .press(let command):
                    mediaInFlight += 1
                    emit(.mediaPressed(command))
                    presses.addTask { [self] in
                        let result = await media.perform(command)
                        self.mediaAnswered(command, result)
                    }
                }
            }
        }
    }

    func mediaAnswered(_ command: RemoteCommandID, _ result: AMSClientError?) {
        mediaInFlight -= 1
        if result != nil { summary.failedRequests += 1 }
        emit(.mediaResult(command, result))
    }

    /// The accessory's now-playing line: shown once the values of a change
    /// have arrived (they come one attribute per notification), when the
    /// track, the artist, the state, or a cut in them changed. The wait runs
    /// apart from the event loop, which keeps reading.
    func accessory(_ output: MediaClientOutput) {
        guard case .ams(let event) = output, nowPlayingChanges.note(event), !nowPlayingDue else { return }
        nowPlayingDue = true
        simulation.spawn { [self] in await self.showNowPlaying() }
    }

    func showNowPlaying() async {
        try? await simulation.clock.sleep(for: .milliseconds(100))
        nowPlayingDue = false
        let playing = await media.nowPlaying
        guard let cut = nowPlayingChanges.changed(playing) else { return }
        emit(.nowPlaying(playing, elapsed: await media.elapsed, cut: cut))
    }

    func phoneEvent(_ event: ProviderEvent) {
        if case .commandRejected = event { summary.rejectedCommands += 1 }
    }

    // MARK: - The accessory

    /// The person presses an action's button (lazy: opening the notification first).
    func press(_ action: ActionID, on uid: NotificationUID) async {
        defer { actionsInFlight -= 1 }
        guard await shown(uid) else { return }  // gone before the person saw it
        if policy == .lazy, titles[uid] == nil {
            if let shown = await open(uid) { emit(.opened(shown)) } else { return }
        }
        let notification = models[uid]
        let title = titles[uid] ?? "uid \(uid)"
        let label = action == .positive ? notification?[.positiveActionLabel]?.string : notification?[.negativeActionLabel]?.string
        emit(.userAction(title: title, action, label: label))
        presses += 1
        let request = presses
        do {
            try await consumer.performAction(action, on: uid)
            emit(.actionResult(title: title, uid: uid, action, request: request, .success(.actionPerformed)))
        } catch {
            summary.failedRequests += 1
            emit(.actionResult(title: title, uid: uid, action, request: request, .failure(error)))
        }
    }

    /// Lazy: fetches a notification's attributes and its app's name.
    func open(_ uid: NotificationUID) async -> DisplayedNotification? {
        do {
            let response = try await consumer.fetchAttributes(DisplayPolicy.standardAttributes, for: uid)
            if let title = response[.title]?.string { titles[uid] = title }
            var appName: String?
            if let identifier = response[.appIdentifier]?.string {
                appName = try? await consumer.fetchAppAttributes(identifier)[.displayName]?.string
            }
            guard let model = await consumer.notification(uid) else { return nil }
            models[uid] = model
            return DisplayedNotification(notification: model, appName: appName)
        } catch {
            summary.failedRequests += 1
            emit(.failed(uid, error))
            return nil
        }
    }

    /// Waits until the notification has been shown; false if it went away first.
    func shown(_ uid: NotificationUID) async -> Bool {
        if seen.contains(uid) { return true }
        if hidden.contains(uid) { return false }
        return await withCheckedContinuation { seenWaiters[uid, default: []].append($0) }
    }

    func markSeen(_ uid: NotificationUID, _ value: Bool = true) {
        if value { seen.insert(uid) } else { seen.remove(uid) }
        for waiter in seenWaiters.removeValue(forKey: uid) ?? [] { waiter.resume(returning: value) }
    }

    func accessory(_ event: ConsumerClientEvent) async {
        switch event {
        case .ready(let shown):
            models[shown.uid] = shown.notification
            if let title = shown.title { titles[shown.uid] = title }
            summary.shown += 1
            removedUnshown.removeValue(forKey: shown.uid)
            record(shown)
            emit(.ready(shown))
            markSeen(shown.uid)
        case .updated(let shown):
            models[shown.uid] = shown.notification
            if let title = shown.title { titles[shown.uid] = title }
            emit(.updated(shown))
        case .displayFailed(let uid, let error):
            markSeen(uid, false)
            waiting.removeValue(forKey: uid)
            summary.failedRequests += 1
            emit(.failed(uid, error))
        default:
            let event = event.consumerEvent
            switch event {
            case .added(let notification):
                models[notification.uid] = notification
                if policy == .eager {
                    waiting[notification.uid] = (link.counters.connectionEvents, link.counters.bytesOnAir, simulation.now)
                } else {
                    summary.shown += 1
                    removedUnshown.removeValue(forKey: notification.uid)
                    emit(.announced(notification))
                    markSeen(notification.uid)
                }
            case .modified(let notification):
                models[notification.uid] = notification
            case .removed(let notification):
                markSeen(notification.uid, false)
                waiting.removeValue(forKey: notification.uid)
                models.removeValue(forKey: notification.uid)
                emit(.removed(notification, title: titles.removeValue(forKey: notification.uid) ?? "uid \(notification.uid)"))
            case .hidden(let uid):
                // Not fetched, by the configuration's choice: settled, never shown
                // (a press on it is dropped, as for one gone before it was seen).
                if waiting.removeValue(forKey: uid) != nil { summary.hidden += 1 }
                hidden.insert(uid)
                markSeen(uid, false)
            case .sessionStarted:
                sessionOver = false
            case .appAttributes(let response):
                // A response from the NP, not the session's cache.
                summary.appNameFetches += 1
                if !appNamesFetched.insert(response.appIdentifier).inserted { summary.repeatedAppNameFetches += 1 }
            case .sessionEnded:
                sessionOver = true
                // UIDs mean nothing after a session; a press waiting for one is dropped.
                for uid in seenWaiters.keys.sorted(by: { $0.rawValue < $1.rawValue }) { markSeen(uid, false) }
                seen.removeAll()
                hidden.removeAll()
                appNamesFetched.removeAll()
                waiting.removeAll()
                models.removeAll()
                titles.removeAll()
            default:
                break
            }
            emit(.consumer(event))
        }
    }

    /// Air time from Added to ready, against the fewest round trips possible.
    func record(_ shown: DisplayedNotification) {
        guard let start = waiting.removeValue(forKey: shown.uid), recordsReadiness, let identifier = shown.appIdentifier else { return }
        var responseBytes = 5
        for attribute in shown.notification.attributes where DisplayPolicy.standardAttributes.contains(where: { $0.id == attribute.id }) {
            responseBytes += 3 + attribute.value.count
        }
        let command = (try? ControlPointCommand.getNotificationAttributes(
            GetNotificationAttributes(notificationUID: shown.uid, attributes: DisplayPolicy.standardAttributes)).encode()) ?? []
        var bound = link.minimumRoundTrip(commandLength: command.count, responseLength: responseBytes)
        if appsShown.insert(identifier).inserted, let name = shown.appName {
            let app = link.minimumRoundTrip(commandLength: identifier.utf8.count + 3, responseLength: identifier.utf8.count + 5 + name.utf8.count)
            bound = SimulatedLink.RoundTrip(events: bound.events + app.events, bytesOnAir: bound.bytesOnAir + app.bytesOnAir)
        }
        let latency = simulation.now - start.at
        summary.readiness.count += 1
        summary.readiness.connectionEvents += link.counters.connectionEvents - start.events
        summary.readiness.bytesOnAir += link.counters.bytesOnAir - start.bytes
        summary.readiness.responseBytes += responseBytes
        summary.readiness.lowerBoundEvents += bound.events
        summary.readiness.lowerBoundBytes += bound.bytesOnAir
        let bucket = min(Int(latency.components.seconds) * 100 + Int(latency.components.attoseconds / 10_000_000_000_000_000), 6000)
        summary.readiness.latencyBuckets[bucket] += 1
        summary.readiness.maximumLatency = max(summary.readiness.maximumLatency, latency)
    }

    func emit(_ line: Line) {
        onLine?(simulation.now, line)
    }
}

extension DemoScenario.Notification {
    /// The phone's notification for this step.
    public var providerNotification: ProviderNotification {
        var flags: EventFlags = important ? [.important] : []
        if positiveLabel != nil { flags.insert(.positiveAction) }
        if negativeLabel != nil { flags.insert(.negativeAction) }
        return ProviderNotification(
            appIdentifier: appIdentifier, categoryID: category, flags: flags, title: title,
            subtitle: subtitle.isEmpty ? nil : subtitle, message: message, date: date,
            positiveActionLabel: positiveLabel, negativeActionLabel: negativeLabel)
    }
}
