import ANCS
import ANCSRuntime
import ANCSSimulation

/// One run of the demo scenario: a simulated iPhone (a `Provider` behind a
/// `ProviderHost`) and an accessory (a `Consumer` on a `SimulatedLink`),
/// driven on the virtual clock. The accessory shows each notification once it
/// is "ready to show" (app name, title, message, date) and presses the
/// actions the scenario asks for. Used by `ancs demo`, the tests and the
/// air-time benchmark.
public final class DemoRun {
    /// Something a person at the accessory would notice.
    public enum Line {
        case consumer(ConsumerEvent)
        case ready(ConsumerNotification)
        /// A notification already shown changed (Modified, attributes fetched again).
        case updated(ConsumerNotification)
        case removed(ConsumerNotification, title: String)
        case userAction(title: String, ActionID, label: String?)
        case actionResult(title: String, String)
    }

    /// Air time of one notification, from its Added event to ready to show.
    public struct Readiness: Hashable, Sendable {
        public var uid: NotificationUID
        public var connectionEvents: Int
        public var bytesOnAir: Int
        public var latency: Duration
        /// Data Source bytes of the responses that made it ready.
        public var responseBytes: Int
        /// The same for the fewest round trips possible (its attributes, and
        /// the app's name when the app is new in the session).
        public var lowerBoundEvents: Int
        public var lowerBoundBytes: Int
    }

    public struct Summary: Hashable, Sendable {
        public var notifications = 0
        public var shown = 0
        public var requests = 0
        public var failedRequests = 0
        public var expectedFailures = 0
        public var appNameFetches = 0
        public var repeatedAppNameFetches = 0
        public var counters = SimulatedLink.Counters()
        public var simulated: Duration = .zero
        public var readiness: [Readiness] = []

        public var line: String {
            let seconds = Double(simulated.components.seconds) + Double(simulated.components.attoseconds) / 1e18
            let time = (seconds * 10).rounded() / 10
            return "demo: \(notifications) notifications, \(shown) shown, \(requests) requests (\(failedRequests) failed), "
                + "\(counters.connectionEvents) connection events, \(counters.bytesOnAir) bytes on air, \(time) s simulated"
        }
    }

    public static let displayAttributes: [NotificationAttributeRequest] = [
        NotificationAttributeRequest(.appIdentifier),
        NotificationAttributeRequest(.title, maxLength: 64),
        NotificationAttributeRequest(.subtitle, maxLength: 64),
        NotificationAttributeRequest(.message, maxLength: 240),
        NotificationAttributeRequest(.date),
        NotificationAttributeRequest(.positiveActionLabel),
        NotificationAttributeRequest(.negativeActionLabel),
    ]

    public let scenario: DemoScenario
    public let repetitions: Int
    public let host: ProviderHost
    public let link: SimulatedLink
    /// Lazy policy: the demo application asks for attributes itself.
    let appFetches: Bool
    public var onLine: ((Timestamp, Line, DemoRun) -> Void)?
    public private(set) var summary = Summary()
    /// Keep per-notification readiness records (off for very long runs).
    public var recordsReadiness = true

    var uidsByKey: [String: NotificationUID] = [:]
    var waiting: [NotificationUID: (events: Int, bytes: Int, at: Timestamp)] = [:]
    var shownUIDs: Set<NotificationUID> = []
    var appNamesFetched: Set<String> = []
    var appsShown: Set<String> = []
    var titles: [NotificationUID: String] = [:]
    var actionRequests: [ConsumerRequestID: String] = [:]
    public private(set) var isFinished = false

    public init(scenario: DemoScenario = .standard, link configuration: SimulatedLink.Configuration = .init(),
                consumer: ConsumerConfiguration = ConsumerConfiguration(eagerAttributes: DemoRun.displayAttributes),
                repetitions: Int = 1) {
        self.scenario = scenario
        self.repetitions = max(1, repetitions)
        self.appFetches = consumer.eagerAttributes.isEmpty
        host = ProviderHost()
        let connection = ConnectionID(1)
        let host = self.host
        link = SimulatedLink(configuration: configuration, consumer: Consumer(configuration: consumer)) { input, now in
            host.serve(connection, input, at: now)
        }
        host.attach(link, as: connection)
        link.recordsEvents = false
        link.onConsumerEvent = { [unowned self] event, link in self.handle(event, link) }
    }

    /// Registers the apps, adds the pre-existing notifications, schedules the
    /// timeline and connects.
    public func start() {
        for app in scenario.apps { host.registerApp(app.identifier, displayName: app.displayName) }
        for (key, notification) in scenario.preExisting {
            uidsByKey[key] = host.add(providerNotification(notification), at: link.now)
            summary.notifications += 1
        }
        scheduleRound(0)
        link.connect()
    }

    /// Rounds are scheduled one at a time, so a run of any length keeps a short queue.
    func scheduleRound(_ round: Int) {
        let offset = scenario.duration * round
        let suffix = round == 0 ? "" : "#\(round)"
        for (time, step) in scenario.timeline {
            link.schedule(at: Timestamp(offset + time)) { [unowned self] link in self.perform(step, suffix: suffix, link) }
        }
        link.schedule(at: Timestamp(offset + scenario.duration)) { [unowned self] link in
            if round + 1 < self.repetitions {
                // Between rounds the person clears the phone's Notification Center.
                for uid in self.host.provider.notificationCenter.uids { self.host.remove(uid, at: link.now) }
                self.uidsByKey.removeAll()
                self.scheduleRound(round + 1)
            } else {
                self.isFinished = true
                self.summary.simulated = link.now.sinceOrigin
            }
        }
    }

    public func run(until time: Timestamp) {
        link.run(until: time)
        summary.counters = link.counters
    }

    public func runToEnd() {
        while !isFinished { run(until: link.now + .seconds(1)) }
        summary.counters = link.counters
    }

    /// "[App] Title — message · 09:31 · category · actions".
    public func describe(_ notification: ConsumerNotification) -> String {
        let app = notification.appIdentifier.flatMap { link.consumer.displayName(of: $0)?.string } ?? notification.appIdentifier ?? "?"
        var text = "● [\(app)] \(notification[.title]?.string ?? "")"
        if let subtitle = notification[.subtitle]?.string, !subtitle.isEmpty { text += " (\(subtitle))" }
        if let message = notification[.message]?.string, !message.isEmpty { text += " — “\(message)”" }
        if let date = notification[.date]?.date { text += " · \(padded2(date.hour)):\(padded2(date.minute))" }
        text += " · \(notification.categoryID)"
        var actions: [String] = []
        if notification.eventFlags.contains(.positiveAction) { actions.append("✓ " + (notification[.positiveActionLabel]?.string ?? "positive")) }
        if notification.eventFlags.contains(.negativeAction) { actions.append("✗ " + (notification[.negativeActionLabel]?.string ?? "negative")) }
        if !actions.isEmpty { text += " · [" + actions.joined(separator: "] [") + "]" }
        if notification.isPreExisting { text += " · pre-existing" }
        if notification.eventFlags.contains(.important) { text += " · important" }
        return text
    }

    // MARK: - The phone

    func providerNotification(_ n: DemoScenario.Notification) -> ProviderNotification {
        var flags: EventFlags = n.important ? [.important] : []
        if n.positiveLabel != nil { flags.insert(.positiveAction) }
        if n.negativeLabel != nil { flags.insert(.negativeAction) }
        return ProviderNotification(
            appIdentifier: n.appIdentifier, categoryID: n.category, flags: flags, title: n.title,
            subtitle: n.subtitle.isEmpty ? nil : n.subtitle, message: n.message, date: n.date,
            positiveActionLabel: n.positiveLabel, negativeActionLabel: n.negativeLabel)
    }

    func perform(_ step: DemoScenario.Step, suffix: String, _ link: SimulatedLink) {
        switch step {
        case .add(let key, let notification):
            uidsByKey[key + suffix] = host.add(providerNotification(notification), at: link.now)
            summary.notifications += 1
        case .modify(let key, let message):
            if let uid = uidsByKey[key + suffix] { host.modify(uid, message: message, at: link.now) }
        case .remove(let key):
            if let uid = uidsByKey[key + suffix] { host.remove(uid, at: link.now) }
        case .act(let key, let action):
            guard let uid = uidsByKey[key + suffix], let notification = link.consumer.notifications[uid] else { return }
            let title = titles[uid] ?? "uid \(uid)"
            let label = action == .positive ? notification[.positiveActionLabel]?.string : notification[.negativeActionLabel]?.string
            emit(.userAction(title: title, action, label: label))
            let id = link.request { consumer, now in consumer.performAction(action, on: uid, at: now) }
            actionRequests[id] = title
            if action == .negative && notification.categoryID == .incomingCall { summary.notifications += 1 }  // the missed call
        }
    }

    // MARK: - The accessory

    func handle(_ event: ConsumerEvent, _ link: SimulatedLink) {
        switch event {
        case .sessionStarted, .sessionEnded:
            emit(.consumer(event))
        case .added(let notification):
            emit(.consumer(event))
            waiting[notification.uid] = (link.counters.connectionEvents, link.counters.bytesOnAir, link.now)
            if appFetches {
                link.request { consumer, now in consumer.fetchAttributes(DemoRun.displayAttributes, for: notification.uid, at: now) }
            }
        case .modified(let notification):
            emit(.consumer(event))
            if appFetches, shownUIDs.contains(notification.uid) {
                link.request { consumer, now in consumer.fetchAttributes(DemoRun.displayAttributes, for: notification.uid, at: now) }
            }
        case .attributes(let response):
            emit(.consumer(event))
            if let title = response[.title]?.string { titles[response.notificationUID] = title }
            if appFetches, let identifier = response[.appIdentifier]?.string, link.consumer.displayName(of: identifier) == nil,
               !appNamesFetched.contains(identifier) {
                appNamesFetched.insert(identifier)
                link.request { consumer, now in consumer.fetchAppAttributes(identifier, at: now) }
            }
            if let notification = link.consumer.notifications[response.notificationUID] {
                if shownUIDs.contains(notification.uid) { emit(.updated(notification)) } else { showIfReady(notification, link) }
            }
        case .appAttributes(let response):
            emit(.consumer(event))
            summary.appNameFetches += 1
            if !appNamesFetched.insert("fetched:" + response.appIdentifier).inserted { summary.repeatedAppNameFetches += 1 }
            for uid in waiting.keys.sorted() {
                if let notification = link.consumer.notifications[uid] { showIfReady(notification, link) }
            }
        case .removed(let notification):
            emit(.consumer(event))
            waiting.removeValue(forKey: notification.uid)
            shownUIDs.remove(notification.uid)
            emit(.removed(notification, title: titles.removeValue(forKey: notification.uid) ?? notification[.title]?.string ?? "uid \(notification.uid)"))
        case .completed(let id, let result):
            emit(.consumer(event))
            if case .failure = result { summary.failedRequests += 1 }
            if let title = actionRequests.removeValue(forKey: id) {
                switch result {
                case .success: emit(.actionResult(title: title, "the phone performed the action"))
                case .failure(let error): emit(.actionResult(title: title, "the action failed: \(error)"))
                }
            }
        case .unknownEvent, .protocolError, .dataSourceUnavailable:
            emit(.consumer(event))
        }
        summary.requests = link.counters.writes
    }

    func showIfReady(_ notification: ConsumerNotification, _ link: SimulatedLink) {
        guard let start = waiting[notification.uid],
              let identifier = notification.appIdentifier, link.consumer.displayName(of: identifier) != nil,
              notification[.title] != nil, notification[.message] != nil, notification[.date] != nil
        else { return }
        waiting.removeValue(forKey: notification.uid)
        shownUIDs.insert(notification.uid)
        summary.shown += 1
        if recordsReadiness {
            var responseBytes = 0
            for attribute in notification.attributes where DemoRun.displayAttributes.contains(where: { $0.id == attribute.id }) {
                responseBytes += 3 + attribute.value.count
            }
            let command = try! ControlPointCommand.getNotificationAttributes(
                GetNotificationAttributes(notificationUID: notification.uid, attributes: DemoRun.displayAttributes)).encode()
            var bound = link.minimumRoundTrip(commandLength: command.count, responseLength: responseBytes + 5)
            if appsShown.insert(identifier).inserted, let name = link.consumer.displayName(of: identifier) {
                let app = link.minimumRoundTrip(commandLength: identifier.utf8.count + 3, responseLength: identifier.utf8.count + 5 + name.count)
                bound = (bound.events + app.events, bound.bytesOnAir + app.bytesOnAir)
            }
            summary.readiness.append(Readiness(
                uid: notification.uid, connectionEvents: link.counters.connectionEvents - start.events,
                bytesOnAir: link.counters.bytesOnAir - start.bytes, latency: link.now - start.at, responseBytes: responseBytes + 5,
                lowerBoundEvents: bound.events, lowerBoundBytes: bound.bytesOnAir))
        }
        emit(.ready(notification))
    }

    func emit(_ line: Line) {
        onLine?(link.now, line, self)
    }
}

func padded2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
