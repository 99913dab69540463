#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

// `--device`: which phone may pair and connect; the others are told to
// disconnect, once per connection.
extension BlueZConsumerTransport {
    /// Whether `--device` lets this device connect.
    func accepts(_ devicePath: String) -> Bool {
        guard let wanted = options.device else { return true }
        return address(of: devicePath).uppercased() == wanted.uppercased()
    }

    /// The device's address: as bluetoothd knows it, else from its object
    /// path (`dev_AA_BB_…`). The one lookup of it here.
    func address(of devicePath: String) -> String {
        tree.property(devicePath, BlueZName.device, "Address")?.string ?? BlueZAgent.address(of: devicePath)
    }

    /// Whether the agent may let this device pair (or use a service), and its address.
    /// A device it lets pair that bluetoothd already holds a bond with lost
    /// its side of the bond (BlueZBond.swift).
    func pairingVerdict(_ devicePath: String, pairing: Bool) -> (allowed: Bool, address: String) {
        let allowed = accepts(devicePath)
        if allowed && pairing { pairingRequested(devicePath) }
        return (allowed, address(of: devicePath))
    }

    func refuseOtherDevices() {
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
}
#endif
