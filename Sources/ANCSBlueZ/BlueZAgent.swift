#if os(Linux)
import ANCS
import ANCSDBus

/// The Agent1 object bluetoothd asks when pairing (capability DisplayYesNo:
/// it shows the passkey and asks yes or no).
///
/// `allows` says whether a device (its object path) may pair (or use a
/// service; `pairing` tells which) at all: with
/// `--device`, every other device's pairing and service authorization is
/// rejected (`org.bluez.Error.Rejected`) before anyone is asked.
enum BlueZAgent {
    static func handle(_ call: DBusIncomingCall, prompt: @escaping @Sendable (PairingRequest) async -> Bool,
                       status: @escaping @Sendable (BlueZStatus) -> Void,
                       allows: @escaping @Sendable (_ device: String, _ pairing: Bool) async -> (allowed: Bool, address: String)) {
        let devicePath = call.arguments.first?.string ?? ""
        let device = address(of: devicePath)
        switch (call.interface, call.member) {
        case (BlueZName.agent, "RequestConfirmation"):
            let passkey = call.arguments.dropFirst().first?.integer.map { UInt32($0) }
            ifAllowed(call, devicePath, pairing: true, allows, status) { address in
                await ask(call, PairingRequest(device: address, passkey: passkey), prompt, status)
            }
        case (BlueZName.agent, "RequestAuthorization"):
            ifAllowed(call, devicePath, pairing: true, allows, status) { address in
                await ask(call, PairingRequest(device: address, passkey: nil), prompt, status)
            }
        case (BlueZName.agent, "AuthorizeService"):
            ifAllowed(call, devicePath, pairing: false, allows, status) { _ in call.reply() }
        case (BlueZName.agent, "DisplayPasskey"):
            let passkey = call.arguments.dropFirst().first?.integer ?? 0
            status(BlueZStatus(kind: .pairing, message: "pairing with \(device): passkey \(sixDigits(UInt32(passkey)))"))
            call.reply()
        case (BlueZName.agent, "DisplayPinCode"):
            status(BlueZStatus(kind: .pairing, message: "pairing with \(device): PIN \(call.arguments.dropFirst().first?.string ?? "")"))
            call.reply()
        case (BlueZName.agent, "RequestPasskey"), (BlueZName.agent, "RequestPinCode"):
            call.fail("org.bluez.Error.Rejected", "this accessory cannot type a passkey")
        case (BlueZName.agent, "Cancel"):
            status(BlueZStatus(kind: .pairing, message: "pairing cancelled by bluetoothd"))
            call.reply()
        case (BlueZName.agent, "Release"):
            call.reply()
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.interface).\(call.member) is not handled here")
        }
    }

    /// Runs `body` (with the device's address) if the device may pair; otherwise rejects the call.
    private static func ifAllowed(_ call: DBusIncomingCall, _ devicePath: String, pairing: Bool,
                                  _ allows: @escaping @Sendable (String, Bool) async -> (allowed: Bool, address: String),
                                  _ status: @escaping @Sendable (BlueZStatus) -> Void,
                                  _ body: @escaping @Sendable (String) async -> Void) {
        Task {
            let verdict = await allows(devicePath, pairing)
            guard verdict.allowed else {
                status(BlueZStatus(kind: .pairing, message: "pairing with \(verdict.address) refused: not the --device phone"))
                call.fail("org.bluez.Error.Rejected", "\(verdict.address) is not the device this accessory is limited to")
                return
            }
            await body(verdict.address)
        }
    }

    private static func ask(_ call: DBusIncomingCall, _ request: PairingRequest, _ prompt: @escaping @Sendable (PairingRequest) async -> Bool,
                            _ status: @escaping @Sendable (BlueZStatus) -> Void) async {
        if await prompt(request) {
            call.reply()
        } else {
            status(BlueZStatus(kind: .pairing, message: "pairing with \(request.device) rejected"))
            call.fail("org.bluez.Error.Rejected", "rejected")
        }
    }

    static func address(of devicePath: String) -> String {
        guard let last = devicePath.split(separator: "/").last, last.hasPrefix("dev_") else { return devicePath }
        return last.dropFirst(4).replacingOccurrences(of: "_", with: ":")
    }

    static func sixDigits(_ passkey: UInt32) -> String {
        let text = String(passkey)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}

/// The LEAdvertisement1 object: a connectable peripheral soliciting ANCS,
/// which is how an iPhone finds an ANCS accessory.
struct BlueZAdvertisement: Sendable {
    var name: String

    var properties: [String: DBusValue] {
        [
            "Type": .string("peripheral"),
            "SolicitUUIDs": .strings([ANCSUUID.service.description.lowercased()]),
            "LocalName": .string(name),
            "Discoverable": .boolean(true),
        ]
    }

    func handle(_ call: DBusIncomingCall) {
        switch (call.interface, call.member) {
        case (BlueZName.properties, "GetAll"):
            if call.arguments.first?.string == BlueZName.advertisement {
                call.reply([.properties(properties)])
            } else {
                call.reply([.properties([:])])
            }
        case (BlueZName.properties, "Get"):
            if let name = call.arguments.dropFirst().first?.string, let value = properties[name] {
                call.reply([.variant(value)])
            } else {
                call.fail("org.freedesktop.DBus.Error.InvalidArgs", "no such property")
            }
        case (BlueZName.advertisement, "Release"):
            call.reply()
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.interface).\(call.member) is not handled here")
        }
    }
}

#endif
