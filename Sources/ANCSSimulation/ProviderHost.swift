import ANCS
import ANCSRuntime

/// A `Provider` engine serving one or more `SimulatedLink`s: it routes the
/// engine's actions to the link of the connection they name, and is where a
/// simulated phone's application adds, modifies and removes notifications.
public final class ProviderHost {
    public private(set) var provider: Provider
    /// What the provider emitted, in order (action performed, command rejected…).
    public private(set) var events: [ProviderEvent] = []
    public var recordsEvents = true
    public var onEvent: ((ProviderEvent) -> Void)?
    var links: [ConnectionID: SimulatedLink] = [:]
    /// Outputs for a link while it is delivering a PDU to us: returned to it, not re-entered.
    var replying: (connection: ConnectionID, outputs: [SimulatedLink.ServerOutput])?

    public init(configuration: ProviderConfiguration = .default) {
        provider = Provider(configuration: configuration)
    }

    /// Routes this connection's traffic to `link` (the link's server closure calls `serve`).
    public func attach(_ link: SimulatedLink, as connection: ConnectionID) {
        links[connection] = link
    }

    public func registerApp(_ identifier: String, displayName: String) {
        provider.registerApp(identifier: identifier, displayName: displayName)
    }

    /// Adds a notification; returns its UID, or nil if the provider refused.
    @discardableResult
    public func add(_ notification: ProviderNotification, at now: Timestamp) -> NotificationUID? {
        guard let (uid, actions) = try? provider.add(notification) else { return nil }
        dispatch(actions)
        return uid
    }

    public func modify(_ uid: NotificationUID, message: String, at now: Timestamp) {
        guard var notification = provider.notificationCenter[uid] else { return }
        notification.message = message
        modify(uid, to: notification, at: now)
    }

    public func modify(_ uid: NotificationUID, to notification: ProviderNotification, at now: Timestamp) {
        guard let actions = try? provider.modify(uid, to: notification) else { return }
        dispatch(actions)
    }

    public func remove(_ uid: NotificationUID, at now: Timestamp) {
        guard let actions = try? provider.remove(uid) else { return }
        dispatch(actions)
    }

    /// The link's server side: one input from the air, the outputs for that link in order.
    public func serve(_ connection: ConnectionID, _ input: SimulatedLink.ServerInput, at now: Timestamp) -> [SimulatedLink.ServerOutput] {
        let actions: [ProviderAction]
        switch input {
        case .connected(let mtu): actions = provider.connect(connection, mtu: mtu)
        case .disconnected: actions = provider.disconnect(connection)
        case .subscription(let characteristic, let enabled): actions = provider.setSubscription(connection, characteristic, enabled: enabled)
        case .controlPointWrite(let bytes): actions = provider.controlPointWritten(connection, bytes)
        }
        return dispatch(actions, replyingTo: connection)
    }

    /// Sends actions to their links; those for `replyingTo` are returned instead.
    @discardableResult
    func dispatch(_ actions: [ProviderAction], replyingTo: ConnectionID? = nil) -> [SimulatedLink.ServerOutput] {
        var reply: [SimulatedLink.ServerOutput] = []
        var others: [ConnectionID: [SimulatedLink.ServerOutput]] = [:]
        var order: [ConnectionID] = []
        func route(_ connection: ConnectionID, _ output: SimulatedLink.ServerOutput) {
            if connection == replyingTo {
                reply.append(output)
            } else {
                if others[connection] == nil { order.append(connection) }
                others[connection, default: []].append(output)
            }
        }
        for action in actions {
            switch action {
            case .notify(let connection, let characteristic, let bytes): route(connection, .notify(characteristic, bytes))
            case .respond(let connection, let result): route(connection, .respond(result))
            case .emit(let event):
                if recordsEvents { events.append(event) }
                onEvent?(event)
            }
        }
        for connection in order {
            links[connection]?.deliverServerOutputs(others[connection]!)
        }
        return reply
    }
}
