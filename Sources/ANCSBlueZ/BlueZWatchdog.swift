#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

// The watchdog of the subscriptions.
extension BlueZConsumerTransport {
    /// A subscription bluetoothd dropped without telling (Notifying false
    /// while the link is up) is made again: StopNotify, then StartNotify.
    /// bluetoothd keeps one notify session per client and answers a
    /// StartNotify from a client that has one at once, writing no CCCD: the
    /// phone would never see the subscription made again.
    func watchdog() async {
        guard linkIsUp, link.ancsPublished else { return }
        for characteristic in [ANCSCharacteristic.dataSource, .notificationSource] where link.subscribed.contains(characteristic) {
            guard let path = link.characteristics[characteristic],
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
#endif
