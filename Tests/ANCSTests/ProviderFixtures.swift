import Testing
@testable import ANCS

// What the Provider engine's tests share: connections, notifications, and
// helpers that read a provider's actions at the wire level.

let phone = ConnectionID(1)
let watch = ConnectionID(2)
let car = ConnectionID(3)

let mail = ProviderNotification(
    appIdentifier: "com.apple.mobilemail",
    categoryID: .email,
    flags: [.negativeAction],
    title: "Alice",
    subtitle: "Lunch",
    message: "See you at noon?",
    date: ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 42, second: 0),
    negativeActionLabel: "Clear")

let call = ProviderNotification(
    appIdentifier: "com.apple.mobilephone",
    categoryID: .incomingCall,
    flags: [.important, .positiveAction, .negativeAction],
    title: "Bob",
    date: ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 43, second: 10),
    positiveActionLabel: "Answer",
    negativeActionLabel: "Decline")


// MARK: - Helpers

/// A provider with consumers connected and subscribed as given.
func makeProvider(
    _ consumers: [(ConnectionID, mtu: Int, notificationSource: Bool, dataSource: Bool)] = [(phone, 185, true, true)],
    configuration: ProviderConfiguration = .default
) -> Provider {
    var provider = Provider(configuration: configuration)
    for consumer in consumers {
        _ = provider.linkUp(consumer.0, mtu: consumer.mtu)
        _ = provider.setSubscription(consumer.0, .dataSource, enabled: consumer.dataSource)
        _ = provider.setSubscription(consumer.0, .notificationSource, enabled: consumer.notificationSource)
    }
    return provider
}

func add(_ notification: ProviderNotification, to provider: inout Provider) throws -> NotificationUID {
    try provider.add(notification).uid
}

/// The Notification Source events sent to one consumer, decoded.
func sourceEvents(_ actions: [ProviderAction], to connection: ConnectionID) throws -> [NotificationSourceEvent] {
    var events: [NotificationSourceEvent] = []
    for case .notify(let target, .notificationSource, let bytes) in actions where target == connection {
        events.append(try NotificationSourceEvent.decode(bytes))
    }
    return events
}

/// The Data Source notifications sent to one consumer.
func dataSourceFragments(_ actions: [ProviderAction], to connection: ConnectionID) -> [[UInt8]] {
    var fragments: [[UInt8]] = []
    for case .notify(let target, .dataSource, let bytes) in actions where target == connection {
        fragments.append(bytes)
    }
    return fragments
}

func dataSourceCount(_ actions: [ProviderAction]) -> Int {
    actions.filter { if case .notify(_, .dataSource, _) = $0 { true } else { false } }.count
}

/// The write responses in the actions.
func responses(_ actions: [ProviderAction]) -> [ATTResult] {
    var results: [ATTResult] = []
    for case .respond(_, let result) in actions { results.append(result) }
    return results
}

func emitted(_ actions: [ProviderAction]) -> [ProviderEvent] {
    var events: [ProviderEvent] = []
    for case .emit(let event) in actions { events.append(event) }
    return events
}

/// Writes a command to the Control Point.
func write(_ command: ControlPointCommand, from connection: ConnectionID, to provider: inout Provider) throws -> [ProviderAction] {
    provider.controlPointWritten(connection, try command.encode())
}

/// Feeds a consumer's Data Source fragments to a reassembler expecting the command's response.
func reassemble(_ fragments: [[UInt8]], answering command: ControlPointCommand) -> [DataSourceReassembler.Event] {
    reassemble(DataSourceRequest(command)!, fragments, id: 7, unlimitedValueLength: 0xFFFF, finishing: false)
}

func notificationAttributes(_ fragments: [[UInt8]], answering command: GetNotificationAttributes) -> NotificationAttributesResponse? {
    let events = reassemble(fragments, answering: .getNotificationAttributes(command))
    guard events.count == 1, case .response(7, .notificationAttributes(let response)) = events[0] else { return nil }
    return response
}

func appAttributes(_ fragments: [[UInt8]], answering command: GetAppAttributes) -> AppAttributesResponse? {
    let events = reassemble(fragments, answering: .getAppAttributes(command))
    guard events.count == 1, case .response(7, .appAttributes(let response)) = events[0] else { return nil }
    return response
}

func rejection(_ actions: [ProviderAction]) -> ProviderRejection? {
    for case .emit(.commandRejected(_, let rejection)) in actions { return rejection }
    return nil
}


// MARK: - Utilities

func uidBytes(_ uid: NotificationUID) -> [UInt8] {
    let raw = uid.rawValue
    return [UInt8(truncatingIfNeeded: raw), UInt8(truncatingIfNeeded: raw >> 8), UInt8(truncatingIfNeeded: raw >> 16), UInt8(truncatingIfNeeded: raw >> 24)]
}

/// Hostile writes come from the suite's shared SplitMix64, so a failing one can be replayed.
typealias HostileWriteGenerator = SplitMix64
