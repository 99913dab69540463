import ANCS
import ANCSRuntime
import ANCSSimulation

/// The demo's story: what a simulated iPhone does over about 15 seconds, and
/// what the person at the accessory does in response. Shared by `ancs demo`,
/// the end-to-end tests and the air-time benchmark.
public struct DemoScenario: Sendable {
    public struct Notification: Sendable {
        public var appIdentifier: String
        public var title: String
        public var subtitle: String
        public var message: String
        public var category: CategoryID
        public var important: Bool
        public var positiveLabel: String?
        public var negativeLabel: String?
        public var date: ANCSDate

        public init(_ appIdentifier: String, _ title: String, _ message: String, subtitle: String = "", category: CategoryID,
                    important: Bool = false, positive: String? = nil, negative: String? = "Clear", date: ANCSDate) {
            self.appIdentifier = appIdentifier
            self.title = title
            self.subtitle = subtitle
            self.message = message
            self.category = category
            self.important = important
            self.positiveLabel = positive
            self.negativeLabel = negative
            self.date = date
        }
    }

    public enum Step: Sendable {
        /// The phone shows a new notification; `key` names it in later steps.
        case add(key: String, Notification)
        /// Its text changes (a message thread grows).
        case modify(key: String, message: String)
        /// Dealt with on the phone.
        case remove(key: String)
        /// The person at the accessory presses the positive or negative action.
        case act(key: String, ActionID)
    }

    /// What the phone's player and the person do with the music (AMS), once
    /// (not in later rounds).
    public enum MediaStep: Sendable {
        /// A button of the player pressed on the phone itself.
        case onPhone(RemoteCommandID)
        /// A button of the accessory's now-playing line pressed.
        case press(RemoteCommandID)
    }

    /// App display names the phone knows.
    public var apps: [(identifier: String, displayName: String)]
    /// There before the accessory connects: announced with PreExisting.
    public var preExisting: [(key: String, notification: Notification)]
    public var timeline: [(at: Duration, step: Step)]
    public var duration: Duration
    /// The phone's media player when the accessory connects.
    public var player = MediaPlayer()
    public var mediaTimeline: [(at: Duration, step: MediaStep)] = []
    /// The phone's clock when the accessory connects (CTS).
    public var phoneTime = CurrentTime(year: 2026, month: 11, day: 22, hour: 9, minute: 30, second: 0, dayOfWeek: 7)

    public static func at(_ hour: Int, _ minute: Int, _ second: Int = 0) -> ANCSDate {
        ANCSDate(year: 2026, month: 11, day: 22, hour: hour, minute: minute, second: second)
    }

    public static let standard = DemoScenario(
        apps: [
            ("com.apple.MobileSMS", "Messages"),
            ("com.apple.mobilemail", "Mail"),
            ("com.apple.mobilecal", "Calendar"),
            ("com.apple.mobilephone", "Phone"),
            ("net.whatsapp.WhatsApp", "WhatsApp"),
            ("com.tinyspeck.chatlyio", "Slack"),
            ("com.apple.news", "News"),
            ("com.strava.stravaride", "Strava"),
            ("com.apple.reminders", "Reminders"),
            ("com.apple.weather", "Weather"),
            ("com.apple.Health", "Health"),
            ("com.apple.podcasts", "Podcasts"),
        ],
        preExisting: [
            ("standup", Notification("com.apple.mobilecal", "Team stand-up", "Daily sync, room 4 — starts in 15 minutes",
                                     category: .schedule, negative: nil, date: at(9, 15))),
            ("reminder", Notification("com.apple.reminders", "Pick up bike", "Repair shop closes at 18:00",
                                      category: .other, date: at(8, 0))),
        ],
        timeline: [
            (.milliseconds(900), .add(key: "alice", Notification("com.apple.MobileSMS", "Alice", "On my way — 5 min 🚲", category: .social, date: at(9, 31, 2)))),
            (.milliseconds(2000), .add(key: "mail", Notification("com.apple.mobilemail", "Bike Shop", "Your order has shipped. Track it with the number 1Z 999 AA1 01 2345 6784.", subtitle: "Order #40213 shipped", category: .email, date: at(9, 31, 40)))),
            (.milliseconds(3100), .add(key: "call", Notification("com.apple.mobilephone", "Mum", "Incoming call", category: .incomingCall, important: true, positive: "Answer", negative: "Decline", date: at(9, 32, 5)))),
            (.milliseconds(5200), .act(key: "call", .positive)),
            (.milliseconds(6000), .add(key: "slack", Notification("com.tinyspeck.chatlyio", "#release", "Jonas: the 2.4 build is green, shipping after lunch ✅", category: .social, date: at(9, 35, 12)))),
            (.milliseconds(6900), .modify(key: "alice", message: "Parking now, see you in a sec")),
            (.milliseconds(7800), .add(key: "whatsapp", Notification("net.whatsapp.WhatsApp", "Familie 👨‍👩‍👧", "Oma: Kommt ihr am Sonntag zum Kaffee? ☕️", category: .social, date: at(9, 36, 30)))),
            (.milliseconds(8600), .add(key: "unknown", Notification("com.apple.mobilephone", "+44 20 7946 0958", "Incoming call", category: .incomingCall, important: true, positive: "Answer", negative: "Decline", date: at(9, 37, 1)))),
            (.milliseconds(10000), .act(key: "unknown", .negative)),
            (.milliseconds(10800), .add(key: "news", Notification("com.apple.news", "Top story", "Cities add 400 km of protected bike lanes in a single year", category: .news, date: at(9, 38, 0)))),
            (.milliseconds(11600), .remove(key: "mail")),
            (.milliseconds(12300), .act(key: "whatsapp", .negative)),
            (.milliseconds(13100), .add(key: "strava", Notification("com.strava.stravaride", "Morning ride", "You rode 10.2 km in 28:41 — a new best on Canal Loop 🏆", category: .healthAndFitness, date: at(9, 40, 12)))),
            (.milliseconds(13900), .add(key: "weather", Notification("com.apple.weather", "Rain in 20 minutes", "Light rain expected around 10:05", category: .other, date: at(9, 41, 0)))),
        ],
        duration: .seconds(15),
        player: MediaPlayer(name: "Music", tracks: [
            MediaTrack(artist: "Queen", album: "A Night at the Opera", title: "Bohemian Rhapsody", duration: 354.3),
            MediaTrack(artist: "Daft Punk", album: "Discovery", title: "Harder, Better, Faster, Stronger", duration: 224),
            MediaTrack(artist: "Sigur Rós", album: "Takk...", title: "Hoppípolla", duration: 268),
        ]),
        mediaTimeline: [
            (.milliseconds(500), .onPhone(.play)),
            (.milliseconds(4500), .press(.nextTrack)),
            (.milliseconds(9500), .press(.nextTrack)),
            (.milliseconds(12500), .press(.pause)),
        ]
    )

    /// Number of notifications the scenario shows in all (missed calls included).
    public var notificationCount: Int {
        var count = preExisting.count
        for (_, step) in timeline {
            switch step {
            case .add: count += 1
            case .act(let key, let action):
                if action == .negative, case .add(_, let n)? = timeline.first(where: { if case .add(key, _) = $0.step { return true } else { return false } })?.step,
                   n.category == .incomingCall { count += 1 }
            default: break
            }
        }
        return count
    }
}
