#if os(Linux)
import ANCSDBus
import Foundation

/// What `ancs doctor` checks on a BlueZ machine, each finding with its fix.
public enum BlueZDoctor {
    public struct Finding: Sendable {
        public enum Level: String, Sendable { case ok, warning, problem }
        public var level: Level
        public var text: String
        public var fix: String?
        public init(level: Level, text: String, fix: String? = nil) {
            self.level = level
            self.text = text
            self.fix = fix
        }
    }

    /// The settings of `/etc/bluetooth/main.conf` that matter to an ANCS accessory.
    public static func mainConf(_ text: String) -> [Finding] {
        var values: [String: String] = [:]
        var section = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.hasPrefix(";") || line.isEmpty { continue }
            if line.hasPrefix("[") { section = line.trimmingCharacters(in: CharacterSet(charactersIn: "[]")); continue }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { values[section + "." + parts[0]] = parts[1] }
        }
        var findings: [Finding] = []
        switch values["General.ControllerMode"]?.lowercased() {
        case nil, "dual":
            findings.append(Finding(level: .ok, text: "ControllerMode = \(values["General.ControllerMode"] ?? "dual (default)"): LE is on"))
        case "le":
            findings.append(Finding(level: .ok, text: "ControllerMode = le"))
        case let mode?:
            findings.append(Finding(level: .problem, text: "ControllerMode = \(mode): LE is off, an iPhone cannot connect",
                                    fix: "set ControllerMode = dual (or le) in [General] of /etc/bluetooth/main.conf, then systemctl restart bluetooth"))
        }
        switch values["General.SecureConnections"]?.lowercased() {
        case "off":
            findings.append(Finding(level: .warning, text: "SecureConnections = off: pairing falls back to legacy (iOS accepts it, but SC is stronger)",
                                    fix: "remove the line or set SecureConnections = on in /etc/bluetooth/main.conf"))
        case let mode:
            findings.append(Finding(level: .ok, text: "SecureConnections = \(mode ?? "on (default)")"))
        }
        if let privacy = values["General.Privacy"]?.lowercased(), privacy != "off" {
            findings.append(Finding(level: .ok, text: "Privacy = \(privacy)"))
        }
        return findings
    }

    /// A BlueZ version, `major.minor`.
    public struct Version: Hashable, Sendable {
        public var major: Int
        public var minor: Int
    }

    /// `bluetoothd --version`'s "5.66" as 5 and 66.
    public static func version(_ text: String) -> Version? {
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        guard parts.count >= 2, let major = Int(parts[0]), let minor = Int(parts[1].prefix { $0.isNumber }) else { return nil }
        return Version(major: major, minor: minor)
    }

    public static func versionFinding(_ text: String?) -> Finding {
        guard let text, let version = version(text) else {
            return Finding(level: .problem, text: "bluetoothd not found", fix: "apt-get install bluez (5.66 or later)")
        }
        let major = version.major, minor = version.minor
        if major > 5 || (major == 5 && minor >= 56) {
            return Finding(level: .ok, text: "bluetoothd \(major).\(minor)")
        }
        return Finding(level: .warning, text: "bluetoothd \(major).\(minor) is old (tested with 5.66)",
                       fix: "use BlueZ 5.66 or later (Debian 12's bluez)")
    }

    /// Checks the running bluetoothd over D-Bus: adapters, LE, power, bonds.
    public static func live(bus: DBusConnection.Bus = .system, adapter: String?) async -> [Finding] {
        var findings: [Finding] = []
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus)
        } catch {
            return [Finding(level: .problem, text: "no system D-Bus: \(error.message)", fix: "start dbus (systemctl start dbus)")]
        }
        defer { connection.close() }
        var tree = BlueZObjects()
        do {
            let reply = try await connection.call(destination: BlueZName.service, path: "/", interface: BlueZName.objectManager,
                                                  member: "GetManagedObjects", timeout: .seconds(5))
            for (path, interfaces) in reply.first?.managedObjects ?? [:] { tree.added(path, interfaces) }
        } catch {
            return [Finding(level: .problem, text: "bluetoothd does not answer on the system bus (\(error.name))",
                            fix: "systemctl enable --now bluetooth")]
        }
        findings.append(Finding(level: .ok, text: "bluetoothd answers on the system bus"))
        var adapters = tree.adapters
        if let adapter { adapters = adapters.filter { $0.hasSuffix("/" + adapter) } }
        if adapters.isEmpty {
            findings.append(Finding(level: .problem, text: adapter.map { "no adapter \($0)" } ?? "no Bluetooth adapter",
                                    fix: "plug one in; check `rfkill list` and `dmesg | grep -i bluetooth`"))
        }
        for path in adapters {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            let address = tree.property(path, BlueZName.adapter, "Address")?.string ?? "?"
            let roles = tree.property(path, BlueZName.adapter, "Roles")?.strings ?? []
            let hasAdvertising = tree.objects[path]?[BlueZName.advertisingManager] != nil
            if roles.contains("peripheral") || hasAdvertising {
                let instances = tree.property(path, BlueZName.advertisingManager, "SupportedInstances")?.integer
                findings.append(Finding(level: .ok, text: "\(name) (\(address)): LE peripheral role supported\(instances.map { ", \($0) advertising slots free" } ?? "")"))
            } else {
                findings.append(Finding(level: .problem, text: "\(name) (\(address)): no LE advertising (LEAdvertisingManager1 missing)",
                                        fix: "the adapter or ControllerMode lacks LE; use a Bluetooth 4.0+ adapter and ControllerMode = dual"))
            }
            if tree.property(path, BlueZName.adapter, "Powered")?.bool == true {
                findings.append(Finding(level: .ok, text: "\(name) is powered"))
            } else {
                findings.append(Finding(level: .warning, text: "\(name) is off (ancs listen powers it on)",
                                        fix: "bluetoothctl power on; if it fails: rfkill unblock bluetooth"))
            }
            for device in tree.devices(under: path) {
                let deviceAddress = tree.property(device, BlueZName.device, "Address")?.string ?? device
                let deviceName = tree.property(device, BlueZName.device, "Name")?.string ?? "unnamed"
                let paired = tree.property(device, BlueZName.device, "Paired")?.bool == true
                let bonded = tree.property(device, BlueZName.device, "Bonded")?.bool ?? paired
                guard paired else { continue }
                if bonded {
                    findings.append(Finding(level: .ok, text: "bonded with \(deviceAddress) (\(deviceName))"))
                } else {
                    findings.append(Finding(level: .warning, text: "paired with \(deviceAddress) (\(deviceName)) without a bond: it will pair again on every connection",
                                            fix: "bluetoothctl remove \(deviceAddress), then pair again from the iPhone"))
                }
            }
        }
        return findings
    }
}

#endif
