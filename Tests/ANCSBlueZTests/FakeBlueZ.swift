#if os(Linux)
import ANCS
import ANCSBlueZ
import ANCSDBus
import Foundation

/// A stand-in for bluetoothd on a private bus: the objects and replies the
/// transport depends on, with the behaviours observed on bluetoothd 5.66
/// (InProgress for a second write, "Operation failed with ATT error: 0xa2",
/// NotPermitted before the user allows notifications, Notifying true once a
/// StartNotify succeeded). Notify sessions are kept per client as bluetoothd
/// keeps them: the CCCD is written (`cccdWrites`, what the phone sees) when
/// the first session of a characteristic starts and when its last ends; a
/// StartNotify from a client that already has a session answers at once and
/// writes nothing.
final class FakeBlueZ: Sendable {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_F0_F0_F0_F0_F0_F0"
    static let service = device + "/service0010"
    static let ns = service + "/char0011"
    static let ds = service + "/char0014"
    static let cp = service + "/char0017"

    struct State {
        var startNotifyRefusals = 0
        /// StartNotify left unanswered (bluetoothd raising the security while
        /// the phone refuses), until `answerHeldStartNotify`.
        var holdStartNotify = false
        var heldStartNotify: [DBusIncomingCall] = []
        /// The error of a refused StartNotify: bluetoothd's for an ATT 0x05 answer by default.
        var startNotifyRefusal = (name: "org.bluez.Error.NotPermitted", message: "Not paired")
        var startNotifyCalls: [String] = []
        /// Clients with a notify session, per characteristic path.
        var notifySessions: [String: Set<String>] = [:]
        /// CCCD writes the phone saw, per characteristic path: true enables, false disables.
        var cccdWrites: [String: [Bool]] = [:]
        var writes: [[UInt8]] = []
        var writesInFlight = 0
        var maximumWritesInFlight = 0
        var writeReplies: [(name: String, message: String)?] = []
        var registered: [String] = []
        /// Who registered the agent (its unique bus name), to call it as bluetoothd does.
        var agentOwner: String?
        /// Device1 methods called, as (device path, member).
        var deviceCalls: [(path: String, member: String)] = []
        /// AMS and CTS (FakeBlueZMedia.swift): calls as (path, member), the bytes written, what a read returns.
        var mediaCalls: [(path: String, member: String)] = []
        var mediaWrites: [(path: String, bytes: [UInt8])] = []
        var mediaValues: [String: [UInt8]] = [:]
        /// The next media write is refused with this ATT code.
        var mediaWriteRefusal: UInt8?
    }

    let connection: DBusConnection
    let state = StateBox()

    final class StateBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value = State()
        func withLock<R>(_ body: (inout State) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&value)
        }
    }

    /// Each stand-in has its own adapter address: the one-consumer-per-adapter
    /// lock is machine-wide, and tests run in parallel.
    init(_ bus: PrivateBus, adapterAddress: String = FakeBlueZ.randomAddress()) async throws {
        connection = try bus.connect()
        guard try await connection.requestName("org.bluez") else { throw DBusError(name: "test", message: "org.bluez taken") }
        let objects = Self.objects(connected: false, adapterAddress: adapterAddress)
        connection.export("/") { call in call.reply([objects]) }
        connection.export("/org/bluez") { [state] call in
            state.withLock {
                $0.registered.append(call.member)
                if call.member == "RegisterAgent" { $0.agentOwner = call.sender }
            }
            call.reply()
        }
        connection.export(Self.adapter) { [state, connection] call in
            state.withLock { $0.registered.append(call.member) }
            call.reply()
            // As bluetoothd: the link drops, then the device goes with its GATT objects.
            if call.member == "RemoveDevice", call.arguments.first?.string == Self.device {
                connection.emit(path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                [.string("org.bluez.Device1"), .properties(["Connected": .boolean(false), "ServicesResolved": .boolean(false)]),
                                 .strings([])])
                for path in [Self.ns, Self.ds, Self.cp] {
                    connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                                    [.objectPath(path), .strings(["org.bluez.GattCharacteristic1"])])
                }
                connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                                [.objectPath(Self.service), .strings(["org.bluez.GattService1"])])
                connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                                [.objectPath(Self.device), .strings(["org.bluez.Device1"])])
            }
        }
        connection.export(Self.device) { [state] call in
            state.withLock { $0.deviceCalls.append((Self.device, call.member)) }
            call.reply()
        }
        for path in [Self.ns, Self.ds] {
            connection.export(path) { [state, connection] call in
                let client = call.sender
                if call.member == "StopNotify" {
                    let last = state.withLock { state -> Bool in
                        guard state.notifySessions[path]?.remove(client) != nil else { return false }
                        guard state.notifySessions[path]?.isEmpty == true else { return false }
                        state.cccdWrites[path, default: []].append(false)
                        return true
                    }
                    if last {
                        connection.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                        [.string("org.bluez.GattCharacteristic1"), .properties(["Notifying": .boolean(false)]), .strings([])])
                    }
                    call.reply()
                    return
                }
                guard call.member == "StartNotify" else { call.reply(); return }
                enum Outcome { case refused(name: String, message: String), alreadyNotifying, subscribed, held }
                let outcome = state.withLock { state -> Outcome in
                    state.startNotifyCalls.append(path)
                    if state.holdStartNotify {
                        state.heldStartNotify.append(call)
                        return .held
                    }
                    if path == Self.ns, state.startNotifyRefusals > 0 {
                        state.startNotifyRefusals -= 1
                        return .refused(name: state.startNotifyRefusal.name, message: state.startNotifyRefusal.message)
                    }
                    // bluetoothd: one session per client; a second StartNotify answers at once, writing nothing.
                    if state.notifySessions[path]?.contains(client) == true { return .alreadyNotifying }
                    if state.notifySessions[path, default: []].isEmpty { state.cccdWrites[path, default: []].append(true) }
                    state.notifySessions[path, default: []].insert(client)
                    return .subscribed
                }
                switch outcome {
                case .refused(let name, let message):
                    call.fail(name, message)
                case .alreadyNotifying:
                    call.reply()
                case .held:
                    break
                case .subscribed:
                    // As bluetoothd: the characteristic now notifies.
                    connection.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                    [.string("org.bluez.GattCharacteristic1"), .properties(["Notifying": .boolean(true)]), .strings([])])
                    call.reply()
                }
            }
        }
        connection.export(Self.cp) { [state] call in
            let (reply, overlapping) = state.withLock { state -> ((name: String, message: String)?, Bool) in
                state.writes.append(call.arguments.first?.bytes ?? [])
                state.writesInFlight += 1
                state.maximumWritesInFlight = max(state.maximumWritesInFlight, state.writesInFlight)
                return (state.writeReplies.isEmpty ? nil : state.writeReplies.removeFirst(), state.writesInFlight > 1)
            }
            Task {
                try? await Task.sleep(for: .milliseconds(30))
                state.withLock { $0.writesInFlight -= 1 }
                if overlapping {
                    call.fail("org.bluez.Error.InProgress", "In Progress")
                } else if let reply {
                    call.fail(reply.name, reply.message)
                } else {
                    call.reply()
                }
            }
        }
    }

    static func characteristic(_ uuid: BluetoothUUID, _ flags: [String]) -> DBusValue {
        .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.GattCharacteristic1"), .properties([
            "UUID": .string(uuid.description.lowercased()), "Service": .objectPath(service), "Flags": .strings(flags),
            "Notifying": .boolean(false), "MTU": .uint16(185),
        ]))])
    }

    static var ancsObjects: [DBusDictEntry] {
        [
            DBusDictEntry(.objectPath(service), .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.GattService1"), .properties([
                "UUID": .string(ANCSUUID.service.description.lowercased()), "Device": .objectPath(device), "Primary": .boolean(true),
            ]))])),
            DBusDictEntry(.objectPath(ns), characteristic(ANCSUUID.notificationSource, ["notify"])),
            DBusDictEntry(.objectPath(ds), characteristic(ANCSUUID.dataSource, ["notify"])),
            DBusDictEntry(.objectPath(cp), characteristic(ANCSUUID.controlPoint, ["write"])),
        ]
    }

    /// A bonded phone, known from an earlier connection: its GATT objects are cached.
    static func randomAddress() -> String {
        (0..<6).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined(separator: ":")
    }

    static func objects(connected: Bool, adapterAddress: String) -> DBusValue {
        var entries = [
            DBusDictEntry(.objectPath(adapter), .dictionary(key: "s", value: "a{sv}", [
                DBusDictEntry(.string("org.bluez.Adapter1"), .properties([
                    "Address": .string(adapterAddress), "Powered": .boolean(true), "Roles": .strings(["central", "peripheral"]),
                ])),
                DBusDictEntry(.string("org.bluez.LEAdvertisingManager1"), .properties(["SupportedInstances": .byte(4)])),
            ])),
            DBusDictEntry(.objectPath(device), .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.Device1"), .properties([
                "Address": .string("F0:F0:F0:F0:F0:F0"), "Name": .string("iPhone"), "Paired": .boolean(true), "Bonded": .boolean(true),
                "Connected": .boolean(connected), "ServicesResolved": .boolean(connected),
            ]))])),
        ]
        entries += ancsObjects
        return .dictionary(key: "o", value: "a{sa{sv}}", entries)
    }

    /// The object path bluetoothd gives a device with this address.
    static func devicePath(_ address: String) -> String {
        adapter + "/dev_" + address.replacingOccurrences(of: ":", with: "_")
    }

    /// Another device appears under the adapter (a stranger's phone), with its own object.
    func addDevice(address: String, connected: Bool) {
        let path = Self.devicePath(address)
        connection.export(path) { [state] call in
            state.withLock { $0.deviceCalls.append((path, call.member)) }
            call.reply()
        }
        connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded", [
            .objectPath(path),
            .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.Device1"), .properties([
                "Address": .string(address), "Name": .string("Stranger"), "Paired": .boolean(false), "Bonded": .boolean(false),
                "Connected": .boolean(connected), "ServicesResolved": .boolean(false),
            ]))]),
        ])
    }

    func setDevice(_ path: String, _ properties: [String: DBusValue]) {
        connection.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                        [.string("org.bluez.Device1"), .properties(properties), .strings([])])
    }

    /// Calls the registered agent as bluetoothd does: `member` with the device's path first.
    func callAgent(_ member: String, device: String, _ more: [DBusValue] = []) async throws(DBusError) {
        let owner = state.withLock { $0.agentOwner }
        _ = try await connection.call(destination: owner, path: "/org/swiftancs/agent", interface: "org.bluez.Agent1", member: member,
                                      [.objectPath(device)] + more, timeout: .seconds(10))
    }

    func setDevice(_ properties: [String: DBusValue]) {
        connection.emit(path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                        [.string("org.bluez.Device1"), .properties(properties), .strings([])])
    }

    /// The phone accepts at last: the held StartNotify calls succeed.
    func answerHeldStartNotify() {
        let held = state.withLock { state -> [DBusIncomingCall] in
            state.holdStartNotify = false
            defer { state.heldStartNotify.removeAll() }
            for call in state.heldStartNotify { state.notifySessions[call.path, default: []].insert(call.sender) }
            return state.heldStartNotify
        }
        for call in held {
            connection.emit(path: call.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                            [.string("org.bluez.GattCharacteristic1"), .properties(["Notifying": .boolean(true)]), .strings([])])
            call.reply()
        }
    }

    func notify(_ path: String, _ value: [UInt8]) {
        connection.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                        [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(value)]), .strings([])])
    }

    func removeANCS() {
        for path in [Self.ns, Self.ds, Self.cp] {
            connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                            [.objectPath(path), .strings(["org.bluez.GattCharacteristic1"])])
        }
        connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                        [.objectPath(Self.service), .strings(["org.bluez.GattService1"])])
    }

    func addANCS() {
        for entry in Self.ancsObjects {
            connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded", [entry.key, entry.value])
        }
    }
}

#endif
