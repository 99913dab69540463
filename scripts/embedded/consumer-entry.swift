// Entry point of the consumer-only footprint build (scripts/check-embedded.sh):
// everything an accessory's firmware reaches through the Consumer engine.
// The linker keeps only what this reaches, so the size is the consumer path.
// Inputs are read in place from the radio's buffer (no Array copy), and an
// AppIdentifier is passed as the bytes a notification carried. The engine
// lives in storage the caller provides, as with the C API (ancs.h): a global
// Consumer would be made on first use, with the lazy initialization that
// brings, which a firmware linking the C API does not have. (The two globals
// below are constants until written: nothing to initialize.)

var actionCount: Int32 = 0
/// The caller's action buffer, reused from input to input.
var actions: [ConsumerAction] = []

/// Kind -1 makes the consumer in `storage` (`count` bytes, aligned for a
/// pointer at least; -1 if too small); every other kind is an input to the
/// consumer made there, and returns the running count of actions.
@_cdecl("ancs_consumer_input")
public func ancsConsumerInput(_ storage: UnsafeMutableRawPointer, _ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ milliseconds: Int64) -> Int32 {
    if kind < 0 {
        guard count >= MemoryLayout<Consumer>.size,
              Int(bitPattern: storage) % MemoryLayout<Consumer>.alignment == 0 else { return -1 }
        storage.initializeMemory(as: Consumer.self, to: Consumer(configuration: ConsumerConfiguration(eagerAttributes: ConsumerConfiguration.displayAttributes)))
        return 0
    }
    let consumer = storage.assumingMemoryBound(to: Consumer.self)
    let now = Timestamp(milliseconds: milliseconds)
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    actions.removeAll(keepingCapacity: true)
    switch kind {
    case 0: consumer.pointee.linkUp(mtu: count, at: now, into: &actions)
    case 1: consumer.pointee.subscriptionCompleted(.dataSource, .success, at: now, into: &actions)
    case 2: consumer.pointee.subscriptionCompleted(.notificationSource, .success, at: now, into: &actions)
    case 3: consumer.pointee.received(notificationSource: input, at: now, into: &actions)
    case 4: consumer.pointee.received(dataSource: input, at: now, into: &actions)
    case 5: consumer.pointee.writeCompleted(WriteToken(rawValue: UInt32(count)), .success, at: now, into: &actions)
    case 6: _ = consumer.pointee.fetchAttributes(ConsumerConfiguration.displayAttributes, for: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 7: _ = consumer.pointee.fetchAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count)), at: now, into: &actions)
    case 8: _ = consumer.pointee.performAction(ActionID(rawValue: UInt8(truncatingIfNeeded: count)), on: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 9: consumer.pointee.linkDown(at: now, into: &actions)
    default: consumer.pointee.tick(now, into: &actions)
    }
    actionCount &+= Int32(actions.count)
    return actionCount
}
