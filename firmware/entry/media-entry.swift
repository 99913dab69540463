// Entry points of the AMS and CTS footprint builds (scripts/check-embedded.sh):
// everything an accessory's firmware reaches through the AMS client
// (`ancs_ams_input`) or the CTS client (`ancs_cts_input`), every input read
// from the caller so that nothing is folded away, and every result read
// from the input as a stack reports it (0 success, 0xFF a transport
// failure, else an ATT error code). The linker keeps only what one entry
// reaches: the AMS build is the AMS client, the CTS build the CTS client.
// The engine lives in storage the caller provides, as the consumer's entry.

var mediaActionCount: Int32 = 0

func attResult(_ byte: UInt8) -> ATTResult {
    byte == 0 ? .success : byte == 0xFF ? .transportFailure : .attError(ATTErrorCode(byte))
}

func readResult(_ input: UnsafeRawBufferPointer) -> ATTReadResult {
    guard let first = input.first else { return .transportFailure }
    return first == 0 ? .value(Array(input.dropFirst())) : .attError(ATTErrorCode(first))
}

// Each entry makes its engine in place, written out twice: a generic
// `make<Engine>(_:in:)` shared by both copied the whole engine through an
// outlined copy, 450 bytes more of the AMS client's text.

/// Kind -1 makes the client in `storage`; every other kind is an input,
/// and returns the running count of actions (plus the elapsed time's
/// whole seconds, so that `NowPlaying` is linked).
@_cdecl("ancs_ams_input")
public func ancsAMSInput(_ storage: UnsafeMutableRawPointer, _ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ milliseconds: Int64) -> Int32 {
    if kind < 0 {
        guard count >= MemoryLayout<AMSClient>.size,
              Int(bitPattern: storage) % MemoryLayout<AMSClient>.alignment == 0 else { return -1 }
        storage.initializeMemory(as: AMSClient.self, to: AMSClient())
        return 0
    }
    let client = storage.assumingMemoryBound(to: AMSClient.self)
    let now = Timestamp(milliseconds: milliseconds)
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    let first = count > 0 ? bytes[0] : 0
    let characteristic: AMSCharacteristic = first % 3 == 0 ? .remoteCommand : first % 3 == 1 ? .entityUpdate : .entityAttribute
    let actions: [AMSClientAction]
    switch kind {
    case 0: actions = client.pointee.linkUp(at: now)
    case 1: actions = client.pointee.subscriptionCompleted(characteristic, attResult(first), at: now)
    case 2: actions = client.pointee.writeCompleted(WriteToken(rawValue: UInt32(count)), attResult(first), at: now)
    case 3: actions = client.pointee.readCompleted(WriteToken(rawValue: UInt32(first)), readResult(input), at: now)
    case 4: actions = client.pointee.received(remoteCommand: Array(input), at: now)
    case 5: actions = client.pointee.received(entityUpdate: Array(input), at: now)
    case 6: actions = client.pointee.perform(RemoteCommandID(rawValue: first), at: now).actions
    case 7: actions = client.pointee.serviceChanged(published: first != 0, at: now)
    case 8: actions = client.pointee.stop(at: now)
    case 9: actions = client.pointee.linkDown(at: now)
    default: actions = client.pointee.tick(at: now)
    }
    mediaActionCount &+= Int32(actions.count)
    let elapsed = client.pointee.nowPlaying.elapsed(at: now) ?? 0
    return mediaActionCount &+ Int32(elapsed)
}

@_cdecl("ancs_cts_input")
public func ancsCTSInput(_ storage: UnsafeMutableRawPointer, _ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ milliseconds: Int64) -> Int32 {
    if kind < 0 {
        guard count >= MemoryLayout<CTSClient>.size,
              Int(bitPattern: storage) % MemoryLayout<CTSClient>.alignment == 0 else { return -1 }
        storage.initializeMemory(as: CTSClient.self, to: CTSClient())
        return 0
    }
    let client = storage.assumingMemoryBound(to: CTSClient.self)
    let now = Timestamp(milliseconds: milliseconds)
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    let actions: [CTSClientAction]
    switch kind {
    case 0: actions = client.pointee.linkUp(at: now)
    case 1: actions = client.pointee.readCompleted(WriteToken(rawValue: UInt32(count)), readResult(input), at: now)
    case 2: actions = client.pointee.received(currentTime: Array(input), at: now)
    case 3: actions = client.pointee.linkDown(at: now)
    case 4: actions = client.pointee.stop(at: now)
    default: actions = client.pointee.tick(at: now)
    }
    mediaActionCount &+= Int32(actions.count)
    let time = client.pointee.phoneTime(at: now)
    let offset = client.pointee.localTimeInformation?.utcOffsetMinutes ?? 0
    return mediaActionCount &+ Int32(time?.second ?? 0) &+ Int32(offset)
}
