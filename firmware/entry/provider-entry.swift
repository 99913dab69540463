// Entry point of the provider-only footprint build (scripts/check-embedded.sh):
// a device that plays the phone's part (a test rig, a bridge).

var provider = Provider()
var actionCount: Int32 = 0

@_cdecl("ancs_provider_input")
public func ancsProviderInput(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: bytes, count: count))
    let connection = ConnectionID(1)
    var actions: [ProviderAction] = []
    switch kind {
    case 0: actions = provider.linkUp(connection, mtu: count)
    case 1: actions = provider.setSubscription(connection, .notificationSource, enabled: true)
    case 2: actions = provider.setSubscription(connection, .dataSource, enabled: true)
    case 3: actions = provider.controlPointWritten(connection, input)
    case 4:
        let text = String(decoding: input, as: UTF8.self)
        provider.registerApp(identifier: text, displayName: text)
        if let added = try? provider.add(ProviderNotification(appIdentifier: text, title: text, message: text)) { actions = added.actions }
    case 5: if let removed = try? provider.remove(NotificationUID(UInt32(count))) { actions = removed }
    default: actions = provider.linkDown(connection)
    }
    actionCount &+= Int32(actions.count)
    return actionCount
}
