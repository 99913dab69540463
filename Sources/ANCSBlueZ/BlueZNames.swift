#if os(Linux)
import ANCS
import ANCSDBus

/// BlueZ's D-Bus names (bluetoothd 5.x, `doc/*-api.txt`).
enum BlueZName {
    static let service = "org.bluez"
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let gattService = "org.bluez.GattService1"
    static let characteristic = "org.bluez.GattCharacteristic1"
    static let agentManager = "org.bluez.AgentManager1"
    static let agent = "org.bluez.Agent1"
    static let advertisingManager = "org.bluez.LEAdvertisingManager1"
    static let advertisement = "org.bluez.LEAdvertisement1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"

    /// Where this program's own objects live on the bus.
    static let agentPath = "/org/swiftancs/agent"
    static let advertisementPath = "/org/swiftancs/advertisement0"
}

/// BlueZ's object tree as this process last saw it.
struct BlueZObjects {
    var objects: [String: DBusInterfaces] = [:]

    mutating func added(_ path: String, _ interfaces: DBusInterfaces) {
        for (name, properties) in interfaces {
            objects[path, default: [:]][name] = properties
        }
    }

    mutating func removed(_ path: String, _ interfaces: [String]) {
        for name in interfaces { objects[path]?[name] = nil }
        if objects[path]?.isEmpty == true { objects[path] = nil }
    }

    mutating func changed(_ path: String, _ interface: String, _ changed: [String: DBusValue], invalidated: [String]) {
        guard objects[path] != nil else { return }
        for (key, value) in changed { objects[path]?[interface, default: [:]][key] = value.unwrapped }
        for key in invalidated { objects[path]?[interface]?[key] = nil }
    }

    func property(_ path: String, _ interface: String, _ name: String) -> DBusValue? {
        objects[path]?[interface]?[name]?.unwrapped
    }

    /// Adapters by path, sorted.
    var adapters: [String] { objects.keys.filter { objects[$0]?[BlueZName.adapter] != nil }.sorted() }

    func devices(under adapter: String) -> [String] {
        objects.keys.filter { $0.hasPrefix(adapter + "/") && objects[$0]?[BlueZName.device] != nil }.sorted()
    }

    /// The ANCS characteristics under a device, by the service's and the
    /// characteristics' UUIDs (BlueZ writes them in lower case).
    func ancsCharacteristics(of device: String) -> [ANCSCharacteristicPath] {
        var services: Set<String> = []
        for (path, interfaces) in objects where path.hasPrefix(device + "/") {
            if let uuid = interfaces[BlueZName.gattService]?["UUID"]?.string, BluetoothUUID(uuid) == ANCSUUID.service {
                services.insert(path)
            }
        }
        var result: [ANCSCharacteristicPath] = []
        for (path, interfaces) in objects {
            guard let characteristic = interfaces[BlueZName.characteristic],
                  let service = characteristic["Service"]?.string, services.contains(service),
                  let uuid = characteristic["UUID"]?.string else { continue }
            if let uuid = BluetoothUUID(uuid), let kind = ANCSCharacteristic(uuid: uuid) { result.append(ANCSCharacteristicPath(kind: kind, path: path)) }
        }
        return result.sorted { $0.path < $1.path }
    }
}

struct ANCSCharacteristicPath: Hashable {
    var kind: ANCSCharacteristic
    var path: String
}

#endif
