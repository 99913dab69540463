#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

// The engine's GATT operations on bluetoothd: StartNotify and StopNotify,
// and Control Point writes one at a time, each retried as its errors allow.
extension BlueZConsumerTransport {
    public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard linkIsUp, let path = characteristics[characteristic] else { return .transportFailure }
        if characteristic == .notificationSource {
            // The engine now listens to Notification Source: hand over what came early.
            notificationSourceRequested = true
            for value in heldNotifications { sink.yield(.notification(.notificationSource, value)) }
            heldNotifications.removeAll()
        }
        let deadline = ContinuousClock.now + options.permissionWait
        var delay = Duration.seconds(1)
        var told = false
        while true {
            do {
                _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                       member: "StartNotify", timeout: .seconds(35))
                subscribed.insert(characteristic)
                if told { status(BlueZStatus(kind: .resubscribed, message: "notifications allowed; subscribed to \(characteristic)")) }
                return .success
            } catch {
                guard linkIsUp, characteristics[characteristic] == path else { return .transportFailure }
                let waitable = error.name == "org.bluez.Error.InProgress" || error.name == "org.bluez.Error.NotPermitted"
                    || error.name == "org.bluez.Error.NotAuthorized" || error.name == "org.bluez.Error.AuthenticationFailed"
                    || BlueZ.result(errorName: error.name, message: error.message) == .attError(.insufficientAuthentication)
                    || BlueZ.result(errorName: error.name, message: error.message) == .attError(.insufficientEncryption)
                guard waitable, ContinuousClock.now + delay < deadline else {
                    return BlueZ.result(errorName: error.name, message: error.message)
                }
                if error.name != "org.bluez.Error.InProgress" {
                    told = true
                    status(BlueZStatus(kind: .waitingForPermission,
                                       message: "the iPhone refused \(characteristic) (\(error.message.isEmpty ? error.name : error.message)): allow notifications for this accessory on the iPhone (Settings › Bluetooth › ⓘ › Share System Notifications); retrying in \(delay.components.seconds) s"))
                }
                try? await Task.sleep(for: error.name == "org.bluez.Error.InProgress" ? .milliseconds(200) : delay)
                if error.name != "org.bluez.Error.InProgress" { delay = min(delay * 2, .seconds(15)) }
            }
        }
    }

    public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard let path = characteristics[characteristic] else { return .transportFailure }
        subscribed.remove(characteristic)
        do {
            _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                   member: "StopNotify", timeout: .seconds(10))
            return .success
        } catch {
            return BlueZ.result(errorName: error.name, message: error.message)
        }
    }

    public func writeControlPoint(_ value: [UInt8]) async -> ATTResult {
        // One write at a time: bluetoothd answers a second one InProgress.
        while controlPointBusy && !closing {
            await withCheckedContinuation { controlPointWaiters.append($0) }
        }
        controlPointBusy = true
        defer {
            controlPointBusy = false
            if !controlPointWaiters.isEmpty { controlPointWaiters.removeFirst().resume() }
        }
        let deadline = ContinuousClock.now + .seconds(35)
        while true {
            guard linkIsUp, !closing, let path = characteristics[.controlPoint] else { return .transportFailure }
            do {
                _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic, member: "WriteValue",
                                       [.bytes(value), .properties(["type": .string("request")])], timeout: .seconds(35))
                return .success
            } catch {
                if error.name == "org.bluez.Error.InProgress", ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(50))
                    continue
                }
                return BlueZ.result(errorName: error.name, message: error.message)
            }
        }
    }
}
#endif
