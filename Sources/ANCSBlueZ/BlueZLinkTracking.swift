#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

// The link as bluetoothd's object tree tells it: D-Bus signals kept in a
// local copy of the tree, the link state moved to what it says, and the
// values of the ANCS characteristics handed to the engine.
extension BlueZConsumerTransport {
    func busEnded() {
        guard !closing else { return }
        closing = true
        let error = TransportError(.stackEnded, "the D-Bus connection to bluetoothd closed")
        sink.finish(throwing: error)
        mediaSink.finish(throwing: error)
    }

    func handle(_ signal: DBusSignal) {
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
            if interface == BlueZName.characteristic, let mtu = changed["MTU"]?.integer, linkIsUp, link.characteristics.values.contains(signal.path) {
                sink.yield(.mtuChanged(mtu))
            }
            if interface == BlueZName.device, signal.path == device || device == nil {
                report(deviceChanges: changed, at: signal.path)
            }
        case ("org.freedesktop.DBus", "NameOwnerChanged"):
            if signal.arguments.count == 3, signal.arguments[2].string == "", !closing {
                closing = true
                let error = TransportError(.stackEnded, "bluetoothd stopped (org.bluez left the system bus)")
                sink.finish(throwing: error)
                mediaSink.finish(throwing: error)
            }
            return
        default:
            return
        }
        reassess()
    }

    func report(deviceChanges changed: [String: DBusValue], at path: String) {
        let address = address(of: path)
        guard accepts(path) else { return }
        if changed["Paired"]?.bool == true {
            status(BlueZStatus(kind: .paired, message: "paired with \(address)\(tree.property(path, BlueZName.device, "Bonded")?.bool == true ? " (bonded)" : "")"))
            Task { [bus] in
                try? await bus.setProperty(destination: BlueZName.service, path: path, interface: BlueZName.device, "Trusted", .boolean(true))
            }
        }
    }

    func isConnected(_ path: String) -> Bool {
        tree.property(path, BlueZName.device, "Connected")?.bool == true
    }

    /// Whether bluetoothd holds keys for the device (it paired).
    func isPaired(_ path: String) -> Bool {
        tree.property(path, BlueZName.device, "Paired")?.bool == true
    }

    /// Moves the link state to what the object tree says, telling the engine.
    func reassess(valueArrived: Bool = false) {
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
                    mediaSink.yield(.linkDown)
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
                checkEncryption(of: device)
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
            link.characteristics = current
            linkIsUp = true
            link.ancsPublished = true
            let mtu = current.values.compactMap { tree.property($0, BlueZName.characteristic, "MTU")?.integer }.max() ?? 23
            let info = LinkInfo(mtu: mtu, peer: address(of: device),
                                isEncrypted: isPaired(device),
                                isBonded: tree.property(device, BlueZName.device, "Bonded")?.bool == true)
            sink.yield(.linkUp(info))
            linkGeneration &+= 1
            mediaLinkUp(info, device: device)
            return
        }
        followMedia(of: device)
        if link.ancsPublished && !complete {
            link.ancsPublished = false
            link.subscribed.removeAll()
            link.startNotifyAnswers.removeAll()
            link.notificationSourceRequested = false
            link.characteristics = [:]
            status(BlueZStatus(kind: .serviceChanged, message: "the iPhone withdrew ANCS (Service Changed); waiting for it to come back"))
            sink.yield(.serviceChanged(published: false))
        } else if !link.ancsPublished && complete {
            link.ancsPublished = true
            link.characteristics = current
            status(BlueZStatus(kind: .serviceChanged, message: "ANCS is back (Service Changed); subscribing again"))
            sink.yield(.serviceChanged(published: true))
        } else if link.ancsPublished {
            link.characteristics = current
        }
    }

    /// The link held ended: what went with it goes (its StartNotify calls cancelled).
    func endLink() {
        for call in link.startNotifyCalls.values { call.cancel() }
        link = LinkState()
        linkGeneration &+= 1
    }

    func deliver(_ value: [UInt8], from path: String) {
        guard linkIsUp else { return }
        guard let kind = link.kinds[path] else {
            deliverMedia(value, from: path)
            return
        }
        if kind == .notificationSource && !link.notificationSourceRequested {
            link.heldNotifications.append(value)
            return
        }
        sink.yield(.notification(kind, value))
    }
}
#endif
