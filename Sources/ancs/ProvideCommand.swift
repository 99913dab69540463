import ANCS
import ANCSBumble
import ANCSDemo
import ANCSFormat
import ANCSRuntime
import ANCSTerminal
import ArgumentParser
import Foundation
import Synchronization

/// `ancs provide`: act as an iPhone. A Notification Provider on a real (or
/// virtual) controller plays a scenario: notifications there before the
/// accessory connects (announced PreExisting), then a timeline of added,
/// modified and removed notifications started by the first session.
struct ProvideCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provide",
        abstract: "Act as an iPhone: publish ANCS and play a scenario of notifications.",
        discussion: """
        The stack is Bumble (BlueZ cannot answer ANCS errors 0xA0–0xA3 as a server): --stack bumble:<transport>, \
        e.g. bumble:usb:0, bumble:serial:/dev/ttyACM0,1000000, bumble:hci-socket:0, bumble:tcp-client:127.0.0.1:9001. \
        The provider advertises with the ANCS solicitation, pairs with LE Secure Connections and requires encryption; \
        as an iPhone it pairs by numeric comparison with MITM protection (the code is printed and confirmed; \
        --pairing just-works for NoInputNoOutput). With --central it asks for the ATT MTU --mtu after connecting, \
        as an iPhone does (--mtu 23: no exchange). With --json, one object per event, notifications with their \
        title, subtitle and message (scenario data). \
        The timeline starts when the first consumer subscribes to Notification Source (or, with --media, registers \
        with AMS); the accessory's own actions \
        in the demo scenario are left to the accessory. \
        A phone that asks its user first: --allow-notifications-after S refuses the Notification Source and Data Source \
        subscriptions (CCCD writes) with ATT 0x08 Insufficient Authorization until S seconds after the link with the \
        accessory is encrypted; the accessory is expected to subscribe again. \
        Service Changed: --republish AT,AFTER removes ANCS AT seconds after the timeline starts, indicating Service \
        Changed (0x2A05) with its handle range to the consumers subscribed to it, and adds it back AFTER seconds later, \
        indicating the new range; the notifications stay and are announced PreExisting to the consumer that subscribes \
        again. Each session ended by it counts for --sessions. \
        Faults of real iPhones (docs/PROVIDE.md: "Act as an iPhone", faults) are scenario steps: sharing on/off, \
        Notification Source quiet, subscriptions forgotten in silence, the bond forgotten, ANCS removed and added \
        back with or without Service Changed; --share-after S starts with sharing off (CCCD writes taken, Control Point \
        writes answered 0x03, no Notification Source event) and turns it on S seconds after the timeline starts. \
        Ctrl-C or SIGTERM ends the run as --duration does: the stack is closed and the exit status is 0.
        """
    )

    @Option(help: "The Bluetooth stack: bumble:<transport>.", transform: Stack.parse) var stack: Stack?
    @OptionGroup var bumble: BumbleStackOptions
    @Option(help: "The largest ATT MTU accepted (23…517); with --central also the MTU asked for after connecting (23: none asked).") var mtu: Int = 517
    @Flag(help: "Be the central, as an iPhone is: connect to the accessory advertising the ANCS solicitation (again after each disconnection) instead of advertising.")
    var central = false
    @Option(help: "With --central: connect to this address rather than the first ANCS solicitor.") var peer: String?
    @Option(help: "Scenario file (JSON or YAML); the demo scenario by default.") var scenario: String?
    @Flag(help: "Error injection: every notification action fails with 0xA3 Action failed.") var failActions = false
    @Flag(help: "Only read the scenario and print what it holds; no stack needed.") var check = false
    @Option(help: "Exit after this many sessions have ended (0: run until interrupted).") var sessions: Int = 0
    @Option(help: "Exit after this many seconds (0: no limit).") var duration: Double = 0
    @Flag(help: "Print one JSON object per provider event instead of text.") var json = false
    @Flag(help: "Numeric comparison: ask whether the accessory shows the same code (answer yes or no on standard input; no answer within 30 s is no) instead of confirming it.")
    var askPairing = false
    @Option(help: ArgumentHelp(
        "Refuse the Notification Source and Data Source subscriptions (CCCD writes) with ATT 0x08 Insufficient Authorization "
            + "until this many seconds after the accessory's link is encrypted, as an iPhone does until its user allows notifications "
            + "(asked once: later links of that accessory follow the answer). 0: allowed at once.",
        valueName: "seconds"))
    var allowNotificationsAfter: Double = 0
    @Option(help: ArgumentHelp(
        "Service Changed: <at> seconds after the timeline starts, remove ANCS and indicate Service Changed with its handle range; "
            + "<after> seconds later add it back and indicate the new range (e.g. 5,2).",
        valueName: "at,after"), transform: Republish.parse)
    var republish: Republish?
    @Option(help: ArgumentHelp(
        "Start with \"Share System Notifications\" off for the accessory (CCCD writes taken, Control Point writes answered "
            + "0x03 Write Not Permitted, no Notification Source event) and turn it on this many seconds after the timeline starts.",
        valueName: "seconds"))
    var shareAfter: Double?
    @Flag(help: "Also serve AMS and CTS, as an iPhone does: the scenario's player (the demo's by default) and clock (the computer's, in UTC, by default); the accessory's commands are reported.")
    var media = false

    func validate() throws {
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 517, got \(mtu)") }
        guard sessions >= 0 else { throw ValidationError("--sessions must be 0 or more") }
        guard duration >= 0 else { throw ValidationError("--duration must be 0 or more seconds") }
        if let shareAfter, !(0...86_400).contains(shareAfter) {
            throw ValidationError("--share-after must be between 0 and 86400 seconds, got \(shareAfter)")
        }
        guard (0...3600).contains(allowNotificationsAfter) else {
            throw ValidationError("--allow-notifications-after must be between 0 and 3600 seconds, got \(allowNotificationsAfter)")
        }
        if askPairing && bumble.pairing != BumblePairing.numericComparison.rawValue {
            throw ValidationError("--ask-pairing needs --pairing numeric (Just Works has no code to compare)")
        }
    }

    func run() async throws {
        var play = ProvideScenario(demo: .standard)
        if let scenario {
            let bytes: [UInt8]
            do {
                bytes = try HexArguments.readFile(scenario, limit: 64 << 20)
            } catch {
                throw CommandFailure("--scenario: \(error.message)")
            }
            do {
                play = try ProvideScenario.parse(bytes, path: scenario)
            } catch {
                throw CommandFailure(error.message)
            }
        }
        if failActions { play.failAllActions() }
        if let shareAfter { play.shareAfter(.milliseconds(Int(shareAfter * 1000))) }
        if check {
            printLine(play.summary)
            return
        }
        guard case .bumble(let transport)? = stack else { throw CommandFailure("provide: --stack bumble:<transport> is required (or --check)") }
        let view = ProvideView(json: json)
        let answers = PairingAnswers()
        let server = try await startBumbleServer(transport: transport, options: bumble, mtu: mtu, central: central, peer: peer,
                                                 askPairing: askPairing, allowNotificationsAfter: allowNotificationsAfter, media: media,
                                                 notices: { notice in
            view.show(notice)
            if case .pairingConfirmation(let connection, _) = notice { answers.ask(connection) }
        })
        answers.server.withLock { $0 = server }
        let provider = ProviderServer(transport: server)
        let player = media ? MediaServer(transport: server, player: play.player ?? DemoScenario.standard.player,
                                         time: play.phoneTime ?? Self.utcNow(), zone: play.zone ?? LocalTimeInformation(utcOffsetMinutes: 0))
                           : nil
        // The timeline starts with the first consumer's ANCS session, or (--media) the first AMS registration:
        // an accessory that follows only the music sees the scenario's player steps too.
        let (starts, startSink) = AsyncStream<Void>.makeStream()
        let (republishStarts, republishStartSink) = AsyncStream<Void>.makeStream()
        let timelineStarted = Mutex(false)
        let startTimeline: @Sendable () -> Void = {
            guard timelineStarted.withLock({ started in defer { started = true }; return !started }) else { return }
            startSink.yield()
            republishStartSink.yield()
        }
        let playing = player.map { player in Task { try? await player.run() } }
        let playerEvents = player.map { player in Task {
            for await event in player.events {
                view.show(event)
                if case .registered = event { startTimeline() }
            }
        } }
        // Ctrl-C or SIGTERM ends the run as --duration does: the stack closed,
        // exit 0. Watched before "ready" is printed: a bench may stop the
        // provider the moment it reads it.
        let signals = SignalWatch([SIGINT, SIGTERM]) { server.close() }
        defer { signals.cancel() }
        view.ready(address: server.ready.address, transport: transport, scenario: play)

        if play.startsNotShared {
            await provider.setSharing(false)
            view.fault(.sharing(false))
        }
        var keys: [String: NotificationUID] = [:]
        for app in play.apps { await provider.registerApp(identifier: app.identifier, displayName: app.displayName) }
        for (key, notification) in play.preExisting {
            let uid = try await provider.add(notification)
            keys[key] = uid
            view.notification("waiting", key: key, uid: uid, notification)
        }
        let presetKeys = keys
        let sessionLimit = sessions

        let timeline = Task {
            var iterator = starts.makeAsyncIterator()
            guard await iterator.next() != nil else { return }
            var keys = presetKeys
            let start = ContinuousClock.now
            for (at, step) in play.timeline {
                try? await Task.sleep(until: start + at, clock: .continuous)
                if Task.isCancelled { return }
                do {
                    switch step {
                    case .add(let key, let notification):
                        let uid = try await provider.add(notification)
                        keys[key] = uid
                        view.notification("added", key: key, uid: uid, notification)
                    case .modify(let key, let message):
                        guard let uid = keys[key], var notification = await provider.notificationCenter[uid] else { continue }
                        notification.message = message
                        try await provider.modify(uid, to: notification)
                        view.notification("modified", key: key, uid: uid, notification)
                    case .remove(let key):
                        guard let uid = keys[key], let notification = await provider.notificationCenter[uid] else { continue }
                        try await provider.remove(uid)
                        view.notification("removed", key: key, uid: uid, notification)
                    case .fault(let fault):
                        // Each applied, then reported (ANCS removed or added as a service change).
                        switch fault {
                        case .sharing(let on): await provider.setSharing(on); view.fault(fault)
                        case .notificationSourceQuiet(let quiet): await provider.setNotificationSourceQuiet(quiet); view.fault(fault)
                        case .forgetSubscriptions: await provider.forgetSubscriptions(); view.fault(fault)
                        case .lose(let characteristic): await provider.loseSubscription(characteristic); view.fault(fault)
                        case .forgetBond: view.fault(fault, count: try await server.forgetBonds())
                        case .removeANCS(let indicated): view.serviceChange(try await server.unpublishANCS(serviceChanged: indicated))
                        case .addANCS(let indicated): view.serviceChange(try await server.publishANCS(serviceChanged: indicated))
                        }
                    case .player, .volume, .clock:
                        guard let player else {
                            view.line("scenario: a player or clock step, skipped (no --media)", json: .object([("event", .string("mediaSkipped"))]))
                            continue
                        }
                        await view.mediaStep(step, on: player)
                    }
                } catch {
                    view.line("scenario: \(error)", json: .object([("event", .string("scenarioError")), ("error", .string("\(error)"))]))
                }
            }
            view.line("scenario: timeline done", json: .object([("event", .string("timelineDone"))]))
        }
        // --republish: ANCS leaves the GATT database and comes back, on the timeline's clock.
        let republishing = republish.map { plan in
            Task {
                var iterator = republishStarts.makeAsyncIterator()
                guard await iterator.next() != nil else { return }
                let start = ContinuousClock.now
                try? await Task.sleep(until: start + plan.at, clock: .continuous)
                if Task.isCancelled { return }
                do {
                    view.serviceChange(try await server.unpublishANCS())
                    try? await Task.sleep(until: start + plan.at + plan.after, clock: .continuous)
                    if Task.isCancelled { return }
                    view.serviceChange(try await server.publishANCS())
                } catch {
                    view.line("provide: \(error)", json: .object([("event", .string("serviceChangeError")), ("error", .string("\(error)"))]))
                }
            }
        }

        let events = Task {
            var ended = 0
            for await event in provider.events {
                if case .notificationAttributesSent(_, let command) = event {
                    view.show(event, notification: await provider.notificationCenter[command.notificationUID])
                } else {
                    view.show(event)
                }
                switch event {
                case .sessionStarted:
                    startTimeline()
                case .sessionEnded:
                    ended += 1
                    if sessionLimit > 0 && ended >= sessionLimit { server.close() }
                default: break
                }
            }
        }
        let limit = duration > 0 ? Task {
            try? await Task.sleep(for: .milliseconds(Int(duration * 1000)))
            if !Task.isCancelled { server.close() }
        } : nil
        defer {
            timeline.cancel()
            republishing?.cancel()
            limit?.cancel()
            startSink.finish()
            republishStartSink.finish()
        }
        do {
            try await provider.run()
        } catch {
            throw CommandFailure("provide: \(error)")
        }
        _ = await events.value
        playing?.cancel()
        await playerEvents?.value
    }

    /// The computer's clock now, in UTC, as CTS tells it.
    static func utcNow() -> CurrentTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: Date())
        // Calendar's weekday is 1 for Sunday; CTS's day of week is 1 for Monday … 7 for Sunday.
        let weekday = parts.weekday.map { ($0 + 5) % 7 + 1 } ?? 0
        return CurrentTime(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0, hour: parts.hour ?? 0,
                           minute: parts.minute ?? 0, second: parts.second ?? 0, dayOfWeek: weekday)
    }
}

/// `--republish AT,AFTER`: when ANCS is removed (from the timeline's start)
/// and how long it stays away.
struct Republish: Sendable {
    var at: Duration
    var after: Duration

    static func parse(_ text: String) throws -> Republish {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Double(parts[0]), let after = Double(parts[1]),
              (0...86_400).contains(at), after > 0, after <= 86_400 else {
            throw ValidationError("--republish takes <at>,<after> in seconds (0 ≤ at, 0 < after ≤ 86400), e.g. 5,2; got '\(text)'")
        }
        return Republish(at: .milliseconds(Int(at * 1000)), after: .milliseconds(Int(after * 1000)))
    }
}

/// `--ask-pairing`: each numeric comparison is answered by the next line on
/// standard input (`yes`/`y` accepts; anything else, or its end, refuses).
final class PairingAnswers: Sendable {
    let server = Mutex<BumbleServerTransport?>(nil)

    func ask(_ connection: Int) {
        Thread { [self] in
            let line = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            let accept = line == "yes" || line == "y"
            server.withLock { $0 }?.confirmPairing(connection, accept)
        }.start()
    }
}

/// What `ancs provide` shows.
struct ProvideView: Sendable {
    var json: Bool

    /// Plays a player or clock step on the phone, and reports it.
    func mediaStep(_ step: ProvideScenario.Step, on player: MediaServer) async {
        switch step {
        case .player(let command):
            await player.performOnPhone(command)
            let playing = await player.player
            let title = playing.tracks.indices.contains(playing.index) ? playing.tracks[playing.index].title : ""
            line("scenario: \(TerminalLine.command(command)) pressed on the phone: “\(title)”, \(playing.state)",
                 json: .object([("event", .string("player")), ("command", .string(command.description)), ("title", .string(title)),
                                ("state", .string(playing.state.description))]))
        case .volume(let volume):
            await player.updatePlayer { $0.volume = volume }
            line("scenario: volume \(volume) on the phone", json: .object([("event", .string("volume")), ("volume", .double(volume))]))
        case .clock(let time, let zone):
            await player.setTime(time, zone: zone)
            line("scenario: the phone's clock set to \(time.date)\(zone.map { " \($0)" } ?? "")",
                 json: .object([("event", .string("clock")), ("time", .string(time.date.description))]
                               + (zone?.utcOffsetMinutes.map { [("utcOffsetMinutes", JSON.integer($0))] } ?? [])))
        default:
            break
        }
    }

    /// What an accessory did with the phone's player.
    func show(_ event: AMSServerEvent) {
        switch event {
        case .command(let connection, let command, let performed):
            line("accessory \(connection.rawValue): \(TerminalLine.command(command))\(performed ? "" : " (not supported now)")",
                 json: .object([("event", .string("mediaCommand")), ("connection", .integer(Int(connection.rawValue))),
                                ("command", .string(command.description)), ("performed", .bool(performed))]))
        case .registered(let connection, let registration):
            line("accessory \(connection.rawValue): registered for \(registration.entity) \(registration.attributeIDs)",
                 json: .object([("event", .string("mediaRegistered")), ("connection", .integer(Int(connection.rawValue))),
                                ("entity", .string(registration.entity.description)),
                                ("attributes", .array(registration.attributeIDs.map { .integer(Int($0)) }))]))
        case .refused(let connection, let characteristic, let code):
            line("accessory \(connection.rawValue): \(characteristic) write refused with \(code)",
                 json: .object([("event", .string("mediaRefused")), ("connection", .integer(Int(connection.rawValue))),
                                ("characteristic", .string(characteristic.identifier)), ("code", .integer(Int(code.rawValue)))]))
        }
    }

    func ready(address: String, transport: String, scenario: ProvideScenario) {
        line("provide: ready as \(address) on bumble:\(transport), \(scenario.preExisting.count) notifications waiting, "
             + "\(scenario.timeline.count) scenario steps",
             json: .object([("event", .string("ready")), ("address", .string(address)), ("transport", .string(transport))]))
    }

    func line(_ text: String, json object: JSON?) {
        if json {
            if let object { printLine(object.rendered) }
        } else {
            printLine(text)
        }
    }

    /// A scenario notification: `what` is waiting (there before the first
    /// session, announced PreExisting), added, modified or removed. These are
    /// scenario data, shown whole.
    func notification(_ what: String, key: String, uid: NotificationUID, _ notification: ProviderNotification) {
        let category = notification.categoryID
        var text = "scenario: \(what) “\(key)” as uid \(uid.rawValue): [\(notification.appIdentifier)] \(notification.title ?? "")"
        if let message = notification.message, !message.isEmpty { text += " — \(message)" }
        line(text, json: .object([("event", .string("notification")), ("change", .string(what)), ("key", .string(key)),
                                  ("uid", .integer(Int(uid.rawValue)))] + Self.contents(notification)
                                 + [("category", ANCSJSON.name(category.name, category.rawValue))]))
    }

    static func contents(_ notification: ProviderNotification) -> [(String, JSON)] {
        [("app", .string(notification.appIdentifier)), ("title", notification.title.map(JSON.string) ?? .null),
         ("subtitle", notification.subtitle.map(JSON.string) ?? .null), ("message", notification.message.map(JSON.string) ?? .null)]
    }

    /// What the Bumble host reports: status goes to stderr with --json.
    func show(_ notice: BumbleHostNotice) {
        switch notice {
        case .status(let text):
            if json {
                printErrorLine("provide: \(text)")
            } else {
                printLine("provide: \(text)")
            }
        case .pairingCode(let connection, let code):
            line("connection \(connection): numeric comparison, code \(code) (confirmed)",
                 json: .object([("event", .string("pairingCode")), ("connection", .integer(connection)), ("code", .string(code))]))
        case .pairingConfirmation(let connection, let code):
            line("connection \(connection): numeric comparison, code \(code): does the accessory show the same? (yes/no)",
                 json: .object([("event", .string("pairingCode")), ("connection", .integer(connection)), ("code", .string(code)),
                                ("ask", .bool(true))]))
        case .paired(let connection, let authenticated):
            line("connection \(connection): paired (\(authenticated ? "numeric comparison, MITM protection" : "Just Works, no MITM protection"))",
                 json: .object([("event", .string("paired")), ("connection", .integer(connection)),
                                ("method", .string(authenticated ? "numericComparison" : "justWorks"))]))
        case .pairingFailed(let connection, let reason):
            line("connection \(connection): pairing failed: \(reason); disconnecting",
                 json: .object([("event", .string("pairingFailed")), ("connection", .integer(connection)), ("reason", .string(reason))]))
        case .subscriptionRefused(let connection, let characteristic, let code):
            line("connection \(connection): subscription to \(characteristic) refused with \(code)"
                 + (code == .insufficientAuthorization ? " (notifications not allowed yet)" : ""),
                 json: .object([("event", .string("subscriptionRefused")), ("connection", .integer(connection)),
                                ("characteristic", .string(characteristic.identifier)), ("code", .integer(Int(code.rawValue))),
                                ("error", .string(code.name ?? "attError"))]))
        case .notificationsAllowed(let peer):
            line("notifications allowed for \(peer): its subscriptions are accepted from now on",
                 json: .object([("event", .string("notificationsAllowed")), ("peer", .string(peer))]))
        }
    }

    /// `--republish` or a scenario step: ANCS removed or added again, and Service Changed indicated (or not).
    func serviceChange(_ change: BumbleServiceChange) {
        let what = change.published ? "republished" : "unpublished"
        let told = change.serviceChanged
            ? "Service Changed indicated to \(change.indicatedConsumers) consumer\(change.indicatedConsumers == 1 ? "" : "s")"
            : "without Service Changed"
        line("provide: ANCS \(what) (handles \(change.startHandle)–\(change.endHandle)), \(told)",
             json: .object([("event", .string(what)), ("service", .string("ANCS")), ("startHandle", .integer(change.startHandle)),
                            ("endHandle", .integer(change.endHandle)), ("serviceChanged", .bool(change.serviceChanged)),
                            ("indicated", .integer(change.indicatedConsumers))]))
    }

    /// A fault of the scenario, as it is applied (`forgetBond` with the number of bonds forgotten).
    func fault(_ fault: ProvideScenario.Fault, count: Int? = nil) {
        let text: String
        var fields: [(String, JSON)] = [("event", .string("fault")), ("fault", .string(fault.name))]
        switch fault {
        case .sharing(let on):
            text = on ? "sharing on: notifications are shared with the accessory again"
                : "sharing off: Control Point writes answered 0x03 Write Not Permitted, no Notification Source event"
            fields.append(("on", .bool(on)))
        case .notificationSourceQuiet(let quiet):
            text = quiet ? "Notification Source quiet (the Control Point still answers)" : "Notification Source speaks again"
            fields.append(("quiet", .bool(quiet)))
        case .forgetSubscriptions:
            text = "subscriptions forgotten in silence (the accessory is not told)"
        case .lose(let characteristic):
            text = characteristic == .notificationSource
                ? "Notification Source subscription lost in silence (Data Source kept)"
                : "Data Source subscription lost in silence (Control Point writes taken, no response delivered)"
            fields.append(("characteristic", .string(characteristic == .notificationSource ? "notificationSource" : "dataSource")))
        case .forgetBond:
            text = "bonds forgotten (\(count ?? 0)), links dropped: the accessory must pair again"
            fields.append(("bonds", .integer(count ?? 0)))
        case .removeANCS(let indicated), .addANCS(let indicated):
            text = "\(fault.name), \(indicated ? "with" : "without") Service Changed"
            fields.append(("serviceChanged", .bool(indicated)))
        }
        line("scenario: \(text)", json: .object(fields))
    }

    func show(_ event: ProviderEvent, notification: ProviderNotification? = nil) {
        switch event {
        case .sessionStarted(let connection, let preExisting):
            line("\(connection): session started, \(preExisting) PreExisting",
                 json: .object([("event", .string("sessionStarted")), ("connection", .integer(Int(connection.rawValue))),
                                ("preExisting", .integer(preExisting))]))
        case .sessionEnded(let connection):
            line("\(connection): session ended",
                 json: .object([("event", .string("sessionEnded")), ("connection", .integer(Int(connection.rawValue)))]))
        case .notificationAttributesSent(let connection, let command):
            var text = "\(connection): attributes of uid \(command.notificationUID.rawValue) sent"
            if let title = notification?.title { text += ": \(title)" }
            line(text,
                 json: .object([("event", .string("notificationAttributesSent")), ("connection", .integer(Int(connection.rawValue))),
                                ("uid", .integer(Int(command.notificationUID.rawValue)))] + (notification.map(Self.contents) ?? [])))
        case .appAttributesSent(let connection, let command):
            line("\(connection): attributes of app \(command.appIdentifier) sent",
                 json: .object([("event", .string("appAttributesSent")), ("connection", .integer(Int(connection.rawValue))),
                                ("app", .string(command.appIdentifier))]))
        case .actionPerformed(let action):
            line("\(action.connection): \(action.actionID) action on uid \(action.notificationUID.rawValue): \(action.effect)",
                 json: .object([("event", .string("actionPerformed")), ("connection", .integer(Int(action.connection.rawValue))),
                                ("uid", .integer(Int(action.notificationUID.rawValue))), ("action", .string("\(action.actionID)")),
                                ("effect", .string("\(action.effect)"))]))
        case .commandRejected(let connection, let rejection):
            line("\(connection): command rejected: \(rejection)",
                 json: .object([("event", .string("commandRejected")), ("connection", .integer(Int(connection.rawValue))),
                                ("reason", .string("\(rejection)"))]))
        }
    }
}
