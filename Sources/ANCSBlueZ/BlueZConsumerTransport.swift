#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

/// Something `ancs listen` tells the person at the accessory.
public struct BlueZStatus: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case ready, connected, disconnected, pairing, paired, waitingForPermission, resubscribed, serviceChanged, warning
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
public actor BlueZConsumerTransport: GATTClientTransport {
    public struct Options: Sendable {
        /// `hci0`; nil: the first powered adapter.
        public var adapter: String?
        /// Only this phone (a Bluetooth address); nil: the first that connects with ANCS.
        public var device: String?
        /// The advertised local name.
        public var name: String
        /// How long StartNotify is retried while the phone refuses it (before
        /// the person allows notifications on the phone).
        public var permissionWait: Duration
        /// How often the subscriptions are checked while the link is up.
        public var watchdogInterval: Duration
        public init(adapter: String? = nil, device: String? = nil, name: String = "ANCS listen",
                    permissionWait: Duration = .seconds(300), watchdogInterval: Duration = .seconds(15)) {
            self.adapter = adapter
            self.device = device
            self.name = name
            self.permissionWait = permissionWait
            self.watchdogInterval = watchdogInterval
        }
    }

    public nonisolated let events: AsyncThrowingStream<GATTClientEvent, any Error>
    private let sink: AsyncThrowingStream<GATTClientEvent, any Error>.Continuation
    private let bus: DBusConnection
    private let options: Options
    private let status: @Sendable (BlueZStatus) -> Void
    private let prompt: @Sendable (PairingRequest) async -> Bool

    /// The adapter in use (`/org/bluez/hci0`) and its address.
    public private(set) var adapterPath = ""
    public private(set) var adapterAddress = ""
    private var tree = BlueZObjects()
    private var device: String?
    private var linkIsUp = false
    private var ancsPublished = true
    private var characteristics: [ANCSCharacteristic: String] = [:] {
        didSet { kinds = Dictionary(characteristics.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first }) }
    }
    /// The ANCS characteristic at each object path of the link: computed
    /// when objects appear or go, read for every value that arrives.
    private var kinds: [String: ANCSCharacteristic] = [:]
    /// How many times the object tree was rescanned (`reassess`): when
    /// objects or properties change, never for a value once the link is up.
    private(set) var rescans = 0
    private var subscribed: Set<ANCSCharacteristic> = []
    /// Notification Source values that came before the engine asked for them
    /// in this link (a bonded reconnection: bluetoothd re-enables them itself).
    private var heldNotifications: [[UInt8]] = []
    private var notificationSourceRequested = false
    private var controlPointBusy = false
    private var controlPointWaiters: [CheckedContinuation<Void, Never>] = []
    private var tasks: [Task<Void, Never>] = []
    private var closing = false
    private var lock: AdapterLock?

    private init(bus: DBusConnection, options: Options, status: @escaping @Sendable (BlueZStatus) -> Void,
                 prompt: @escaping @Sendable (PairingRequest) async -> Bool) {
        self.bus = bus
        self.options = options
        self.status = status
        self.prompt = prompt
        (events, sink) = AsyncThrowingStream.makeStream()
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

    private func setUp() async throws(TransportError) {
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

    private func chooseAdapter() throws(TransportError) {
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

    private func prepareAdapter() async throws(TransportError) {
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
            BlueZAgent.handle(call, prompt: prompt, status: status) { path in
                await transport?.pairingVerdict(path) ?? (false, BlueZAgent.address(of: path))
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
        _ = try? await bus.call(destination: BlueZName.service, path: adapterPath, interface: BlueZName.advertisingManager,
                                member: "UnregisterAdvertisement", [.objectPath(BlueZName.advertisementPath)], timeout: .seconds(2))
        _ = try? await bus.call(destination: BlueZName.service, path: "/org/bluez", interface: BlueZName.agentManager,
                                member: "UnregisterAgent", [.objectPath(BlueZName.agentPath)], timeout: .seconds(2))
        bus.close()
        lock = nil
        if linkIsUp { sink.yield(.linkDown) }
        linkIsUp = false
        sink.finish()
        for waiter in controlPointWaiters { waiter.resume() }
        controlPointWaiters.removeAll()
    }

    // MARK: - Signals

    private func busEnded() {
        guard !closing else { return }
        closing = true
        sink.finish(throwing: TransportError(.stackEnded, "the D-Bus connection to bluetoothd closed"))
    }

    private func handle(_ signal: DBusSignal) {
        switch (signal.interface, signal.member) {
        case (BlueZName.objectManager, "InterfacesAdded"):
            guard let path = signal.arguments.first?.string, let interfaces = signal.arguments.dropFirst().first?.interfaces else { return }
            tree.added(path, interfaces)
        case (BlueZName.objectManager, "InterfacesRemoved"):
            guard let path = signal.arguments.first?.string, let names = signal.arguments.dropFirst().first?.strings else { return }
            tree.removed(path, names)
        case (BlueZName.properties, "PropertiesChanged"):
            guard let interface = signal.arguments.first?.string, let changed = signal.arguments.dropFirst().first?.dictionary else { return }
            let invalidated = signal.arguments.dropFirst(2).first?.strings ?? []
            // A value first: the link may have to come up for it.
            if interface == BlueZName.characteristic, let value = changed["Value"]?.bytes {
                let others = changed.filter { $0.key != "Value" }
                if !others.isEmpty || !invalidated.isEmpty { tree.changed(signal.path, interface, others, invalidated: invalidated) }
                // A value changes nothing in the tree: the link's paths are
                // known once it is up, so a Data Source fragment costs no rescan.
                if !linkIsUp || !others.isEmpty || !invalidated.isEmpty { reassess(valueArrived: true) }
                deliver(value, from: signal.path)
                return
            }
            tree.changed(signal.path, interface, changed, invalidated: invalidated)
            if interface == BlueZName.characteristic, let mtu = changed["MTU"]?.integer, linkIsUp, characteristics.values.contains(signal.path) {
                sink.yield(.mtuChanged(mtu))
            }
            if interface == BlueZName.device, signal.path == device || device == nil {
                report(deviceChanges: changed, at: signal.path)
            }
        case ("org.freedesktop.DBus", "NameOwnerChanged"):
            if signal.arguments.count == 3, signal.arguments[2].string == "", !closing {
                closing = true
                sink.finish(throwing: TransportError(.stackEnded, "bluetoothd stopped (org.bluez left the system bus)"))
            }
            return
        default:
            return
        }
        reassess()
    }

    private func report(deviceChanges changed: [String: DBusValue], at path: String) {
        let address = address(of: path)
        guard accepts(path) else { return }
        if changed["Paired"]?.bool == true {
            status(BlueZStatus(kind: .paired, message: "paired with \(address)\(tree.property(path, BlueZName.device, "Bonded")?.bool == true ? " (bonded)" : "")"))
            Task { [bus] in
                try? await bus.setProperty(destination: BlueZName.service, path: path, interface: BlueZName.device, "Trusted", .boolean(true))
            }
        }
    }

    /// Whether `--device` lets this device connect.
    private func accepts(_ devicePath: String) -> Bool {
        guard let wanted = options.device else { return true }
        return address(of: devicePath).uppercased() == wanted.uppercased()
    }

    /// The device's address: as bluetoothd knows it, else from its object
    /// path (`dev_AA_BB_…`). The one lookup of it here.
    private func address(of devicePath: String) -> String {
        tree.property(devicePath, BlueZName.device, "Address")?.string ?? BlueZAgent.address(of: devicePath)
    }

    /// Whether the agent may let this device pair (or use a service), and its address.
    func pairingVerdict(_ devicePath: String) -> (allowed: Bool, address: String) {
        (accepts(devicePath), address(of: devicePath))
    }

    /// Devices `--device` shuts out that are connected: each is told to
    /// disconnect once per connection, and the person is told.
    private var refused: Set<String> = []

    private func refuseOtherDevices() {
        guard options.device != nil else { return }
        for path in tree.devices(under: adapterPath) {
            guard isConnected(path), !accepts(path) else {
                refused.remove(path)
                continue
            }
            guard refused.insert(path).inserted else { continue }
            let address = address(of: path)
            status(BlueZStatus(kind: .warning, message: "\(address) connected; disconnecting it: not the --device phone"))
            Task { [bus] in
                _ = try? await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.device, member: "Disconnect",
                                        timeout: .seconds(10))
            }
        }
    }

    private func isConnected(_ path: String) -> Bool {
        tree.property(path, BlueZName.device, "Connected")?.bool == true
    }

    /// Moves the link state to what the object tree says, telling the engine.
    private func reassess(valueArrived: Bool = false) {
        guard !closing else { return }
        rescans += 1
        refuseOtherDevices()
        if let current = device {
            if tree.objects[current]?[BlueZName.device] == nil || !isConnected(current) {
                let address = address(of: current)
                if linkIsUp {
                    linkIsUp = false
                    status(BlueZStatus(kind: .disconnected, message: "\(address) disconnected; waiting for it to come back"))
                    sink.yield(.linkDown)
                }
                endLink()
                device = nil
            }
        }
        if device == nil {
            device = tree.devices(under: adapterPath).first { isConnected($0) && accepts($0) && !tree.ancsCharacteristics(of: $0).isEmpty }
            if let device {
                let address = address(of: device)
                status(BlueZStatus(kind: .connected, message: "\(address) connected (\(tree.property(device, BlueZName.device, "Name")?.string ?? "unnamed"))"))
            }
        }
        guard let device else { return }
        let found = tree.ancsCharacteristics(of: device)
        var current: [ANCSCharacteristic: String] = [:]
        for item in found { current[item.kind] = item.path }
        let complete = current[.notificationSource] != nil && current[.controlPoint] != nil
        if !linkIsUp {
            let resolved = tree.property(device, BlueZName.device, "ServicesResolved")?.bool == true
            guard complete, resolved || valueArrived else { return }
            characteristics = current
            linkIsUp = true
            ancsPublished = true
            let mtu = current.values.compactMap { tree.property($0, BlueZName.characteristic, "MTU")?.integer }.max() ?? 23
            let info = LinkInfo(mtu: mtu, peer: address(of: device),
                                isEncrypted: tree.property(device, BlueZName.device, "Paired")?.bool == true,
                                isBonded: tree.property(device, BlueZName.device, "Bonded")?.bool == true)
            sink.yield(.linkUp(info))
            return
        }
        if ancsPublished && !complete {
            ancsPublished = false
            subscribed.removeAll()
            notificationSourceRequested = false
            characteristics = [:]
            status(BlueZStatus(kind: .serviceChanged, message: "the iPhone withdrew ANCS (Service Changed); waiting for it to come back"))
            sink.yield(.serviceChanged(published: false))
        } else if !ancsPublished && complete {
            ancsPublished = true
            characteristics = current
            status(BlueZStatus(kind: .serviceChanged, message: "ANCS is back (Service Changed); subscribing again"))
            sink.yield(.serviceChanged(published: true))
        } else if ancsPublished {
            characteristics = current
        }
    }

    private func endLink() {
        characteristics = [:]
        subscribed.removeAll()
        heldNotifications.removeAll()
        notificationSourceRequested = false
        ancsPublished = true
    }

    private func deliver(_ value: [UInt8], from path: String) {
        guard linkIsUp, let kind = kinds[path] else { return }
        if kind == .notificationSource && !notificationSourceRequested {
            heldNotifications.append(value)
            return
        }
        sink.yield(.notification(kind, value))
    }

    // MARK: - Operations

    public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard linkIsUp, let path = characteristics[characteristic] else { return .transportFailure }
        if characteristic == .notificationSource {
            // The engine now listens to Notification Source: hand over what came early.
            notificationSourceRequested = true
            for value in heldNotifications { sink.yield(.notification(.notificationSource, value)) }
            heldNotifications.removeAll()
        }
        let deadline = ContinuousClock.now + options.permissionWait
        var delay = Duration.seconds(1)
        var told = false
        while true {
            do {
                _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                       member: "StartNotify", timeout: .seconds(35))
                subscribed.insert(characteristic)
                if told { status(BlueZStatus(kind: .resubscribed, message: "notifications allowed; subscribed to \(characteristic)")) }
                return .success
            } catch {
                guard linkIsUp, characteristics[characteristic] == path else { return .transportFailure }
                let waitable = error.name == "org.bluez.Error.InProgress" || error.name == "org.bluez.Error.NotPermitted"
                    || error.name == "org.bluez.Error.NotAuthorized" || error.name == "org.bluez.Error.AuthenticationFailed"
                    || BlueZ.result(errorName: error.name, message: error.message) == .attError(.insufficientAuthentication)
                    || BlueZ.result(errorName: error.name, message: error.message) == .attError(.insufficientEncryption)
                guard waitable, ContinuousClock.now + delay < deadline else {
                    return BlueZ.result(errorName: error.name, message: error.message)
                }
                if error.name != "org.bluez.Error.InProgress" {
                    told = true
                    status(BlueZStatus(kind: .waitingForPermission,
                                       message: "the iPhone refused \(characteristic) (\(error.message.isEmpty ? error.name : error.message)): allow notifications for this accessory on the iPhone (Settings › Bluetooth › ⓘ › Share System Notifications); retrying in \(delay.components.seconds) s"))
                }
                try? await Task.sleep(for: error.name == "org.bluez.Error.InProgress" ? .milliseconds(200) : delay)
                if error.name != "org.bluez.Error.InProgress" { delay = min(delay * 2, .seconds(15)) }
            }
        }
    }

    public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard let path = characteristics[characteristic] else { return .transportFailure }
        subscribed.remove(characteristic)
        do {
            _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                   member: "StopNotify", timeout: .seconds(10))
            return .success
        } catch {
            return BlueZ.result(errorName: error.name, message: error.message)
        }
    }

    public func writeControlPoint(_ value: [UInt8]) async -> ATTResult {
        // One write at a time: bluetoothd answers a second one InProgress.
        while controlPointBusy && !closing {
            await withCheckedContinuation { controlPointWaiters.append($0) }
        }
        controlPointBusy = true
        defer {
            controlPointBusy = false
            if !controlPointWaiters.isEmpty { controlPointWaiters.removeFirst().resume() }
        }
        let deadline = ContinuousClock.now + .seconds(35)
        while true {
            guard linkIsUp, !closing, let path = characteristics[.controlPoint] else { return .transportFailure }
            do {
                _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic, member: "WriteValue",
                                       [.bytes(value), .properties(["type": .string("request")])], timeout: .seconds(35))
                return .success
            } catch {
                if error.name == "org.bluez.Error.InProgress", ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(50))
                    continue
                }
                return BlueZ.result(errorName: error.name, message: error.message)
            }
        }
    }

    // MARK: - Watchdog

    /// A subscription bluetoothd dropped without telling (Notifying false
    /// while the link is up) is made again: StopNotify, then StartNotify.
    /// bluetoothd keeps one notify session per client and answers a
    /// StartNotify from a client that has one at once, writing no CCCD: the
    /// phone would never see the subscription made again.
    private func watchdog() async {
        guard linkIsUp, ancsPublished else { return }
        for characteristic in [ANCSCharacteristic.dataSource, .notificationSource] where subscribed.contains(characteristic) {
            guard let path = characteristics[characteristic],
                  tree.property(path, BlueZName.characteristic, "Notifying")?.bool == false else { continue }
            _ = try? await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                    member: "StopNotify", timeout: .seconds(10))
            do {
                _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                       member: "StartNotify", timeout: .seconds(35))
                status(BlueZStatus(kind: .resubscribed, message: "\(characteristic) had stopped notifying; subscribed again"))
            } catch {
                status(BlueZStatus(kind: .warning, message: "\(characteristic) stopped notifying and StartNotify failed: \(error)"))
            }
        }
    }
}

/// One `ancs listen` per adapter: an abstract Unix socket named after the
/// adapter's address, held for the life of the process (the kernel frees it
/// when the process ends, however it ends).
final class AdapterLock: @unchecked Sendable {
    private let descriptor: Int32

    struct Failure: Error { var message: String }

    init(_ adapterAddress: String) throws(Failure) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("swift-ancs/listen/\(adapterAddress)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer[0] = 0  // abstract namespace
            for (i, byte) in name.prefix(buffer.count - 1).enumerated() { buffer[i + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + min(name.count, 106))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else {
            let busy = errno == EADDRINUSE
            Glibc.close(fd)
            throw Failure(message: busy
                ? "another ancs listen is already using the adapter \(adapterAddress); stop it first (one consumer per adapter)"
                : "cannot take the adapter lock: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    deinit { Glibc.close(descriptor) }
}

#endif
