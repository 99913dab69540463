import ANCS
import ANCSDemo
import Foundation
import Yams

/// A scenario file that cannot be played: one line naming the file and the
/// place in it (`--scenario PATH: timeline[2]: ...`).
public struct ScenarioError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What `ancs provide` plays: apps, notifications there before the
/// accessory connects, and a timeline started by the first session.
public struct ProvideScenario: Sendable {
    public enum Step: Sendable {
        case add(key: String, ProviderNotification)
        case modify(key: String, message: String)
        case remove(key: String)
        /// A fault of real iPhones (docs/PROVIDE.md: "Act as an iPhone", faults).
        case fault(Fault)
        /// A button of the phone's player pressed on the phone (AMS; with `--media`).
        case player(RemoteCommandID)
        /// The player's volume set on the phone, 0 to 1 (AMS).
        case volume(Double)
        /// The phone's clock set, and its zone when given (CTS).
        case clock(CurrentTime, LocalTimeInformation?)
    }

    /// What iPhones do in the field that stops an accessory's notifications.
    public enum Fault: Sendable, Hashable {
        /// "Share System Notifications" off or on: off, CCCD writes are
        /// taken, Control Point writes answered 0x03, no Notification Source
        /// event; on, the subscribed consumers are announced everything.
        case sharing(Bool)
        /// Notification Source quiet (true) while the Control Point answers, or speaking again.
        case notificationSourceQuiet(Bool)
        /// Every consumer's subscriptions forgotten without telling it.
        case forgetSubscriptions
        /// One subscription lost in silence, the other kept: Notification
        /// Source announces nothing more, or Data Source delivers no
        /// response while the Control Point takes writes.
        case lose(ANCSCharacteristic)
        /// The phone forgets its bonds ("Forget This Device") and drops the links.
        case forgetBond
        /// ANCS removed from the GATT database, with or without Service Changed.
        case removeANCS(serviceChanged: Bool)
        /// ANCS added back, with or without Service Changed.
        case addANCS(serviceChanged: Bool)

        /// The step's name in a scenario file and in `--json`.
        public var name: String {
            switch self {
            case .sharing: "sharing"
            case .notificationSourceQuiet: "notificationSource"
            case .forgetSubscriptions: "forgetSubscriptions"
            case .lose: "lose"
            case .forgetBond: "forgetBond"
            case .removeANCS: "removeANCS"
            case .addANCS: "addANCS"
            }
        }
    }

    public var apps: [(identifier: String, displayName: String)] = []
    public var preExisting: [(key: String, notification: ProviderNotification)] = []
    public var timeline: [(at: Duration, step: Step)] = []
    /// The phone's player (AMS) when the run starts; nil: the demo's.
    public var player: MediaPlayer?
    /// The phone's clock (CTS) when the run starts, and its zone; nil: the
    /// computer's clock, in UTC.
    public var phoneTime: CurrentTime?
    public var zone: LocalTimeInformation?

    /// The demo scenario, less the accessory's own actions.
    public init(demo: DemoScenario) {
        apps = demo.apps
        preExisting = demo.preExisting.map { ($0.key, $0.notification.providerNotification) }
        player = demo.player
        for (at, step) in demo.mediaTimeline {
            if case .onPhone(let command) = step { timeline.append((at, .player(command))) }
        }
        timeline.sort { $0.at < $1.at }
        for (at, step) in demo.timeline {
            switch step {
            case .add(let key, let notification): timeline.append((at, .add(key: key, notification.providerNotification)))
            case .modify(let key, let message): timeline.append((at, .modify(key: key, message: message)))
            case .remove(let key): timeline.append((at, .remove(key: key)))
            case .act: break
            }
        }
    }

    public init() {}

    /// One line: what the scenario holds.
    public var summary: String {
        var adds = 0, modifies = 0, removes = 0, media = 0
        var faults: [String] = []
        for (_, step) in timeline {
            switch step {
            case .add: adds += 1
            case .modify: modifies += 1
            case .remove: removes += 1
            case .fault(let fault): faults.append(fault.name)
            case .player, .volume, .clock: media += 1
            }
        }
        let failing = (preExisting.map(\.notification) + timeline.compactMap { if case .add(_, let n) = $0.step { n } else { nil } })
            .filter { $0.positiveActionEffect == .fail || $0.negativeActionEffect == .fail }.count
        let seconds = timeline.last.map { Double($0.at.components.seconds) + Double($0.at.components.attoseconds) / 1e18 } ?? 0
        return "scenario: \(apps.count) apps, \(preExisting.count) pre-existing, \(adds) added, \(modifies) modified, "
            + "\(removes) removed over \(seconds) s, \(failing) with failing actions"
            + (faults.isEmpty ? "" : ", faults: \(faults.joined(separator: ", "))")
            + (player.map { ", a player of \($0.tracks.count) tracks" } ?? "") + (media > 0 ? ", \(media) player and clock steps" : "")
    }

    /// Sharing is off before the first session: a `sharing: off` step at 0
    /// s, applied when the scenario starts (`--share-after`).
    public var startsNotShared = false

    /// `--share-after`: sharing off from the start, on `after` the timeline starts.
    public mutating func shareAfter(_ after: Duration) {
        startsNotShared = true
        let index = timeline.firstIndex { $0.at > after } ?? timeline.count
        timeline.insert((after, .fault(.sharing(true))), at: index)
    }

    /// Error injection: every action answers 0xA3 Action failed.
    public mutating func failAllActions() {
        func failing(_ n: ProviderNotification) -> ProviderNotification {
            var n = n
            n.positiveActionEffect = .fail
            n.negativeActionEffect = .fail
            return n
        }
        preExisting = preExisting.map { ($0.key, failing($0.notification)) }
        timeline = timeline.map { entry in
            if case .add(let key, let n) = entry.step { return (entry.at, .add(key: key, failing(n))) }
            return entry
        }
    }
}

// MARK: - Scenario files

extension ProvideScenario {
    /// Reads a scenario file: JSON (`.json`) or YAML (anything else), the
    /// same document either way:
    ///
    /// ```yaml
    /// apps: [{id: com.apple.MobileSMS, name: Messages}]
    /// preExisting:
    ///   - {key: standup, app: com.apple.mobilecal, title: Team stand-up, category: schedule, date: 20261122T091500}
    /// timeline:
    ///   - {at: 0.9, add: {key: alice, app: com.apple.MobileSMS, title: Alice, message: On my way, negative: Clear}}
    ///   - {at: 5, modify: alice, message: Parking now}
    ///   - {at: 8, remove: alice}
    ///   - {at: 10, sharing: off}
    /// ```
    ///
    /// A step is `add`, `modify` (with `message`), `remove`, or one of the
    /// faults of real iPhones: `sharing: on|off`, `notificationSource:
    /// quiet|normal`, `forgetSubscriptions: true`, `lose:
    /// notificationSource|dataSource` (one subscription lost in silence),
    /// `forgetBond: true`, `removeANCS: true` and `addANCS: true` (with Service Changed), or
    /// `removeANCS: {serviceChanged: false}` (without).
    ///
    /// A notification: `key`, `app` (required), `title`, `subtitle`,
    /// `message`, `date` (yyyyMMdd'T'HHmmSS), `category` (name or number),
    /// `important`, `silent`, `positive`/`negative` (action labels: the
    /// action is announced when its label is given), and
    /// `positiveEffect`/`negativeEffect` (automatic, keep, remove,
    /// removeAndAddMissedCall, fail: error injection, 0xA3).
    ///
    /// `bytes` are the file's; `path` names it in errors and says JSON
    /// (`.json`) or YAML (anything else).
    public static func parse(_ bytes: [UInt8], path: String) throws(ScenarioError) -> ProvideScenario {
        let document: Any
        if path.lowercased().hasSuffix(".json") {
            do {
                document = try ScenarioJSON.parse(bytes)
            } catch {
                throw ScenarioError("--scenario \(path): \(error.line > 0 ? "line \(error.line), column \(error.column): " : "")not valid JSON: \(error.message)")
            }
        } else {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw ScenarioError("--scenario \(path): not UTF-8 text")
            }
            do {
                guard let node = try Yams.compose(yaml: text) else {
                    throw ScenarioError("--scenario \(path): empty YAML document")
                }
                try checkDuplicateKeys(node, path: path)
                document = node.any
            } catch let failure as ScenarioError {
                throw failure
            } catch {
                let text = "\(error)".split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && !$0.allSatisfy { $0 == "^" } }.joined(separator: "; ")
                throw ScenarioError("--scenario \(path): not valid YAML: \(text)")
            }
        }
        return try ScenarioReader(path: path).scenario(document)
    }

    /// YAML keeps the last of two equal keys in a mapping; a scenario file
    /// with one is a mistake (a step with `add` twice, say), named by line.
    static func checkDuplicateKeys(_ node: Node, path: String) throws(ScenarioError) {
        switch node {
        case .mapping(let mapping):
            var seen: [String: Mark?] = [:]
            for (key, value) in mapping {
                if let name = key.string {
                    if let first = seen[name] {
                        let here = key.mark.map { "line \($0.line), column \($0.column)" } ?? "a mapping"
                        let there = first.map { " (first at line \($0.line))" } ?? ""
                        throw ScenarioError("--scenario \(path): \(here): key `\(name)` appears twice in one mapping\(there)")
                    }
                    seen[name] = key.mark
                }
                try checkDuplicateKeys(value, path: path)
            }
        case .sequence(let sequence):
            for item in sequence { try checkDuplicateKeys(item, path: path) }
        default:
            break
        }
    }
}

/// Walks a decoded JSON/YAML document; every error names the file and the place.
struct ScenarioReader {
    var path: String

    func fail(_ place: String, _ message: String) -> ScenarioError {
        ScenarioError("--scenario \(path): \(place): \(message)")
    }

    func object(_ value: Any?, _ place: String) throws(ScenarioError) -> [String: Any] {
        guard let object = value as? [String: Any] else { throw fail(place, "expected a mapping") }
        return object
    }

    func list(_ value: Any?, _ place: String) throws(ScenarioError) -> [Any] {
        guard let value else { return [] }
        guard let list = value as? [Any] else { throw fail(place, "expected a list") }
        return list
    }

    func string(_ value: Any?, _ place: String) throws(ScenarioError) -> String? {
        switch value {
        case nil: return nil
        case let text as String: return text
        case let number as Int: return "\(number)"
        default: throw fail(place, "expected text")
        }
    }

    func bool(_ value: Any?, _ place: String) throws(ScenarioError) -> Bool {
        switch value {
        case nil: return false
        case let flag as Bool: return flag
        default: throw fail(place, "expected true or false")
        }
    }

    func seconds(_ value: Any?, _ place: String) throws(ScenarioError) -> Duration {
        let seconds: Double
        switch value {
        case let number as Double: seconds = number
        case let number as Int: seconds = Double(number)
        case let text as String where Double(text) != nil: seconds = Double(text)!
        default: throw fail(place, "`at` must be a number of seconds")
        }
        guard seconds >= 0 && seconds < 86_400 else { throw fail(place, "`at` must be between 0 and 86400 seconds") }
        return .milliseconds(Int((seconds * 1000).rounded()))
    }

    /// The longest attribute value ANCS carries: its length is a uint16.
    static let attributeLength = Int(UInt16.max)
    /// The longest value a consumer takes, by default, for an attribute it
    /// asks for without a max length (app names and identifiers, action
    /// labels): `ancs listen` rejects longer ones, and so may other accessories.
    static let unlimitedValueLength = ConsumerConfiguration().unlimitedValueLength

    func checkLength(_ value: String?, _ place: String, limit: Int, what: String) throws(ScenarioError) {
        guard let value, value.utf8.count > limit else { return }
        let reason = limit == Self.attributeLength
            ? "ANCS carries at most \(limit) bytes in an attribute"
            : "ANCS asks for it without a max length, and a consumer takes at most \(limit) bytes then (ancs listen does)"
        throw fail(place, "\(value.utf8.count) bytes is too long for \(what): \(reason)")
    }

    static let categories: [String: CategoryID] = {
        var names: [String: CategoryID] = [:]
        for raw in UInt8(0)...11 {
            let category = CategoryID(rawValue: raw)
            if let name = category.name { names[name.lowercased()] = category }
        }
        return names
    }()

    static let effects: [String: ProviderActionEffect] = [
        "automatic": .automatic, "keep": .keep, "remove": .remove, "removeandaddmissedcall": .removeAndAddMissedCall, "fail": .fail,
    ]

    func notification(_ value: Any?, _ place: String) throws(ScenarioError) -> (key: String, notification: ProviderNotification) {
        let fields = try object(value, place)
        let known: Set<String> = ["key", "app", "title", "subtitle", "message", "date", "category", "important", "silent",
                                  "positive", "negative", "positiveEffect", "negativeEffect"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail(place, "unknown field `\(unknown)` (known: \(known.sorted().joined(separator: ", ")))")
        }
        guard let key = try string(fields["key"], place + ".key"), !key.isEmpty else { throw fail(place, "`key` is required") }
        guard let app = try string(fields["app"], place + ".app"), !app.isEmpty else { throw fail(place, "`app` is required") }
        var category = CategoryID.other
        switch fields["category"] {
        case nil: break
        case let number as Int:
            guard (0...255).contains(number) else { throw fail(place + ".category", "\(number) is not 0…255") }
            category = CategoryID(rawValue: UInt8(number))
        case let name as String:
            guard let named = Self.categories[name.lowercased()] else {
                throw fail(place + ".category", "unknown category `\(name)`")
            }
            category = named
        default: throw fail(place + ".category", "expected a name or a number")
        }
        var date: ANCSDate?
        if let text = try string(fields["date"], place + ".date") {
            guard let parsed = ANCSDate(text) else { throw fail(place + ".date", "`\(text)` is not yyyyMMdd'T'HHmmSS") }
            date = parsed
        }
        func effect(_ name: String) throws(ScenarioError) -> ProviderActionEffect {
            guard let text = try string(fields[name], place + "." + name) else { return .automatic }
            guard let effect = Self.effects[text.lowercased()] else {
                throw fail(place + "." + name, "unknown effect `\(text)` (automatic, keep, remove, removeAndAddMissedCall, fail)")
            }
            return effect
        }
        let positive = try string(fields["positive"], place + ".positive")
        let negative = try string(fields["negative"], place + ".negative")
        try checkLength(app, place + ".app", limit: Self.unlimitedValueLength, what: "an app identifier")
        try checkLength(positive, place + ".positive", limit: Self.unlimitedValueLength, what: "an action label")
        try checkLength(negative, place + ".negative", limit: Self.unlimitedValueLength, what: "an action label")
        for field in ["title", "subtitle", "message"] {
            try checkLength(try string(fields[field], place + "." + field), place + "." + field, limit: Self.attributeLength, what: "a \(field)")
        }
        var flags: EventFlags = []
        if try bool(fields["important"], place + ".important") { flags.insert(.important) }
        if try bool(fields["silent"], place + ".silent") { flags.insert(.silent) }
        if positive != nil { flags.insert(.positiveAction) }
        if negative != nil { flags.insert(.negativeAction) }
        let notification = ProviderNotification(
            appIdentifier: app, categoryID: category, flags: flags,
            title: try string(fields["title"], place + ".title"), subtitle: try string(fields["subtitle"], place + ".subtitle"),
            message: try string(fields["message"], place + ".message"), date: date,
            positiveActionLabel: positive, negativeActionLabel: negative,
            positiveActionEffect: try effect("positiveEffect"), negativeActionEffect: try effect("negativeEffect"))
        return (key, notification)
    }

    static let mediaKinds = ["player", "volume", "time"]

    /// `player: {name, state: playing|paused, volume, tracks: [{artist, album, title, duration}]}`.
    func player(_ value: Any?, _ place: String) throws(ScenarioError) -> MediaPlayer {
        let fields = try object(value, place)
        if let unknown = fields.keys.sorted().first(where: { !["name", "state", "volume", "tracks"].contains($0) }) {
            throw fail(place, "unknown field `\(unknown)` (known: name, state, volume, tracks)")
        }
        var tracks: [MediaTrack] = []
        for (index, entry) in try list(fields["tracks"], place + ".tracks").enumerated() {
            let where_ = "\(place).tracks[\(index)]"
            let track = try object(entry, where_)
            if let unknown = track.keys.sorted().first(where: { !["artist", "album", "title", "duration"].contains($0) }) {
                throw fail(where_, "unknown field `\(unknown)` (known: artist, album, title, duration)")
            }
            guard let title = try string(track["title"], where_ + ".title") else { throw fail(where_, "`title` is required") }
            tracks.append(MediaTrack(artist: try string(track["artist"], where_ + ".artist") ?? "",
                                     album: try string(track["album"], where_ + ".album") ?? "", title: title,
                                     duration: try number(track["duration"], where_ + ".duration", in: 0...86_400) ?? 0))
        }
        guard !tracks.isEmpty else { throw fail(place, "`tracks` needs at least one track") }
        let state: PlaybackState
        switch try string(fields["state"], place + ".state") {
        case nil, "paused": state = .paused
        case "playing": state = .playing
        case let other?: throw fail(place + ".state", "`\(other)` is not playing or paused")
        }
        return MediaPlayer(name: try string(fields["name"], place + ".name") ?? "Music", tracks: tracks, state: state,
                           volume: try number(fields["volume"], place + ".volume", in: 0...1) ?? 0.5)
    }

    func number(_ value: Any?, _ place: String, in range: ClosedRange<Double>) throws(ScenarioError) -> Double? {
        let number: Double
        switch value {
        case nil: return nil
        case let value as Double: number = value
        case let value as Int: number = Double(value)
        default: throw fail(place, "expected a number")
        }
        guard range.contains(number) else { throw fail(place, "\(number) is not within \(range.lowerBound)…\(range.upperBound)") }
        return number
    }

    /// `time: "2026-11-28T14:53:07"` or `{at: "…", utcOffsetMinutes: 60}`.
    func clock(_ value: Any?, _ place: String) throws(ScenarioError) -> (CurrentTime, LocalTimeInformation?) {
        var text = value as? String
        var zone: LocalTimeInformation?
        if let fields = value as? [String: Any] {
            if let unknown = fields.keys.sorted().first(where: { !["at", "utcOffsetMinutes"].contains($0) }) {
                throw fail(place, "unknown field `\(unknown)` (known: at, utcOffsetMinutes)")
            }
            text = try string(fields["at"], place + ".at")
            if let minutes = try number(fields["utcOffsetMinutes"], place + ".utcOffsetMinutes", in: -720...840) {
                guard minutes.truncatingRemainder(dividingBy: 15) == 0 else { throw fail(place + ".utcOffsetMinutes", "must be a multiple of 15") }
                zone = LocalTimeInformation(utcOffsetMinutes: Int(minutes))
            }
        }
        guard let text else { throw fail(place, "expected \"yyyy-MM-ddTHH:mm:ss\" or {at, utcOffsetMinutes}") }
        let digits = text.split(whereSeparator: { "-T:".contains($0) }).map { Int($0) }
        guard digits.count == 6, let year = digits[0], let month = digits[1], let day = digits[2],
              let hour = digits[3], let minute = digits[4], let second = digits[5],
              (1582...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else {
            throw fail(place, "`\(text)` is not yyyy-MM-ddTHH:mm:ss")
        }
        // The day of the week (Sakamoto's method, 0 Sunday), as CTS's 1 Monday … 7 Sunday.
        let offsets = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4]
        let y = month < 3 ? year - 1 : year
        let weekday = (y + y / 4 - y / 100 + y / 400 + offsets[month - 1] + day) % 7
        return (CurrentTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                            dayOfWeek: weekday == 0 ? 7 : weekday), zone)
    }

    /// A media step: `player: play|pause|nextTrack|…` (a button on the phone),
    /// `volume: 0…1`, `time: …` (as the top level's).
    func mediaStep(_ kind: String, _ value: Any?, _ place: String) throws(ScenarioError) -> ProvideScenario.Step {
        switch kind {
        case "player":
            guard let name = try string(value, place), let command = RemoteCommandID(name: name), command.name != nil else {
                throw fail(place, "expected an AMS command: \(RemoteCommandID.all.compactMap(\.name).joined(separator: ", "))")
            }
            return .player(command)
        case "volume":
            guard let volume = try number(value, place, in: 0...1) else { throw fail(place, "expected a number") }
            return .volume(volume)
        default:
            let (time, zone) = try clock(value, place)
            return .clock(time, zone)
        }
    }

    static let faultKinds = ["sharing", "notificationSource", "forgetSubscriptions", "lose", "forgetBond", "removeANCS", "addANCS"]

    /// A fault step's value: `sharing: on|off` (or true/false),
    /// `notificationSource: quiet|normal`, `forgetSubscriptions: true`,
    /// `lose: notificationSource|dataSource`, `forgetBond: true`,
    /// `removeANCS`/`addANCS: true` or `{serviceChanged: bool}`.
    func fault(_ kind: String, _ value: Any?, _ place: String) throws(ScenarioError) -> ProvideScenario.Fault {
        func onOff(_ on: String, _ off: String) throws(ScenarioError) -> Bool {
            switch value {
            case let flag as Bool: return flag
            case let text as String where text.lowercased() == on: return true
            case let text as String where text.lowercased() == off: return false
            default: throw fail(place, "expected `\(on)` or `\(off)`")
            }
        }
        func yes() throws(ScenarioError) {
            guard (value as? Bool) == true else { throw fail(place, "expected `true`") }
        }
        func serviceChanged() throws(ScenarioError) -> Bool {
            if (value as? Bool) == true { return true }
            guard let fields = value as? [String: Any] else { throw fail(place, "expected `true` or `{serviceChanged: true|false}`") }
            if let unknown = fields.keys.sorted().first(where: { $0 != "serviceChanged" }) {
                throw fail(place, "unknown field `\(unknown)` (known: serviceChanged)")
            }
            guard let flag = fields["serviceChanged"] as? Bool else { throw fail(place + ".serviceChanged", "expected true or false") }
            return flag
        }
        switch kind {
        case "sharing": return .sharing(try onOff("on", "off"))
        case "notificationSource": return .notificationSourceQuiet(try onOff("quiet", "normal"))
        case "forgetSubscriptions": try yes(); return .forgetSubscriptions
        case "lose":
            switch value as? String {
            case "notificationSource": return .lose(.notificationSource)
            case "dataSource": return .lose(.dataSource)
            default: throw fail(place, "expected `notificationSource` or `dataSource`")
            }
        case "forgetBond": try yes(); return .forgetBond
        case "removeANCS": return .removeANCS(serviceChanged: try serviceChanged())
        default: return .addANCS(serviceChanged: try serviceChanged())
        }
    }

    func scenario(_ document: Any) throws(ScenarioError) -> ProvideScenario {
        let root = try object(document, "top level")
        if let unknown = root.keys.sorted().first(where: { !["apps", "preExisting", "timeline", "player", "time"].contains($0) }) {
            throw fail("top level", "unknown field `\(unknown)` (known: apps, preExisting, timeline, player, time)")
        }
        var scenario = ProvideScenario()
        if root["player"] != nil { scenario.player = try player(root["player"], "player") }
        if root["time"] != nil { (scenario.phoneTime, scenario.zone) = try clock(root["time"], "time") }
        for (index, entry) in try list(root["apps"], "apps").enumerated() {
            let place = "apps[\(index)]"
            let app = try object(entry, place)
            if let unknown = app.keys.sorted().first(where: { !["id", "name"].contains($0) }) {
                throw fail(place, "unknown field `\(unknown)` (known: id, name)")
            }
            guard let id = try string(app["id"], place + ".id"), let name = try string(app["name"], place + ".name") else {
                throw fail(place, "needs `id` and `name`")
            }
            try checkLength(id, place + ".id", limit: Self.unlimitedValueLength, what: "an app identifier")
            try checkLength(name, place + ".name", limit: Self.unlimitedValueLength, what: "an app's name")
            if let first = scenario.apps.firstIndex(where: { $0.identifier == id }) {
                throw fail(place + ".id", "`\(id)` is already apps[\(first)]")
            }
            scenario.apps.append((id, name))
        }
        // Keys of the notifications on the phone at each point (where each was
        // added), and of those removed (where), for the errors.
        var active: [String: String] = [:]
        var removed: [String: String] = [:]
        for (index, entry) in try list(root["preExisting"], "preExisting").enumerated() {
            let place = "preExisting[\(index)]"
            let parsed = try notification(entry, place)
            if let first = active[parsed.key] { throw fail(place, "key `\(parsed.key)` used twice (first at \(first))") }
            active[parsed.key] = place
            scenario.preExisting.append(parsed)
        }
        var last = Duration.zero
        for (index, entry) in try list(root["timeline"], "timeline").enumerated() {
            let place = "timeline[\(index)]"
            let step = try object(entry, place)
            let at = try seconds(step["at"], place + ".at")
            guard at >= last else { throw fail(place, "steps must be in time order") }
            last = at
            let kinds = ["add", "modify", "remove"] + Self.faultKinds + Self.mediaKinds
            if let unknown = step.keys.sorted().first(where: { !(["at", "message"] + kinds).contains($0) }) {
                throw fail(place, "unknown field `\(unknown)` (known: at, \(kinds.joined(separator: ", ")), message)")
            }
            let actions = kinds.filter { step[$0] != nil }
            guard actions.count == 1 else {
                if actions.isEmpty { throw fail(place, "a step is one of \(kinds.map { "`\($0)`" }.joined(separator: ", "))") }
                let named = actions.contains { Self.faultKinds.contains($0) } ? kinds.map { "`\($0)`" }.joined(separator: ", ") : "`add`, `modify` or `remove`"
                throw fail(place, "a step has one of \(named), this one has \(actions.map { "`\($0)`" }.joined(separator: " and ")): make them two steps")
            }
            if let kind = Self.mediaKinds.first(where: { step[$0] != nil }) {
                if step["message"] != nil { throw fail(place, "`message` goes with `modify`") }
                scenario.timeline.append((at, try mediaStep(kind, step[kind], place + "." + kind)))
                continue
            }
            if let kind = Self.faultKinds.first(where: { step[$0] != nil }) {
                if step["message"] != nil { throw fail(place, "`message` goes with `modify`") }
                scenario.timeline.append((at, .fault(try fault(kind, step[kind], place + "." + kind))))
                continue
            }
            /// The active notification `key` names, or an error saying why there is none.
            func activeKey(_ key: String) throws(ScenarioError) {
                guard active[key] == nil else { return }
                if let gone = removed[key] { throw fail(place, "notification `\(key)` was removed at \(gone)") }
                throw fail(place, "no notification has key `\(key)`")
            }
            if let add = step["add"] {
                let parsed = try notification(add, place + ".add")
                if let first = active[parsed.key] {
                    throw fail(place + ".add", "key `\(parsed.key)` is still in use (added at \(first)); remove that notification first or use another key")
                }
                active[parsed.key] = place
                removed[parsed.key] = nil
                if step["message"] != nil { throw fail(place, "`message` goes with `modify`; an added notification has its own") }
                scenario.timeline.append((at, .add(key: parsed.key, parsed.notification)))
            } else if let key = try string(step["modify"], place + ".modify") {
                try activeKey(key)
                guard let message = try string(step["message"], place + ".message") else { throw fail(place, "`modify` needs `message`") }
                try checkLength(message, place + ".message", limit: Self.attributeLength, what: "a message")
                scenario.timeline.append((at, .modify(key: key, message: message)))
            } else if let key = try string(step["remove"], place + ".remove") {
                try activeKey(key)
                if step["message"] != nil { throw fail(place, "`message` goes with `modify`, not `remove`") }
                removed[key] = place
                active[key] = nil
                scenario.timeline.append((at, .remove(key: key)))
            } else {
                throw fail(place, "`\(actions[0])` needs a notification key")
            }
        }
        return scenario
    }
}
