#if os(Linux)
import ANCS
import ANCSDBus

/// AMS and CTS under the stand-in's phone, as bluetoothd publishes them:
/// StartNotify and StopNotify answered, writes recorded (or refused with an
/// ATT code, as bluetoothd words it), and a read answered as bluetoothd
/// answers one: the value stored in the `Value` property first (announced
/// with PropertiesChanged), then the reply.
extension FakeBlueZ {
    static let ams = device + "/service0030"
    static let remoteCommand = ams + "/char0031"
    static let entityUpdate = ams + "/char0034"
    static let entityAttribute = ams + "/char0037"
    static let cts = device + "/service0040"
    static let currentTime = cts + "/char0041"
    static let localTime = cts + "/char0044"
    static let mediaPaths = [remoteCommand, entityUpdate, entityAttribute, currentTime, localTime]

    static func mediaObjects(ams: String = FakeBlueZ.ams, cts: String = FakeBlueZ.cts) -> [DBusDictEntry] {
        func service(_ path: String, _ uuid: BluetoothUUID) -> DBusDictEntry {
            DBusDictEntry(.objectPath(path), .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.GattService1"), .properties([
                "UUID": .string(uuid.description.lowercased()), "Device": .objectPath(device), "Primary": .boolean(true),
            ]))]))
        }
        func characteristic(_ path: String, _ service: String, _ uuid: BluetoothUUID, _ flags: [String]) -> DBusDictEntry {
            DBusDictEntry(.objectPath(path), .dictionary(key: "s", value: "a{sv}", [DBusDictEntry(.string("org.bluez.GattCharacteristic1"), .properties([
                "UUID": .string(uuid.description.lowercased()), "Service": .objectPath(service), "Flags": .strings(flags),
                "Notifying": .boolean(false), "MTU": .uint16(185),
            ]))]))
        }
        return [
            service(ams, AMSUUID.service),
            characteristic(ams + "/char0031", ams, AMSUUID.remoteCommand, ["write", "notify"]),
            characteristic(ams + "/char0034", ams, AMSUUID.entityUpdate, ["write", "notify"]),
            characteristic(ams + "/char0037", ams, AMSUUID.entityAttribute, ["read", "write"]),
            service(cts, CTSUUID.service),
            characteristic(cts + "/char0041", cts, CTSUUID.currentTime, ["read", "notify"]),
            characteristic(cts + "/char0044", cts, CTSUUID.localTimeInformation, ["read"]),
        ]
    }

    /// AMS and CTS appear (InterfacesAdded), answering under their paths.
    func addMedia(ams: String = FakeBlueZ.ams, cts: String = FakeBlueZ.cts) {
        for entry in Self.mediaObjects(ams: ams, cts: cts) {
            if let path = entry.key.string, path.contains("/char") { exportMedia(path) }
            connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded", [entry.key, entry.value])
        }
    }

    /// AMS goes (Service Changed removed it); CTS stays.
    func removeAMS(_ ams: String = FakeBlueZ.ams) {
        for suffix in ["/char0031", "/char0034", "/char0037"] {
            connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                            [.objectPath(ams + suffix), .strings(["org.bluez.GattCharacteristic1"])])
        }
        connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                        [.objectPath(ams), .strings(["org.bluez.GattService1"])])
    }

    private func exportMedia(_ path: String) {
        connection.export(path) { [state, connection] call in
            let (value, refusal) = state.withLock { state -> ([UInt8], UInt8?) in
                state.mediaCalls.append((path, call.member))
                if call.member == "WriteValue" {
                    state.mediaWrites.append((path, call.arguments.first?.bytes ?? []))
                    defer { state.mediaWriteRefusal = nil }
                    return ([], state.mediaWriteRefusal)
                }
                return (state.mediaValues[path] ?? [], nil)
            }
            switch call.member {
            case "ReadValue":
                connection.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(value)]), .strings([])])
                call.reply([.bytes(value)])
            case "WriteValue" where refusal != nil:
                call.fail("org.bluez.Error.Failed", "Operation failed with ATT error: 0x\(String(refusal!, radix: 16))")
            default:
                call.reply()
            }
        }
    }
}
#endif
