#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation
import Glibc

// A bond the iPhone forgot ("Forget This Device"). It shows on bluetoothd in
// one of these ways:
// - the phone pairs again and the agent is asked about a device bluetoothd
//   already holds a bond with (numeric comparison: the new keys replace the
//   old once the pairing is accepted, within --accept-pairing and --device);
// - the phone cannot encrypt with the bond and its new Just Works pairing is
//   refused by bluetoothd's JustWorksRepairing policy (default "never"): the
//   link stays unencrypted. bluetoothd 5.66 raises the security of a bonded
//   phone's link as it connects and then waits for it, so the services are
//   never resolved; a bluetoothd that does not wait meets the phone's refusal
//   of the subscriptions (0x05).
// Then the stale device is removed, so that the phone's next connection pairs
// anew (asked or accepted as any first pairing). A phone that refuses with
// 0x05 on an encrypted link waits for its user (notifications not allowed
// yet): its bond is kept.
extension BlueZConsumerTransport {
    /// A subscription refused for its security (0x05, 0x0F): if the phone is
    /// bonded and the link is not encrypted, the bond is stale. If it is
    /// neither bonded nor encrypted, and bluetoothd answered (`answered`: not
    /// a StartNotify left waiting while a pairing may be in progress), the
    /// pairing that bluetoothd asked for on the refusal failed: bluetoothd
    /// 5.66 then answers each later StartNotify from its own state at once,
    /// writing nothing, and the phone never sees a subscription again, even
    /// once it allows notifications. At the second such answer in a row the
    /// link is dropped, so that the phone connects and pairs afresh.
    func securityRefused(_ characteristic: ANCSCharacteristic, answered: Bool = false) async {
        guard let device else { return }
        await removeIfStale(device, "refused \(characteristic) for its security")
        guard answered, !isPaired(device), options.linkEncrypted(adapterPath, address(of: device)) == false else { return }
        link.unpairedRefusals += 1
        guard link.unpairedRefusals == 2 else { return }
        await disconnect(device, "refused \(characteristic) for its security again and the link could not be paired: disconnecting it so that it connects and pairs afresh")
    }

    /// A phone connected: its services resolved within `Options.resolveWait`,
    /// or the link is dropped (`resolutionChecked`); a bonded phone's link
    /// encrypted within `Options.encryptionWait`, or its bond is stale.
    func checkEncryption(of device: String) {
        resolveCheck?.cancel()
        resolveCheck = Task { [weak self, wait = options.resolveWait] in
            try? await Task.sleep(for: wait)
            guard !Task.isCancelled, let self else { return }
            await self.resolutionChecked(device)
        }
        guard isPaired(device) else { return }
        encryptionCheck?.cancel()
        encryptionCheck = Task { [weak self, wait = options.encryptionWait] in
            try? await Task.sleep(for: wait)
            guard !Task.isCancelled, let self else { return }
            await self.encryptionChecked(device)
        }
    }

    /// Still connected, and no session could start: bluetoothd never
    /// resolved the services (no stale bond: that is found sooner). Waiting
    /// longer changes nothing; the link is dropped so that the phone
    /// connects afresh, said in one line.
    func resolutionChecked(_ path: String) async {
        guard device == path, !linkIsUp, isConnected(path) else { return }
        await disconnect(path, "connected but its services were not resolved within \(options.resolveWait); disconnecting it so that it connects afresh")
    }

    /// Drops the phone's link, saying why in one line (the phone is not
    /// being reached, and waiting changes nothing).
    func disconnect(_ device: String, _ why: String) async {
        let address = address(of: device)
        status(BlueZStatus(kind: .warning, message: "\(address) \(why)"))
        do {
            _ = try await bus.call(destination: BlueZName.service, path: device, interface: BlueZName.device,
                                   member: "Disconnect", timeout: .seconds(10))
        } catch {
            status(BlueZStatus(kind: .warning, message: "cannot disconnect \(address) (\(error)); disconnect it with: bluetoothctl disconnect \(address)"))
        }
    }

    func encryptionChecked(_ path: String) async {
        guard device == path, !linkIsUp, isConnected(path) else { return }
        await removeIfStale(path, "connected but could not encrypt with the bond")
    }

    /// Removes the device's bond if the phone no longer has it: the device is
    /// paired and its link unencrypted. Said once per link.
    func removeIfStale(_ device: String, _ what: String) async {
        guard !link.bondLostTold, isPaired(device) else { return }
        let address = address(of: device)
        guard options.linkEncrypted(adapterPath, address) == false else { return }
        link.bondLostTold = true
        status(BlueZStatus(kind: .bondLost, message: "\(address) \(what): it no longer has this accessory's bond (Forget This Device); removing the stale bond: pair again from the iPhone"))
        sink.yield(.bondLost)
        do {
            _ = try await bus.call(destination: BlueZName.service, path: adapterPath, interface: BlueZName.adapter,
                                   member: "RemoveDevice", [.objectPath(device)], timeout: .seconds(10))
        } catch {
            status(BlueZStatus(kind: .warning, message: "cannot remove the stale bond of \(address) (\(error)); remove it with: bluetoothctl remove \(address)"))
        }
    }

    /// The agent is asked to pair a device: one that bluetoothd already has
    /// paired lost the bond on its side.
    func pairingRequested(_ devicePath: String) {
        guard isPaired(devicePath) else { return }
        status(BlueZStatus(kind: .bondLost, message: "\(address(of: devicePath)) asks to pair again: it no longer has this accessory's bond (Forget This Device)"))
        sink.yield(.bondLost)
    }
}

/// Whether the kernel's LE link to a peer is encrypted: the connection list of
/// the adapter (HCIGETCONNLIST on an HCI socket; no privilege needed).
/// bluetoothd does not publish it on D-Bus. Nil when it cannot be known.
public enum LinkSecurity {
    public static func isEncrypted(adapter path: String, peer address: String) -> Bool? {
        guard let name = path.split(separator: "/").last, name.hasPrefix("hci"), let index = UInt16(name.dropFirst(3)) else { return nil }
        let fd = socket(31 /* AF_BLUETOOTH */, Int32(SOCK_RAW.rawValue), 1 /* BTPROTO_HCI */)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // struct hci_conn_list_req { u16 dev_id; u16 conn_num; struct hci_conn_info conn_info[]; }
        // struct hci_conn_info { u16 handle; bdaddr_t bdaddr; u8 type; u8 out; u16 state; u32 link_mode; } (16 bytes)
        let capacity = 16
        var request = [UInt8](repeating: 0, count: 4 + 16 * capacity)
        request[0] = UInt8(index & 0xFF); request[1] = UInt8(index >> 8)
        request[2] = UInt8(capacity)
        let result = request.withUnsafeMutableBytes { ioctl(fd, 0x8004_48D4 /* HCIGETCONNLIST */, $0.baseAddress!) }
        guard result == 0 else { return nil }
        let count = Int(request[2]) | Int(request[3]) << 8
        var links: [(address: String, encrypted: Bool)] = []
        for entry in 0..<min(count, capacity) {
            let base = 4 + 16 * entry
            guard request[base + 8] == 0x80 /* LE_LINK */ else { continue }
            let address = Hex.string(request[(base + 2)..<(base + 8)].reversed(), uppercase: true, separator: ":")
            let mode = UInt32(request[base + 12]) | UInt32(request[base + 13]) << 8
            links.append((address, mode & 0x0004 /* HCI_LM_ENCRYPT */ != 0))
        }
        // The link by the peer's address, else the only LE link (a resolvable private address).
        if let link = links.first(where: { $0.address == address.uppercased() }) { return link.encrypted }
        return links.count == 1 ? links[0].encrypted : nil
    }
}
#endif
