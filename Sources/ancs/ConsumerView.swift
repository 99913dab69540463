import ANCS
import ANCSFormat
import ANCSRuntime
import ANCSTerminal
import Foundation

/// What `ancs listen` prints: the demo's terminal view (one line per thing a
/// person would notice) or, with `--json`, one object per consumer event in
/// the shape of `ancs demo --json`.
///
/// Across sessions (a reconnection, Service Changed) the phone announces
/// its notifications again as PreExisting; the terminal view and desktop
/// notifications show each one once (same UID, app, title and date), the
/// JSON stream keeps every event.
final class ConsumerView: @unchecked Sendable {
    let json: Bool
    let start = ContinuousClock.now
    private let lock = NSLock()
    /// What the previous session showed, so a reconnection's replays are not shown twice.
    private var replays = PreExistingReplays()
    private var titles: [NotificationUID: String] = [:]
    /// Requests typed by the person, numbered in order.
    private var requests: UInt32 = 0
    /// What the now-playing line last showed, and whether a newer one is due.
    private var nowPlaying = NowPlayingChanges()
    private var nowPlayingDue = false
    /// The phone's clock as CTS last told it: shown with its zone once both are known.
    private var phoneTime: CurrentTime?
    private var phoneZone: LocalTimeInformation?
    /// Called for each notification shown for the first time (desktop notifications).
    var onShow: (@Sendable (DisplayedNotification) -> Void)?
    var onRemove: (@Sendable (NotificationUID) -> Void)?

    init(json: Bool) { self.json = json }

    private var seconds: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Shows one event of the client.
    func show(_ event: ConsumerClientEvent) {
        lock.lock()
        defer { lock.unlock() }
        if json { printJSON(ANCSJSON.consumerEvent(event.consumerEvent)) }
        switch event {
        case .ready(let shown):
            if let title = shown.title { titles[shown.uid] = title }
            // A reconnection announces everything again as PreExisting: show each once.
            if replays.isReplay(shown) { return }
            line(TerminalLine.notification(shown) + " · uid \(shown.uid.rawValue)")
            onShow?(shown)
        case .updated(let shown):
            if let title = shown.title { titles[shown.uid] = title }
            line(TerminalLine.updated(shown) + " · uid \(shown.uid.rawValue)")
        case .displayFailed(let uid, let error):
            line("  notification \(uid) could not be fetched: \(error)")
        default:
            consumer(event.consumerEvent)
        }
    }

    private func consumer(_ event: ConsumerEvent) {
        switch event {
        case .sessionStarted:
            replays.sessionStarted()
            line("── session started")
        case .sessionEnded(.subscriptionFailed(let result)):
            line("── session ended: subscribing to Notification Source failed (\(result))")
        case .sessionEnded(let reason):
            line("── session ended (\(reason))")
        case .removed(let notification):
            let title = titles.removeValue(forKey: notification.uid) ?? notification[.title]?.string ?? "uid \(notification.uid)"
            line("✕ \(title) — removed (\(notification.categoryID))")
            onRemove?(notification.uid)
        case .protocolError(let error):
            line("  dropped bytes from the phone: \(error)")
        case .dataSourceUnavailable(let result):
            line("  Data Source unavailable (\(result)): titles and messages cannot be fetched")
        case .unknownEvent(let event):
            line("  unknown event \(event.eventID) for uid \(event.notificationUID)")
        case .health(let health):
            statusLine(Self.healthLine(health))
        case .added, .modified, .attributes, .appAttributes, .completed, .ready, .updated, .displayFailed, .hidden:
            break  // shown once ready (the client tells it), or never (hidden); requests report themselves (`completed`)
        }
    }

    /// Shows one event of the media client (AMS, CTS); true when a
    /// now-playing line is due and was not already: the caller waits briefly
    /// for the rest of the change (one attribute per notification), then
    /// calls `showNowPlaying`.
    func show(_ output: MediaClientOutput) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        switch output {
        case .ams(let event):
            if json { printJSON(ANCSJSON.amsEvent(event)) }
            switch event {
            case .ready: line("── now playing: following the phone's player (AMS)")
            case .supportedCommands(let commands):
                line("── the player takes: " + (commands.isEmpty ? "no commands" : commands.map(TerminalLine.command).joined(separator: ", ")))
            case .setupFailed(let error): line("── following the phone's player failed (\(error)); asking again later")
            case .invalidUpdate(let error): line("  dropped bytes from the phone's player: \(error)")
            case .ended(.serviceUnpublished): line("── the phone's player is gone (AMS unpublished)")
            case .updated, .commandCompleted, .ended: break  // the now-playing line; the command's own line
            }
            guard nowPlaying.note(event), !nowPlayingDue else { return false }
            nowPlayingDue = true
            return true
        case .cts(let event):
            if json { printJSON(ANCSJSON.ctsEvent(event)) }
            switch event {
            case .currentTime(let time):
                phoneTime = time
                if phoneZone != nil { timeLine() }
            case .localTimeInformation(let zone):
                phoneZone = zone
                timeLine()
            case .failed(let characteristic, let error):
                line("  reading the phone's \(characteristic) failed: \(error)")
                if characteristic == .localTimeInformation { timeLine() }
            }
            return false
        }
    }

    /// The phone's clock, with its zone when known (the lock held).
    private func timeLine() {
        guard let phoneTime else {
            if let phoneZone { line("🕒 the phone's time zone: \(phoneZone)") }
            return
        }
        line("🕒 the phone's time: " + (phoneZone.flatMap { phoneTime.date.iso8601(in: $0) } ?? "\(phoneTime.date) (zone unknown)"))
    }

    /// The now-playing line, when what a person notices changed since the last.
    func showNowPlaying(_ playing: NowPlaying, elapsed: Double?) {
        lock.lock()
        defer { lock.unlock() }
        nowPlayingDue = false
        guard let cut = nowPlaying.changed(playing) else { return }
        line(TerminalLine.nowPlaying(playing, elapsed: elapsed, cut: cut))
    }

    /// A media command the person asked for has ended (with --json the
    /// client's `mediaCommandCompleted` event says it).
    func mediaCompleted(_ command: RemoteCommandID, _ error: AMSClientError?) {
        lock.lock()
        defer { lock.unlock() }
        if let error {
            line("  \(TerminalLine.command(command)) failed: \(error)")
        } else {
            line("  \(TerminalLine.command(command)): the phone performed it")
        }
    }

    /// The one line that says what a health state means, and what to do on
    /// the iPhone when the accessory cannot recover by itself.
    static func healthLine(_ health: ConsumerHealth) -> String {
        let what: String
        switch health {
        case .healthy:
            what = "notifications reach this accessory again"
        case .waitingForPermission(let characteristic, let code):
            what = "the phone refused \(characteristic) (\(code)); asking again"
        case .notShared:
            what = "the phone does not share its notifications with this accessory"
        case .resubscribing(let reason):
            let why: String
            switch reason {
            case .probeUnanswered: why = "the phone did not answer the liveness check"
            case .missedNotification: why = "the phone holds a notification it never announced"
            case .notificationSourceSilent: why = "nothing came from the phone for a long time"
            case .subscriptionLost: why = "the phone no longer holds this accessory's subscriptions"
            case .sharingRestored: why = "the phone shares its notifications again"
            }
            what = "\(why): subscribing again"
        case .bondLost:
            what = "the phone no longer has this accessory's bond"
        }
        return health.remedy.map { "\(what) — \($0)" } ?? what
    }

    /// A request the person made has ended.
    func completed(_ what: String, _ result: ConsumerResult) {
        lock.lock()
        defer { lock.unlock() }
        requests += 1
        if json { printJSON(ANCSJSON.consumerEvent(.completed(ConsumerRequestID(rawValue: requests), result))) }
        switch result {
        case .success(.actionPerformed): line("  \(what): the phone performed the action")
        case .success(.notificationAttributes(let response)):
            line("  \(what): " + response.attributes.map { "\($0.id)=“\($0.value.string)”" }.joined(separator: " "))
        case .success(.appAttributes(let response)):
            line("  \(what): " + response.attributes.map { "\($0.id)=“\($0.value.string)”" }.joined(separator: " "))
        case .failure(let error): line("  \(what) failed: \(error)")
        }
    }

    /// A status line from the transport (always on stderr with --json).
    func status(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        statusLine(text)
    }

    /// A status line, the lock held.
    private func statusLine(_ text: String) {
        if json {
            printErrorLine("ancs listen: \(text)")
        } else {
            line("── \(text)")
        }
    }

    private func printJSON(_ object: JSON) {
        var object = object
        if case .object(var members) = object {
            members.insert(("time", .double((seconds * 1000).rounded() / 1000)), at: 0)
            object = .object(members)
        }
        printLine(object.rendered)
    }

    private func line(_ text: String) {
        guard !json else { return }
        printLine(String(format: "%7.3fs  ", seconds) + text)
    }
}
