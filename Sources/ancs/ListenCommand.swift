import ANCS
import ANCSBumble
import ANCSFormat
import ANCSRuntime
import ArgumentParser
import Foundation
import Synchronization
#if os(Linux)
import ANCSBlueZ
import ANCSDesktop
#endif

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Be an ANCS accessory for a real iPhone: show its notifications, fetch their details, answer them.",
        discussion: """
        --stack bluez (the default): Linux with BlueZ (bluetoothd 5.66 or later, LE). The adapter \
        advertises with the ANCS solicitation; pair from the iPhone, then allow notifications for \
        the accessory. --stack bumble:<transport>: a Bumble host (a USB or UART dongle, any OS; \
        see `ancs setup bumble`). Reconnections and Service Changed are followed without a \
        restart. Ctrl-C (or SIGTERM) unsubscribes and exits 0.

        Each notification is shown once it is ready: its attributes fetched and its app's name \
        known (or known to be unavailable). What the phone plays (AMS) is shown as a ♫ line, \
        and its clock and time zone (CTS) when the link comes up; --no-media leaves both out. \
        On Linux with a session bus the \
        phone's player is also org.mpris.MediaPlayer2.ancs: media keys and playerctl control it \
        (--no-mpris: not).

        Commands on standard input, one per line:
          positive <uid>, negative <uid>  perform that action on the phone
          attributes <uid>                every attribute, long values whole
          app <app-identifier>            the app's display name
          play, pause, toggle, next, previous, louder, quieter
                                          the phone's player (AMS)
          media <command>                 any AMS command by name or number (likeTrack, 9)
          yes, no                         answer a pairing question
          quit                            leave, like Ctrl-C
        Each result is shown when it ends; with --json as a `completed` object (numbered in
        order), besides the `attributes` and `appAttributes` events.
        """
    )

    @Option(help: "Bluetooth stack: bluez, or bumble:<transport> (bumble:usb:0, bumble:tcp-client:127.0.0.1:9001, ...).", transform: Stack.parse)
    var stack: Stack = .bluez
    @Option(help: "BlueZ: adapter (hci0); default: the first powered one.") var adapter: String?
    @Option(help: "BlueZ: only this iPhone (its Bluetooth identity address); default: the first that connects.") var device: String?
    @Flag(help: "BlueZ: accept pairing without asking (headless use).") var acceptPairing = false
    @OptionGroup var bumble: BumbleStackOptions
    @Option(help: "Bumble: the ATT MTU to ask for (23…517).") var mtu: Int = 517
    @Option(help: "Bumble: connect to this address rather than the first advertiser soliciting ANCS.") var peer: String?
    @Flag(help: "Bumble: connect again after the link is lost.") var reconnect = false
    @Flag(help: "Bumble: advertise the ANCS solicitation and wait for the phone to connect (a real iPhone), instead of scanning.")
    var peripheral = false
    @Option(help: "Exit after this many seconds (0: no limit).") var duration: Double = 0
    @Option(help: "Seconds the phone may stay quiet before a probe checks that it still answers (0: no probe).")
    var probeInterval: Double = 300
    @Option(help: "Seconds after a refusal (notifications not allowed yet, sharing off) before asking again (0: never).")
    var retryInterval: Double = 15
    @Option(help: "Seconds a request (and the probe) waits for the phone's answer.") var requestTimeout: Double = 35
    @Flag(help: "Do not follow the phone's player (AMS) or read its clock (CTS).") var noMedia = false
    @Flag(help: "Linux: do not offer the phone's player on the session bus (MPRIS: media keys, playerctl).") var noMpris = false
    @Flag(help: "Print one JSON object per consumer event (the shape of `ancs demo --json`); status goes to stderr.") var json = false
    @Flag(help: "Also show each notification on the desktop (org.freedesktop.Notifications), its actions as buttons.") var notify = false
    @OptionGroup(title: "What is shown") var filters: DisplayFilterOptions
    @OptionGroup var logging: LoggingOptions

    /// The advertised name (BlueZ); Bumble's device name too.
    var name: String { bumble.name ?? "ANCS listen" }

    func validate() throws {
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 517, got \(mtu)") }
        guard duration >= 0 else { throw ValidationError("--duration must be 0 or more seconds") }
        guard probeInterval >= 0 else { throw ValidationError("--probe-interval must be 0 or more seconds, got \(probeInterval)") }
        guard retryInterval >= 0 else { throw ValidationError("--retry-interval must be 0 or more seconds, got \(retryInterval)") }
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be more than 0 seconds, got \(requestTimeout)") }
    }

    func run() async throws {
        let view = ConsumerView(json: json)
        let pairing = PairingGate(acceptAll: acceptPairing, view: view)
        let link: ListenTransport
        do {
            link = try await Self.makeTransport(self, status: { view.status($0.message) }, prompt: { await pairing.ask($0) })
        } catch {
            throw CommandFailure("listen: \(error.message)")
        }
        var configuration = ConsumerConfiguration()
        configuration.requestTimeout = .milliseconds(Int(requestTimeout * 1000))
        configuration.probeInterval = .milliseconds(Int(probeInterval * 1000))
        configuration.retryInterval = .milliseconds(Int(retryInterval * 1000))
        configuration.display = .standard
        filters.apply(to: &configuration)
        let client = ConsumerClient(transport: link.transport, configuration: configuration)
        var ams = AMSClientConfiguration()
        ams.requestTimeout = configuration.requestTimeout
        let media = link.media.map { MediaClient(transport: $0, ams: ams) }
        var desktop: DesktopNotifications?
        if notify {
            do {
                desktop = try await DesktopNotifications.start()
            } catch {
                await link.close()
                throw CommandFailure("listen --notify: \(error.message)")
            }
        }
        if let desktop = desktop {
            view.onShow = { shown in desktop.show(shown.notification, app: shown.appLabel) }
            view.onRemove = { uid in desktop.withdraw(uid) }
            desktop.onAction = { uid, action in
                Task { await Self.request("\(action == .positive ? "positive" : "negative") \(uid)", view: view) { () async throws(ConsumerError) in
                    try await client.performAction(action, on: uid)
                    return .actionPerformed
                } }
            }
        }

        let running = Task { () -> (any Error)? in
            do { try await client.run(); return nil } catch { return error }
        }
        let log = logging.trafficLog(label: "ancs.listen")
        let display = Task {
            for await event in client.events {
                log.log(event)
                view.show(event)
            }
        }
        // The phone's player on the session bus, for the desktop's media keys
        // and playerctl, when there is a session bus.
        var playerUpdate: (@Sendable (NowPlaying, Double?, [RemoteCommandID]?) -> Void)?
        var closePlayer: @Sendable () -> Void = {}
        #if os(Linux)
        if let media, !noMpris, ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] != nil {
            do {
                let player = try await MPRISPlayer.start { command in
                    Task { view.mediaCompleted(command, await media.perform(command)) }
                }
                view.status("the phone's player is \(player.busName) on the session bus (media keys, playerctl)")
                playerUpdate = { playing, elapsed, supported in player.update(playing, elapsed: elapsed, supported: supported) }
                closePlayer = { player.close() }
            } catch {
                view.status("the phone's player is not offered on the session bus: \(error)")
            }
        }
        #endif
        let mediaRunning = media.map { media in Task { try? await media.run() } }
        let mediaDisplay = media.map { media in Task { [playerUpdate] in await Self.showMedia(media, view: view, player: playerUpdate) } }
        let stopping = Mutex(false)
        let stop: @Sendable () -> Void = {
            guard stopping.withLock({ old in defer { old = true }; return !old }) else { return }
            Task { await client.stop() }
            Task { await media?.stop() }
            // If the phone does not answer the unsubscriptions, leave anyway.
            Task {
                try? await Task.sleep(for: .seconds(3))
                running.cancel()
                mediaRunning?.cancel()
            }
        }
        let signals = SignalWatch([SIGINT, SIGTERM], stop)
        let limit = duration > 0 ? Task { [duration] in
            try? await Task.sleep(for: .milliseconds(Int(duration * 1000)))
            if !Task.isCancelled { stop() }
        } : nil
        defer { limit?.cancel() }
        let input = StandardInput.start { line in
            Self.perform(line, client: client, media: media, pairing: pairing, view: view, stop: stop)
        }
        let failure = await running.value
        await display.value
        // AMS and CTS are left as ANCS is (their notifications off), before the link closes.
        // A phone that does not answer is not waited for longer than ANCS's 3 s.
        await media?.stop()
        let leaving = Task { [mediaRunning] in
            try? await Task.sleep(for: .seconds(3))
            mediaRunning?.cancel()
        }
        _ = await mediaRunning?.value
        leaving.cancel()
        await link.close()
        await mediaDisplay?.value
        closePlayer()
        desktop?.close()
        signals.cancel()
        input.cancel()
        if let failure, !stopping.withLock({ $0 }) {
            throw CommandFailure("listen: \(failure)")
        }
    }

    /// Everything, long values whole (up to the engine's limit).
    static let allAttributes: [NotificationAttributeRequest] = [
        NotificationAttributeRequest(.appIdentifier),
        NotificationAttributeRequest(.title, maxLength: 1024),
        NotificationAttributeRequest(.subtitle, maxLength: 1024),
        NotificationAttributeRequest(.message, maxLength: 1024),
        NotificationAttributeRequest(.messageSize),
        NotificationAttributeRequest(.date),
        NotificationAttributeRequest(.positiveActionLabel),
        NotificationAttributeRequest(.negativeActionLabel),
    ]

    // MARK: - The stack (one place: another stack is one more case)

    struct ListenTransport: Sendable {
        var transport: any GATTClientTransport
        /// AMS and CTS on the same link, when the stack follows them.
        var media: (any MediaClientTransport)?
        var close: @Sendable () async -> Void
    }

    struct SetupError: Error { var message: String }

    static func makeTransport(_ options: ListenCommand, status: @escaping @Sendable (BlueZStatus) -> Void,
                              prompt: @escaping @Sendable (PairingRequest) async -> Bool) async throws(SetupError) -> ListenTransport {
        switch options.stack {
        case .bluez:
            #if !os(Linux)
            throw SetupError(message: "--stack bluez: BlueZ runs on Linux only; use --stack bumble:<transport>")
            #else
            do {
                let transport = try await BlueZConsumerTransport.start(
                    options: .init(adapter: options.adapter, device: options.device, name: options.name),
                    status: status, prompt: prompt)
                return ListenTransport(transport: transport, media: options.noMedia ? nil : transport, close: { await transport.close() })
            } catch {
                throw SetupError(message: error.message)
            }
            #endif
        case .bumble(let transportName):
            do {
                let transport = try await startBumbleClient(transport: transportName, options: options.bumble, mtu: options.mtu,
                                                            peer: options.peer, reconnect: options.reconnect, peripheral: options.peripheral,
                                                            media: !options.noMedia)
                return ListenTransport(transport: transport, media: options.noMedia ? nil : transport, close: { transport.close() })
            } catch {
                throw SetupError(message: "\(error)")
            }
        }
    }

    /// Runs one request typed on standard input (or pressed on the desktop)
    /// and shows how it ended.
    static func request(_ what: String, view: ConsumerView, _ body: @escaping @Sendable () async throws(ConsumerError) -> ConsumerResponse) async {
        let result: ConsumerResult
        do throws(ConsumerError) {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        view.completed(what, result)
    }

    /// The media client's events, and the now-playing line: shown once the
    /// values of a change have come (one attribute per notification, within
    /// a connection interval or two), the events read on meanwhile.
    /// `player`: told what plays after each event (MPRIS).
    static func showMedia(_ media: MediaClient, view: ConsumerView,
                          player: (@Sendable (NowPlaying, Double?, [RemoteCommandID]?) -> Void)?) async {
        for await output in media.events {
            if let player { player(await media.nowPlaying, await media.elapsed, await media.supportedCommands) }
            guard view.show(output) else { continue }
            Task {
                try? await Task.sleep(for: .milliseconds(150))
                view.showNowPlaying(await media.nowPlaying, elapsed: await media.elapsed)
            }
        }
    }

    /// The words typed for the phone's player, and the commands they name.
    static let mediaWords: [String: RemoteCommandID] = [
        "play": .play, "pause": .pause, "toggle": .togglePlayPause, "next": .nextTrack,
        "previous": .previousTrack, "louder": .volumeUp, "quieter": .volumeDown,
    ]

    // MARK: - Standard input

    static func perform(_ line: String, client: ConsumerClient, media: MediaClient?, pairing: PairingGate, view: ConsumerView,
                        stop: @escaping @Sendable () -> Void) {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first?.lowercased() else { return }
        func uid() -> NotificationUID? {
            guard words.count == 2, let value = UInt32(words[1]) else {
                view.status("input: \(command) needs one notification UID (a number), got “\(line)”")
                return nil
            }
            return NotificationUID(value)
        }
        switch command {
        case "positive", "negative":
            guard let uid = uid() else { return }
            Task { await request(line, view: view) { () async throws(ConsumerError) in
                try await client.performAction(command == "positive" ? .positive : .negative, on: uid)
                return .actionPerformed
            } }
        case "attributes":
            guard let uid = uid() else { return }
            Task { await request(line, view: view) { () async throws(ConsumerError) in
                .notificationAttributes(try await client.fetchAttributes(allAttributes, for: uid))
            } }
        case "app":
            guard words.count == 2 else { view.status("input: app needs one app identifier, got “\(line)”"); return }
            Task { await request(line, view: view) { () async throws(ConsumerError) in
                .appAttributes(try await client.fetchAppAttributes(words[1]))
            } }
        case _ where mediaWords[command] != nil || command == "media":
            guard let media else { view.status("input: \(command): the phone's player is not followed (--no-media, or the stack)"); return }
            var named = mediaWords[command]
            if command == "media" {
                guard words.count == 2, let found = RemoteCommandID(name: words[1]) else {
                    view.status("input: media needs one AMS command (play, nextTrack, likeTrack, … or its number), got “\(line)”")
                    return
                }
                named = found
            }
            guard let remote = named else { return }
            Task { view.mediaCompleted(remote, await media.perform(remote)) }
        case "yes", "y", "no", "n":
            Task { await pairing.answer(command.hasPrefix("y")) }
        case "quit", "exit":
            stop()
        default:
            view.status("input: unknown command “\(command)” (positive, negative, attributes, app, play, pause, toggle, next, previous, louder, quieter, media, yes, no, quit)")
        }
    }
}

/// Pairing questions from the agent, answered on standard input (or at once with --accept-pairing).
actor PairingGate {
    let acceptAll: Bool
    let view: ConsumerView
    private var waiting: CheckedContinuation<Bool, Never>?

    init(acceptAll: Bool, view: ConsumerView) {
        self.acceptAll = acceptAll
        self.view = view
    }

    func ask(_ request: PairingRequest) async -> Bool {
        let what = request.passkey.map { "passkey \(String(format: "%06u", $0)) (check the iPhone shows the same)" } ?? "no passkey (Just Works)"
        if acceptAll {
            view.status("pairing with \(request.device): \(what); accepted (--accept-pairing)")
            return true
        }
        waiting?.resume(returning: false)
        view.status("pair with \(request.device)? \(what) — type yes or no within 30 s")
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: .seconds(30))
            await self?.answer(false)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { waiting = $0 }
    }

    func answer(_ yes: Bool) {
        waiting?.resume(returning: yes)
        waiting = nil
    }
}

/// SIGINT/SIGTERM call `handler` once each time they arrive (instead of killing the process).
final class SignalWatch: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32], _ handler: @escaping @Sendable () -> Void) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    func cancel() { for source in sources { source.cancel() } }
}

/// Lines of standard input on a thread of their own.
final class StandardInput: Sendable {
    private let stopped = Mutex(false)

    static func start(_ handler: @escaping @Sendable (String) -> Void) -> StandardInput {
        let input = StandardInput()
        let thread = Thread {
            while let line = readLine() {
                if input.stopped.withLock({ $0 }) { return }
                handler(line)
            }
        }
        thread.start()
        return input
    }

    func cancel() { stopped.withLock { $0 = true } }
}
