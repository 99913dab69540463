// Entry point of the consumer-only footprint build (scripts/check-embedded.sh):
// everything an accessory's firmware reaches through the Consumer engine
// (`result` below says what the two builds of it count).
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
    case 1: consumer.pointee.subscriptionCompleted(.dataSource, result(bytes[0]), at: now, into: &actions)
    case 2: consumer.pointee.subscriptionCompleted(.notificationSource, result(bytes[0]), at: now, into: &actions)
    case 3: consumer.pointee.received(notificationSource: input, at: now, into: &actions)
    case 4: consumer.pointee.received(dataSource: input, at: now, into: &actions)
    case 5: consumer.pointee.writeCompleted(WriteToken(rawValue: UInt32(count)), result(bytes[0]), at: now, into: &actions)
    case 6: _ = consumer.pointee.fetchAttributes(ConsumerConfiguration.displayAttributes, for: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 7: _ = consumer.pointee.fetchAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count)), at: now, into: &actions)
    case 8: _ = consumer.pointee.performAction(ActionID(rawValue: UInt8(truncatingIfNeeded: count)), on: NotificationUID(UInt32(count)), at: now, into: &actions)
    case 9: consumer.pointee.linkDown(at: now, into: &actions)
    #if ANCS_WHOLE_CONSUMER
    case 10: consumer.pointee.serviceChanged(published: count != 0, at: now, into: &actions)
    case 11: consumer.pointee.stop(at: now, into: &actions)
    case 12: consumer.pointee.bondLost(at: now, into: &actions)
    case 13: consumer.pointee.cancel(ConsumerRequestID(rawValue: UInt32(count)), at: now, into: &actions)
    #endif
    default: consumer.pointee.tick(at: now, into: &actions)
    }
    actionCount &+= Int32(actions.count)
    return actionCount
}

/// A subscription's or a write's result. The consumer build (the budget's
/// figure) takes every one as a success, as it always has; the whole
/// consumer (-D ANCS_WHOLE_CONSUMER) reads it from the input as a stack
/// reports it (0 success, 0xFF a transport failure, else an ATT error code),
/// so the refusal paths (0x03, 0x05, 0xFD, a refused subscription) are
/// linked, as in every firmware, with Service Changed, stop, bond lost and
/// cancel.
func result(_ code: UInt8) -> ATTResult {
    #if ANCS_WHOLE_CONSUMER
    code == 0 ? .success : code == 0xFF ? .transportFailure : .attError(ATTErrorCode(rawValue: code))
    #else
    .success
    #endif
}
