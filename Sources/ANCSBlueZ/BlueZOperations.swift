#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

// The engine's GATT operations on bluetoothd: StartNotify and StopNotify,
// and Control Point writes one at a time. A refusal comes back once, with its
// ATT code: the engine asks again (`ConsumerConfiguration.retryInterval`) and
// tells the application why, so nothing here waits for the user.
//
// One refusal comes without its code. A CCCD write the phone refuses for its
// security (0x05) makes bluetoothd 5.66 raise the link's security and write
// again, over and over (about 30 writes a second on a phone that re-encrypts
// each time) for as long as the phone refuses, and StartNotify answers nothing
// meanwhile. A StartNotify unanswered for `Options.subscribeWait` is that
// refusal: answered 0x05 on an encrypted link (on an unencrypted one the bond
// is stale, BlueZBond.swift). The StartNotify itself stays pending: withdrawn
// (StopNotify), bluetoothd 5.66 kept the registration it completed later with
// no owner, and every later StartNotify of it went unanswered. The engine's
// next subscribe waits for the same call, and finds it answered once the
// phone accepted.
extension BlueZConsumerTransport {
    public func subscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard linkIsUp, let path = link.characteristics[characteristic] else { return .transportFailure }
        if characteristic == .notificationSource {
            // The engine now listens to Notification Source: hand over what came early.
            link.notificationSourceRequested = true
            for value in link.heldNotifications { sink.yield(.notification(.notificationSource, value)) }
            link.heldNotifications.removeAll()
        }
        let deadline = ContinuousClock.now + options.subscribeWait
        while true {
            if link.startNotifyCalls[characteristic] == nil && link.startNotifyAnswers[characteristic] == nil {
                link.startNotifyCalls[characteristic] = Task { [weak self, bus] in
                    var answer: DBusError?
                    do throws(DBusError) {
                        _ = try await bus.call(destination: BlueZName.service, path: path, interface: BlueZName.characteristic,
                                               member: "StartNotify", timeout: .seconds(3600))
                    } catch {
                        answer = error
                    }
                    await self?.startNotifyAnswered(characteristic, path, answer)
                }
            }
            while link.startNotifyAnswers[characteristic] == nil, linkIsUp, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
            guard linkIsUp, link.characteristics[characteristic] == path else { return .transportFailure }
            guard let answer = link.startNotifyAnswers.removeValue(forKey: characteristic) else {
                await securityRefused(characteristic)
                return .attError(.insufficientAuthentication)
            }
            guard let error = answer else {
                link.subscribed.insert(characteristic)
                link.unpairedRefusals = 0
                return .success
            }
            // InProgress: bluetoothd still writes the CCCD for an earlier StartNotify of this client.
            if error.name == "org.bluez.Error.InProgress", ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(200))
                continue
            }
            let result = BlueZ.result(errorName: error.name, message: error.message)
            if result == .attError(.insufficientAuthentication) || result == .attError(.insufficientEncryption) {
                await securityRefused(characteristic, answered: true)
            }
            return result
        }
    }

    /// A StartNotify's answer (nil: success), kept for the subscribe that waits for it, or the next.
    func startNotifyAnswered(_ characteristic: ANCSCharacteristic, _ path: String, _ answer: DBusError?) {
        link.startNotifyCalls[characteristic] = nil
        guard linkIsUp, link.characteristics[characteristic] == path else { return }
        link.startNotifyAnswers[characteristic] = .some(answer)
    }

    public func unsubscribe(_ characteristic: ANCSCharacteristic) async -> ATTResult {
        guard let path = link.characteristics[characteristic] else { return .transportFailure }
        link.subscribed.remove(characteristic)
        // A StartNotify still pending is left to end (see above); one answered since is undone.
        guard link.startNotifyCalls[characteristic] == nil else { return .success }
        link.startNotifyAnswers[characteristic] = nil
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
            guard linkIsUp, !closing, let path = link.characteristics[.controlPoint] else { return .transportFailure }
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
