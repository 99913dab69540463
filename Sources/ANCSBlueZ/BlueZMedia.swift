#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime

// AMS and CTS on the link the consumer holds: the transport is the
// `MediaClientTransport` of a `MediaClient` too. Their characteristics are
// found under the same device in bluetoothd's object tree, apart from
// ANCS's: a phone with no player still has a clock, and AMS can come and go
// (Service Changed) while ANCS stays.
//
// - The media link comes up with ANCS's once the phone is paired
//   (`mediaEvents`' `linkUp` names the services found), and goes down with
//   it. Not before: AMS needs an encrypted link, and operations made before
//   pairing are refused and retried by bluetoothd as it raises the link's
//   security. bluetoothd 5.66 (in the VM) lost the consumer's Data Source
//   subscription that way, its retried CCCD write failing ("Transport
//   endpoint is not connected") while AMS's and CTS's operations were on
//   the air; the link then dropped at ATT's timeout.
// - A service that appears or goes is told with `servicesChanged`; one whose
//   objects moved (a Service Changed that republished it) is told gone, then
//   back, so the client sets it up again.
// - A value bluetoothd publishes is a notification, except the echo of a
//   read: bluetoothd stores what `ReadValue` read in the `Value` property,
//   and announces it (before the read's reply). Values that come while a
//   read of the characteristic is on the air are that echo; so is the first
//   one after the reply, if none came during the read and it equals what
//   was read.
// - A read is `ReadValue`: bluetoothd reads on with Read Blob while a part
//   fills the MTU, so the value comes whole.
extension BlueZConsumerTransport: MediaClientTransport {
    /// Tells the media client that the link is up, with the services found,
    /// once the phone is paired (at once for a bonded phone).
    func mediaLinkUp(_ info: LinkInfo, device: String) {
        guard isPaired(device) else {
            link.mediaWaiting = info
            return
        }
        link.mediaWaiting = nil
        var info = info
        info.isEncrypted = true
        info.isBonded = tree.property(device, BlueZName.device, "Bonded")?.bool == true
        let found = tree.mediaCharacteristics(of: device)
        link.media = found
        let services = MediaServices(found)
        link.mediaTold = services
        mediaSink.yield(.linkUp(info, ams: services.ams, cts: services.cts))
    }

    /// Follows AMS and CTS on the link held (every rescan of the tree).
    func followMedia(of device: String) {
        if let waiting = link.mediaWaiting {
            mediaLinkUp(waiting, device: device)
            return
        }
        guard let told = link.mediaTold else { return }
        let found = tree.mediaCharacteristics(of: device)
        let services = MediaServices(found)
        // A service still there under other objects went and came back: told gone first.
        let amsMoved = told.ams && services.ams && MediaServices.paths(of: .ams, in: found) != MediaServices.paths(of: .ams, in: link.media)
        let ctsMoved = told.cts && services.cts && MediaServices.paths(of: .cts, in: found) != MediaServices.paths(of: .cts, in: link.media)
        if amsMoved || ctsMoved {
            mediaSink.yield(.servicesChanged(ams: services.ams && !amsMoved, cts: services.cts && !ctsMoved))
            link.mediaTold = MediaServices(ams: services.ams && !amsMoved, cts: services.cts && !ctsMoved)
        }
        link.media = found
        guard link.mediaTold != services else { return }
        link.mediaTold = services
        mediaSink.yield(.servicesChanged(ams: services.ams, cts: services.cts))
    }

    /// A value of an AMS or CTS characteristic (any other path is ignored).
    func deliverMedia(_ value: [UInt8], from path: String) {
        guard let kind = link.mediaKinds[path] else { return }
        if let echoed = link.mediaReads[path] {
            if !echoed { link.mediaReads[path] = true }  // the read's own value
            return
        }
        if let echo = link.mediaReadEchoes.removeValue(forKey: path), echo == value { return }
        mediaSink.yield(.notification(kind, value))
    }

    public func subscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        await mediaCall(characteristic, "StartNotify", [])
    }

    public func unsubscribe(_ characteristic: MediaCharacteristic) async -> ATTResult {
        await mediaCall(characteristic, "StopNotify", [])
    }

    public func write(_ characteristic: AMSCharacteristic, _ value: [UInt8]) async -> ATTResult {
        await mediaCall(.ams(characteristic), "WriteValue", [.bytes(value), .properties(["type": .string("request")])])
    }

    public func read(_ characteristic: MediaCharacteristic) async -> ATTReadResult {
        guard linkIsUp, !closing, let path = link.media[characteristic] else { return .transportFailure }
        let generation = linkGeneration
        link.mediaReads[path] = false
        link.mediaReadEchoes[path] = nil
        let outcome: Result<[UInt8], DBusError>
        do {
            let reply = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                           member: "ReadValue", [.properties([:])], timeout: Self.mediaOperationTimeout)
            outcome = .success(reply.first?.bytes ?? [])
        } catch {
            outcome = .failure(error)
        }
        guard generation == linkGeneration, linkIsUp else { return .transportFailure }
        let echoed = link.mediaReads.removeValue(forKey: path) ?? true
        switch outcome {
        case .success(let value):
            if !echoed { link.mediaReadEchoes[path] = value }
            return .value(value)
        case .failure(let error):
            switch BlueZ.result(errorName: error.name, message: error.message) {
            case .attError(let code): return .attError(code)
            case .success, .transportFailure: return .transportFailure
            }
        }
    }

    /// One GATT call on a media characteristic of the link held, its D-Bus
    /// error read as its ATT code (`BlueZ.result`).
    func mediaCall(_ characteristic: MediaCharacteristic, _ member: String, _ arguments: [DBusValue]) async -> ATTResult {
        guard linkIsUp, !closing, let path = link.media[characteristic] else { return .transportFailure }
        let generation = linkGeneration
        let result: ATTResult
        do {
            _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                   member: member, arguments, timeout: Self.mediaOperationTimeout)
            result = .success
        } catch {
            result = BlueZ.result(errorName: error.name, message: error.message)
        }
        return generation == linkGeneration && linkIsUp ? result : .transportFailure
    }

    /// ATT's own timeout, and a little more: bluetoothd answers within it.
    static let mediaOperationTimeout: Duration = .seconds(35)
}

/// Which of AMS and CTS a link has: AMS with its three characteristics,
/// CTS with Current Time.
struct MediaServices: Hashable {
    var ams: Bool
    var cts: Bool

    init(ams: Bool, cts: Bool) {
        self.ams = ams
        self.cts = cts
    }

    init(_ found: [MediaCharacteristic: String]) {
        ams = [AMSCharacteristic.remoteCommand, .entityUpdate, .entityAttribute].allSatisfy { found[.ams($0)] != nil }
        cts = found[.cts(.currentTime)] != nil
    }

    enum Service { case ams, cts }

    static func paths(of service: Service, in found: [MediaCharacteristic: String]) -> [String] {
        found.filter { key, _ in
            switch key {
            case .ams: service == .ams
            case .cts: service == .cts
            }
        }.values.sorted()
    }
}

extension BlueZObjects {
    /// The AMS and CTS characteristics under a device, by their services'
    /// and their own UUIDs.
    func mediaCharacteristics(of device: String) -> [MediaCharacteristic: String] {
        var services: [String: MediaServices.Service] = [:]
        for (path, interfaces) in objects where path.hasPrefix(device + "/") {
            guard let text = interfaces[BlueZName.gattService]?["UUID"]?.string, let uuid = BluetoothUUID(text) else { continue }
            if uuid == AMSUUID.service { services[path] = .ams }
            if uuid == CTSUUID.service { services[path] = .cts }
        }
        var found: [MediaCharacteristic: String] = [:]
        for (path, interfaces) in objects {
            guard let characteristic = interfaces[BlueZName.characteristic],
                  let service = characteristic["Service"]?.string, let kind = services[service],
                  let text = characteristic["UUID"]?.string, let uuid = BluetoothUUID(text) else { continue }
            switch kind {
            case .ams: if let ams = AMSCharacteristic(uuid: uuid) { found[.ams(ams)] = min(path, found[.ams(ams)] ?? path) }
            case .cts: if let cts = CTSCharacteristic(uuid: uuid) { found[.cts(cts)] = min(path, found[.cts(cts)] ?? path) }
            }
        }
        return found
    }
}
#endif
