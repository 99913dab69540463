// Entry point of the consumer-only footprint build (scripts/check-embedded.sh):
// everything an accessory's firmware reaches through the Consumer engine.
// The linker keeps only what this reaches, so the size is the consumer path.
// Inputs are read in place from the radio's buffer (no Array copy), and an
// AppIdentifier is passed as the bytes a notification carried.

var consumer = Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes))
var actionCount: Int32 = 0
/// The caller's action buffer, reused from input to input.
var actions: [ConsumerAction] = []

@_cdecl("ancs_consumer_input")
public func ancsConsumerInput(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ milliseconds: Int64) -> Int32 {
    let now = Timestamp(milliseconds: milliseconds)
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    actions.removeAll(keepingCapacity: true)
    switch kind {
    case 0: consumer.linkUp(mtu: count, at: now, into: &actions)
    case 1: consumer.subscriptionCompleted(.dataSource, .success, at: now, into: &actions)
    case 2: consumer.subscriptionCompleted(.notificationSource, .success, at: now, into: &actions)
    case 3: consumer.received(notificationSource: input, at: now, into: &actions)
    case 4: consumer.received(dataSource: input, at: now, into: &actions)
    case 5: consumer.writeCompleted(WriteToken(rawValue: UInt32(count)), .success, at: now, into: &actions)
    case 6: _ = consumer.fetchAttributes(ConsumerConfiguration.displayAttributes, for: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 7: _ = consumer.fetchAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count)), at: now, into: &actions)
    case 8: _ = consumer.performAction(ActionID(rawValue: UInt8(truncatingIfNeeded: count)), on: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 9: consumer.linkDown(at: now, into: &actions)
    default: consumer.tick(now, into: &actions)
    }
    actionCount &+= Int32(actions.count)
    return actionCount
}
