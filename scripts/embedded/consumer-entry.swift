// Entry point of the consumer-only footprint build (scripts/check-embedded.sh):
// everything an accessory's firmware reaches through the Consumer engine.
// The linker keeps only what this reaches, so the size is the consumer path.
// Inputs are read in place from the radio's buffer (no Array copy), and an
// AppIdentifier is passed as the bytes a notification carried.

var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes))
var actionCount: Int32 = 0

@_cdecl("ancs_consumer_input")
public func ancsConsumerInput(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ milliseconds: Int64) -> Int32 {
    let now = Timestamp(.milliseconds(milliseconds))
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    let actions: [ConsumerAction]
    switch kind {
    case 0: actions = consumer.linkUp(mtu: count, at: now)
    case 1: actions = consumer.subscriptionCompleted(.dataSource, .success, at: now)
    case 2: actions = consumer.subscriptionCompleted(.notificationSource, .success, at: now)
    case 3: actions = consumer.received(notificationSource: input, at: now)
    case 4: actions = consumer.received(dataSource: input, at: now)
    case 5: actions = consumer.writeCompleted(WriteToken(rawValue: UInt32(count)), .success, at: now)
    case 6: actions = consumer.fetchAttributes(ConsumerConfiguration.displayAttributes, for: NotificationUID(UInt32(count)), at: now).1
    case 7: actions = consumer.fetchAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count)), at: now).1
    case 8: actions = consumer.performAction(ActionID(rawValue: UInt8(truncatingIfNeeded: count)), on: NotificationUID(UInt32(count)), at: now).1
    case 9: actions = consumer.linkDown(at: now)
    default: actions = consumer.tick(now)
    }
    actionCount &+= Int32(actions.count)
    return actionCount
}
