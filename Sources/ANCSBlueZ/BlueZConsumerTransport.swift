#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

/// Something `ancs listen` tells the person at the accessory.
public struct BlueZStatus: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case ready, connected, disconnected, pairing, paired, bondLost, resubscribed, serviceChanged, warning
    }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// A pairing request from bluetoothd to this program's agent.
public struct PairingRequest: Sendable {
    /// The phone's Bluetooth address.
    public var device: String
    /// The 6-digit passkey to compare with the phone's (numeric comparison),
    /// or nil for Just Works.
    public var passkey: UInt32?
}

/// The NC's GATT client over BlueZ (bluetoothd) on the system D-Bus.
///
/// It advertises (peripheral, ANCS in the solicitation UUIDs) so the iPhone
/// can connect, answers pairing through its own Agent1 (DisplayYesNo), and
/// follows the ANCS objects under the connected device through
/// ObjectManager's InterfacesAdded/Removed and PropertiesChanged, in the
/// order the bus delivers them. Observed bluetoothd 5.66 behaviour it
/// relies on:
/// - a bonded reconnection re-encrypts and bluetoothd re-enables the
///   notifications by itself (StartNotify then answers at once);
/// - after Service Changed the objects come back with `Notifying=false`:
///   the engine subscribes again on `serviceChanged(published: true)`;
/// - ATT errors come back as `org.bluez.Error.Failed` "Operation failed
///   with ATT error: 0xa2" (`BlueZ.result`); a Control Point write while
///   another is in progress answers `InProgress`, so writes are serialized
///   and retried.
///
/// One job per file: adapter set-up and closing here; the link as the object
/// tree tells it (BlueZLinkTracking.swift); `--device` (BlueZDevicePolicy.swift);
/// the GATT operations and their retries (BlueZOperations.swift); the
/// subscription watchdog (BlueZWatchdog.swift); one process per adapter
/// (AdapterLock.swift).
public actor BlueZConsumerTransport: GATTClientTransport {
    public struct Options: Sendable {
        /// `hci0`; nil: the first powered adapter.
        public var adapter: String?
        /// Only this phone (a Bluetooth address); nil: the first that connects with ANCS.
        public var device: String?
        /// The advertised local name.
        public var name: String
        /// How often the subscriptions are checked while the link is up.
        public var watchdogInterval: Duration
        /// How long a StartNotify may go unanswered before it is taken as
        /// refused for the link's security (BlueZOperations.swift).
        public var subscribeWait: Duration
        /// How long a bonded phone's link may stay unencrypted, its services
        /// unresolved, before its bond is taken as forgotten (BlueZBond.swift).
        public var encryptionWait: Duration
        /// How long a connected phone's link may stay without its services
        /// resolved (no session possible) before it is disconnected, so
        /// that the phone connects afresh (BlueZBond.swift): seen on
        /// bluetoothd 5.66 after a fast reconnection that encrypted at once
        /// (`setsockopt(BT_SECURITY): Invalid argument`, services never
        /// resolved).
        public var resolveWait: Duration
        /// Whether the adapter's (object path) link to a peer (address) is
        /// encrypted; nil when unknown. The kernel's connection list by
        /// default (`LinkSecurity`): bluetoothd does not publish it.
        public var linkEncrypted: @Sendable (_ adapter: String, _ peer: String) -> Bool?
        public init(adapter: String? = nil, device: String? = nil, name: String = "ANCS listen",
                    watchdogInterval: Duration = .seconds(15), subscribeWait: Duration = .seconds(10),
                    encryptionWait: Duration = .seconds(8), resolveWait: Duration = .seconds(30),
                    linkEncrypted: @escaping @Sendable (_ adapter: String, _ peer: String) -> Bool? = LinkSecurity.isEncrypted) {
            self.adapter = adapter
            self.device = device
            self.name = name
            self.watchdogInterval = watchdogInterval
            self.linkEncrypted = linkEncrypted
            self.subscribeWait = subscribeWait
            self.encryptionWait = encryptionWait
            self.resolveWait = resolveWait
        }
    }

    public nonisolated let events: AsyncThrowingStream<GATTClientEvent, any Error>
    let sink: AsyncThrowingStream<GATTClientEvent, any Error>.Continuation
    /// AMS and CTS on the same link, for a `MediaClient` (BlueZMedia.swift).
    public nonisolated let mediaEvents: AsyncThrowingStream<MediaClientEvent, any Error>
    let mediaSink: AsyncThrowingStream<MediaClientEvent, any Error>.Continuation
    let bus: DBusConnection
    let options: Options
    let status: @Sendable (BlueZStatus) -> Void
    let prompt: @Sendable (PairingRequest) async -> Bool

    /// The adapter in use (`/org/bluez/hci0`) and its address.
    public private(set) var adapterPath = ""
    public private(set) var adapterAddress = ""
    var tree = BlueZObjects()
    var device: String?
    var linkIsUp = false
    /// Moves on with each link held and ended: an answer of an older link's call is not this link's.
    var linkGeneration: UInt64 = 0
    /// What goes with the link held: a link that ends is one assignment (`endLink`).
    var link = LinkState()
    /// How many times the object tree was rescanned (`reassess`): when
    /// objects or properties change, never for a value once the link is up.
    var rescans = 0
    /// Whether a bonded phone that connected encrypts its link (BlueZBond.swift).
    var encryptionCheck: Task<Void, Never>?
    /// Whether a connected phone's services are resolved in time (BlueZBond.swift).
    var resolveCheck: Task<Void, Never>?
    var controlPointBusy = false
    var controlPointWaiters: [CheckedContinuation<Void, Never>] = []
    var tasks: [Task<Void, Never>] = []
    var closing = false
    var lock: AdapterLock?

    /// Devices `--device` shuts out that are connected: each is told to
    /// disconnect once per connection, and the person is told.
    var refused: Set<String> = []

    private init(bus: DBusConnection, options: Options, status: @escaping @Sendable (BlueZStatus) -> Void,
                 prompt: @escaping @Sendable (PairingRequest) async -> Bool) {
        self.bus = bus
        self.options = options
        self.status = status
        self.prompt = prompt
        (events, sink) = AsyncThrowingStream.makeStream()
        (mediaEvents, mediaSink) = AsyncThrowingStream.makeStream()
    }

    /// Connects to bluetoothd, takes the adapter, registers the agent and
    /// the advertisement. Throws a message a person can act on.
    public static func start(
        options: Options, bus: DBusConnection.Bus = .system,
        status: @escaping @Sendable (BlueZStatus) -> Void,
        prompt: @escaping @Sendable (PairingRequest) async -> Bool
    ) async throws(TransportError) -> BlueZConsumerTransport {
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus)
        } catch {
            throw TransportError(.unavailable, "cannot reach the system D-Bus (\(error.message)); is dbus running?")
        }
        let transport = BlueZConsumerTransport(bus: connection, options: options, status: status, prompt: prompt)
        do {
            try await transport.setUp()
        } catch {
            connection.close()
            throw error
        }
        return transport
    }

    func setUp() async throws(TransportError) {
        let signals: AsyncStream<DBusSignal>
        do {
            signals = try await bus.signals([
                DBusMatchRule(sender: BlueZName.service, interface: BlueZName.objectManager, path: "/"),
                DBusMatchRule(sender: BlueZName.service, interface: BlueZName.properties, member: "PropertiesChanged", pathNamespace: "/org/bluez"),
                DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged", arg0: BlueZName.service),
            ])
            let reply = try await bus.call(destination: BlueZName.service, path: "/", interface: BlueZName.objectManager,
                                           member: "GetManagedObjects", timeout: .seconds(10))
            for (path, interfaces) in reply.first?.managedObjects ?? [:] { tree.added(path, interfaces) }
        } catch {
            if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                throw TransportError(.unavailable, "bluetoothd is not running (no org.bluez on the system bus); start it: systemctl start bluetooth")
            }
            if error.name == "org.freedesktop.DBus.Error.AccessDenied" {
                throw TransportError(.permission, "the system bus refused access to bluetoothd (\(error.message)); run as a user in the 'bluetooth' group or as root")
            }
            throw TransportError(.unavailable, "bluetoothd: \(error)")
        }
        try chooseAdapter()
        do {
            lock = try AdapterLock(adapterAddress)
        } catch {
            throw TransportError(.unavailable, error.message)  // another consumer holds the adapter
        }
        try await prepareAdapter()
        tasks.append(Task { [weak self] in
            for await signal in signals { await self?.handle(signal) }
            await self?.busEnded()
        })
        tasks.append(Task { [weak self, interval = options.watchdogInterval] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                await self?.watchdog()
            }
        })
        reassess()
    }

    func chooseAdapter() throws(TransportError) {
        let adapters = tree.adapters
        guard !adapters.isEmpty else {
            throw TransportError(.unavailable, "bluetoothd sees no Bluetooth adapter (check `ancs doctor`, rfkill and the kernel's btusb)")
        }
        if let wanted = options.adapter {
            let path = wanted.hasPrefix("/") ? wanted : "/org/bluez/" + wanted
            guard adapters.contains(path) else {
                throw TransportError(.configuration, "--adapter \(wanted): no such adapter; bluetoothd has \(adapters.map { $0.split(separator: "/").last.map(String.init) ?? $0 }.joined(separator: ", "))")
            }
            adapterPath = path
        } else {
            adapterPath = adapters.first { tree.property($0, BlueZName.adapter, "Powered")?.bool == true } ?? adapters[0]
        }
        adapterAddress = tree.property(adapterPath, BlueZName.adapter, "Address")?.string ?? adapterPath
    }

    func prepareAdapter() async throws(TransportError) {
        let adapterName = adapterPath.split(separator: "/").last.map(String.init) ?? adapterPath
        do {
            if tree.property(adapterPath, BlueZName.adapter, "Powered")?.bool != true {
                try await bus.setProperty(destination: BlueZName.service, path: adapterPath, interface: BlueZName.adapter, "Powered", .boolean(true))
            }
            try await bus.setProperty(destination: BlueZName.service, path: adapterPath, interface: BlueZName.adapter, "Pairable", .boolean(true))
            try await bus.setProperty(destination: BlueZName.service, path: adapterPath, interface: BlueZName.adapter, "DiscoverableTimeout", .uint32(0))
        } catch {
            throw TransportError(.unavailable, "\(adapterName): cannot power it on or make it pairable (\(error)); try `rfkill unblock bluetooth`")
        }
        let prompt = self.prompt
        let status = self.status
        bus.export(BlueZName.agentPath) { [weak self] call in
            let transport = self
            BlueZAgent.handle(call, prompt: prompt, status: status) { path, pairing in
                await transport?.pairingVerdict(path, pairing: pairing) ?? (false, BlueZAgent.address(of: path))
            }
        }
        do {
            _ = try await bus.call(destination: BlueZName.service, path: "/org/bluez", interface: BlueZName.agentManager,
                                   member: "RegisterAgent", [.objectPath(BlueZName.agentPath), .string("DisplayYesNo")])
            _ = try await bus.call(destination: BlueZName.service, path: "/org/bluez", interface: BlueZName.agentManager,
                                   member: "RequestDefaultAgent", [.objectPath(BlueZName.agentPath)])
        } catch {
            throw TransportError(.unavailable, "cannot register the pairing agent with bluetoothd: \(error)")
        }
        let advertisement = BlueZAdvertisement(name: options.name)
        bus.export(BlueZName.advertisementPath) { call in advertisement.handle(call) }
        do {
            _ = try await bus.call(destination: BlueZName.service, path: adapterPath, interface: BlueZName.advertisingManager,
                                   member: "RegisterAdvertisement", [.objectPath(BlueZName.advertisementPath), .properties([:])])
        } catch {
            throw TransportError(.unavailable, "\(adapterName): cannot advertise (\(error)); does the adapter support LE? see `ancs doctor`")
        }
        status(BlueZStatus(kind: .ready, message: "advertising as “\(options.name)” on \(adapterName) (\(adapterAddress)); waiting for the iPhone"))
    }

    /// Unregisters what `start` registered and closes the bus connection; `events` finishes.
    public func close() async {
        guard !closing else { return }
        closing = true
        for task in tasks { task.cancel() }
        encryptionCheck?.cancel()
        resolveCheck?.cancel()
        for call in link.startNotifyCalls.values { call.cancel() }
        _ = try? await bus.call(destination: BlueZName.service, path: adapterPath, interface: BlueZName.advertisingManager,
                                member: "UnregisterAdvertisement", [.objectPath(BlueZName.advertisementPath)], timeout: .seconds(2))
        _ = try? await bus.call(destination: BlueZName.service, path: "/org/bluez", interface: BlueZName.agentManager,
                                member: "UnregisterAgent", [.objectPath(BlueZName.agentPath)], timeout: .seconds(2))
        bus.close()
        lock = nil
        if linkIsUp {
            sink.yield(.linkDown)
            mediaSink.yield(.linkDown)
        }
        linkIsUp = false
        sink.finish()
        mediaSink.finish()
        for waiter in controlPointWaiters { waiter.resume() }
        controlPointWaiters.removeAll()
    }
}

/// What the consumer transport knows of the link it holds: everything here
/// ends with the link (`BlueZConsumerTransport.endLink` makes a new one).
struct LinkState {
    /// ANCS is published on the link (Service Changed withdraws it).
    var ancsPublished = true
    var characteristics: [ANCSCharacteristic: String] = [:] {
        didSet { kinds = Dictionary(characteristics.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first }) }
    }
    /// The ANCS characteristic at each object path of the link: computed
    /// when objects appear or go, read for every value that arrives.
    var kinds: [String: ANCSCharacteristic] = [:]
    var subscribed: Set<ANCSCharacteristic> = []
    /// Notification Source values that came before the engine asked for them
    /// in this link (a bonded reconnection: bluetoothd re-enables them itself).
    var heldNotifications: [[UInt8]] = []
    var notificationSourceRequested = false
    /// The phone of this link was told to have forgotten the bond (once per link).
    var bondLostTold = false
    /// StartNotify calls not answered yet, and answers no subscribe has taken
    /// yet (nil: success), per characteristic (BlueZOperations.swift).
    var startNotifyCalls: [ANCSCharacteristic: Task<Void, Never>] = [:]
    var startNotifyAnswers: [ANCSCharacteristic: DBusError?] = [:]
    /// Security refusals answered in a row on a link neither paired nor
    /// encrypted (BlueZBond.swift, `securityRefused`).
    var unpairedRefusals = 0
    /// AMS's and CTS's characteristics on the link, by object path too (BlueZMedia.swift).
    var media: [MediaCharacteristic: String] = [:] {
        didSet { mediaKinds = Dictionary(media.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first }) }
    }
    var mediaKinds: [String: MediaCharacteristic] = [:]
    /// The services the media client was told of; nil until the link is told up.
    var mediaTold: MediaServices?
    /// The link, up but not told to the media client: the phone has not paired yet.
    var mediaWaiting: LinkInfo?
    /// Reads on the air, by path: whether their value's echo came yet.
    var mediaReads: [String: Bool] = [:]
    /// What a read returned, where its echo has not come yet.
    var mediaReadEchoes: [String: [UInt8]] = [:]
}
#endif
