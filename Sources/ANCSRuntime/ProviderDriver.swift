import ANCS

/// The Notification Provider's runtime without concurrency: a `Provider`
/// engine, with each Control Point write tied to its responder so that
/// every write is answered exactly once, before the notifications it causes.
/// `ProviderServer` is this driver inside an actor.
public struct ProviderDriver: Sendable {
    public enum Output: Sendable {
        /// Send a GATT notification.
        case notify(ConnectionID, ANCSCharacteristic, [UInt8])
        /// Answer a Control Point write.
        case reply(ATTResponder, ATTResult)
        /// Tell the application.
        case event(ProviderEvent)
    }

    public private(set) var engine: Provider

    public init(configuration: ProviderConfiguration = .default) {
        engine = Provider(configuration: configuration)
    }

    public mutating func handle(_ event: GATTServerEvent) -> [Output] {
        switch event {
        case .linkUp(let connection, let link):
            return outputs(engine.linkUp(connection, mtu: link.mtu), replyingWith: nil)
        case .linkDown(let connection):
            return outputs(engine.linkDown(connection), replyingWith: nil)
        case .mtuChanged(let connection, let mtu):
            engine.mtuChanged(connection, mtu)
            return []
        case .subscriptionChanged(let connection, let characteristic, let enabled):
            return outputs(engine.setSubscription(connection, characteristic, enabled: enabled), replyingWith: nil)
        case .controlPointWrite(let connection, let bytes, let reply):
            let actions = engine.controlPointWritten(connection, bytes)
            var result = outputs(actions, replyingWith: reply)
            // The engine answers every write; should it not, the consumer
            // still gets an answer rather than an ATT timeout.
            if !actions.contains(where: { if case .respond = $0 { true } else { false } }) {
                result.insert(.reply(reply, .attError(.unlikelyError)), at: 0)
            }
            return result
        }
    }

    public mutating func registerApp(identifier: String, displayName: String) {
        engine.registerApp(identifier: identifier, displayName: displayName)
    }

    public mutating func add(_ notification: ProviderNotification) throws(ProviderError) -> Added {
        let added = try engine.add(notification)
        return Added(uid: added.uid, outputs: outputs(added.actions, replyingWith: nil))
    }

    /// A notification added: its new UID and the outputs that announce it.
    public struct Added: Sendable {
        public var uid: NotificationUID
        public var outputs: [Output]
    }

    public mutating func modify(_ uid: NotificationUID, to notification: ProviderNotification) throws(ProviderError) -> [Output] {
        outputs(try engine.modify(uid, to: notification), replyingWith: nil)
    }

    public mutating func remove(_ uid: NotificationUID) throws(ProviderError) -> [Output] {
        outputs(try engine.remove(uid), replyingWith: nil)
    }

    /// Faults (`Provider.setSharing`, `setNotificationSourceQuiet`, `loseSubscription`, `forgetSubscriptions`).
    public mutating func setSharing(_ sharing: Bool) -> [Output] {
        outputs(engine.setSharing(sharing), replyingWith: nil)
    }

    public mutating func setNotificationSourceQuiet(_ quiet: Bool) {
        engine.setNotificationSourceQuiet(quiet)
    }

    public mutating func loseSubscription(_ characteristic: ANCSCharacteristic) -> [Output] {
        outputs(engine.loseSubscription(characteristic), replyingWith: nil)
    }

    public mutating func forgetSubscriptions() -> [Output] {
        outputs(engine.forgetSubscriptions(), replyingWith: nil)
    }

    /// The engine's actions as outputs, in order. `.respond` answers the
    /// write being handled (the engine answers a write only in the actions
    /// that write returns).
    func outputs(_ actions: [ProviderAction], replyingWith reply: ATTResponder?) -> [Output] {
        var outputs: [Output] = []
        outputs.reserveCapacity(actions.count)
        for action in actions {
            switch action {
            case .notify(let connection, let characteristic, let value): outputs.append(.notify(connection, characteristic, value))
            case .respond(_, let result): if let reply { outputs.append(.reply(reply, result)) }
            case .emit(let event): outputs.append(.event(event))
            }
        }
        return outputs
    }
}
