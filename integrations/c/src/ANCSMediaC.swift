// The C API of ams.h over the AMSClient and CTSClient engines. Compiled with
// Embedded Swift together with the core's media files (scripts/embedded/
// sources.sh media) as one object of its own, libancs_media.a
// (integrations/c/build.sh): a firmware that links only ancs.h carries none
// of it.
//
// Each instance is the caller's storage: a tag in its first word, then the
// engine and the callbacks. An input runs the engine, then hands its actions
// to the callbacks; a callback may call back into the same instance. A
// nested call that ends or starts a session (ancs_ams_stop from an UPDATED
// event) makes what the outer call had left stale: only the ends of
// commands are still told, so that each ends exactly once (as ancs.h).

import CANCS

/// "ANCS-AM" / "ANCS-CT" and the layout's version: storage without it was not initialized.
private let amsTag: UInt64 = 0x414E_4353_414D_0001
private let ctsTag: UInt64 = 0x414E_4353_4354_0001
/// The instance starts after the tag, 16-byte aligned.
private let instanceOffset = 16

private let ok = ancs_status(Int32(ANCS_OK))
private let storageError = ancs_status(Int32(ANCS_ERR_STORAGE))
private let invalidArgument = ancs_status(Int32(ANCS_ERR_INVALID_ARGUMENT))
private let busy = ancs_status(Int32(ANCS_ERR_BUSY))

// MARK: - Values between C and Swift

private func time(_ milliseconds: UInt64) -> Timestamp {
    Timestamp(milliseconds: Int64(clamping: milliseconds))
}

private func milliseconds(_ time: Timestamp) -> UInt64 {
    let nanoseconds = time.nanoseconds
    guard nanoseconds > 0 else { return 0 }
    return UInt64(nanoseconds / 1_000_000) + (nanoseconds % 1_000_000 == 0 ? 0 : 1)  // rounded up: never early
}

/// A count of thousandths, whatever the phone sent: never a trap (a
/// conversion of an infinite or huge value would be one).
private func thousandths(_ value: Double) -> Int64 {
    guard value.isFinite else { return 0 }
    let scaled = value * 1000
    if scaled >= 1e15 { return 1_000_000_000_000_000 }
    if scaled <= -1e15 { return -1_000_000_000_000_000 }
    return Int64(scaled)
}

private func attResult(_ value: ancs_status) -> ATTResult? {
    switch value {
    case 0: .success
    case 1...255: .attError(ATTErrorCode(rawValue: UInt8(value)))
    case Int32(ANCS_ERR_TRANSPORT): .transportFailure
    default: nil
    }
}

private func readResult(_ value: ancs_status, _ bytes: UnsafePointer<UInt8>?, _ count: Int) -> ATTReadResult? {
    switch attResult(value) {
    case .success: .value(Array(UnsafeBufferPointer(start: bytes, count: count)))
    case .attError(let code): .attError(code)
    case .transportFailure: .transportFailure
    case nil: nil
    }
}

private func status(_ result: ATTResult) -> ancs_status {
    switch result {
    case .success: ok
    case .attError(let code): ancs_status(code.rawValue)
    case .transportFailure: ancs_status(Int32(ANCS_ERR_TRANSPORT))
    }
}

private func status(_ error: AMSClientError) -> ancs_status {
    switch error {
    case .notReady: ancs_status(Int32(ANCS_ERR_AMS_NOT_READY))
    case .unsupported: ancs_status(Int32(ANCS_ERR_AMS_UNSUPPORTED))
    case .busy: ancs_status(Int32(ANCS_ERR_TOO_MANY_REQUESTS))
    case .attError(let code): ancs_status(code.rawValue)
    case .transportFailure: ancs_status(Int32(ANCS_ERR_TRANSPORT))
    case .timedOut: ancs_status(Int32(ANCS_ERR_TIMED_OUT))
    case .sessionEnded: ancs_status(Int32(ANCS_ERR_SESSION_ENDED))
    }
}

private func status(_ error: CTSClientError) -> ancs_status {
    switch error {
    case .attError(let code): ancs_status(code.rawValue)
    case .transportFailure: ancs_status(Int32(ANCS_ERR_TRANSPORT))
    case .timedOut: ancs_status(Int32(ANCS_ERR_TIMED_OUT))
    case .invalid: ancs_status(Int32(ANCS_ERR_INVALID_RESPONSE))
    }
}

private func characteristic(_ value: ancs_ams_characteristic) -> AMSCharacteristic? {
    switch value {
    case ANCS_AMS_REMOTE_COMMAND: .remoteCommand
    case ANCS_AMS_ENTITY_UPDATE: .entityUpdate
    case ANCS_AMS_ENTITY_ATTRIBUTE: .entityAttribute
    default: nil
    }
}

private func cValue(_ characteristic: AMSCharacteristic) -> ancs_ams_characteristic {
    switch characteristic {
    case .remoteCommand: ANCS_AMS_REMOTE_COMMAND
    case .entityUpdate: ANCS_AMS_ENTITY_UPDATE
    case .entityAttribute: ANCS_AMS_ENTITY_ATTRIBUTE
    }
}

private func cValue(_ characteristic: CTSCharacteristic) -> ancs_cts_characteristic {
    switch characteristic {
    case .currentTime: ANCS_CTS_CURRENT_TIME
    case .localTimeInformation: ANCS_CTS_LOCAL_TIME_INFORMATION
    }
}

private func cValue(_ time: CurrentTime) -> ancs_current_time {
    var value = ancs_current_time()
    value.year = UInt16(clamping: time.year)
    value.month = UInt8(clamping: time.month)
    value.day = UInt8(clamping: time.day)
    value.hours = UInt8(clamping: time.hour)
    value.minutes = UInt8(clamping: time.minute)
    value.seconds = UInt8(clamping: time.second)
    value.day_of_week = UInt8(clamping: time.dayOfWeek)
    value.fractions256 = UInt8(clamping: time.fractions256)
    value.adjust_reason = time.adjustReason.rawValue
    return value
}

// MARK: - AMS

struct AMSInstance {
    var client: AMSClient
    var callbacks: ancs_ams_callbacks
    var context: UnsafeMutableRawPointer?
    /// Callbacks running (deinit is refused inside one).
    var depth = 0
    /// Moves on with every input that starts or ends a session: a nested
    /// one makes the actions its caller had left stale.
    var epoch: UInt32 = 0
}

private func amsInstance(_ storage: UnsafeRawPointer?) -> UnsafeMutablePointer<AMSInstance>? {
    guard let storage, storage.load(as: UInt64.self) == amsTag else { return nil }
    return UnsafeMutableRawPointer(mutating: storage + instanceOffset).assumingMemoryBound(to: AMSInstance.self)
}

private func emit(_ event: AMSClientEvent, _ callbacks: ancs_ams_callbacks, _ context: UnsafeMutableRawPointer?) {
    var value = ancs_ams_event()
    func send(_ bytes: UnsafeBufferPointer<UInt8>? = nil) {
        if let bytes, bytes.count > 0 {
            value.value = bytes.baseAddress
            value.length = bytes.count
        }
        withUnsafePointer(to: &value) { callbacks.event!(context, $0) }
    }
    switch event {
    case .ready:
        value.type = ANCS_AMS_EVENT_READY
        send()
    case .supportedCommands(let commands):
        value.type = ANCS_AMS_EVENT_SUPPORTED_COMMANDS
        let bytes = commands.map { $0.rawValue }
        bytes.withUnsafeBufferPointer { send($0) }
    case .updated(let attribute, let text, let isTruncated):
        value.type = ANCS_AMS_EVENT_UPDATED
        value.entity = attribute.entity.rawValue
        value.attribute = attribute.attributeID
        value.truncated = isTruncated
        text.withBytes { send($0) }
    case .commandCompleted(let id, let error):
        value.type = ANCS_AMS_EVENT_COMMAND_DONE
        value.request_id = id.rawValue
        value.status = error.map(status) ?? ok
        send()
    case .setupFailed(let error):
        value.type = ANCS_AMS_EVENT_SETUP_FAILED
        value.status = status(error)
        send()
    case .invalidUpdate:
        value.type = ANCS_AMS_EVENT_INVALID_UPDATE
        value.status = ancs_status(Int32(ANCS_ERR_INVALID_RESPONSE))
        send()
    case .ended(let reason):
        value.type = ANCS_AMS_EVENT_ENDED
        switch reason {
        case .linkDown: value.end = ANCS_AMS_END_LINK_DOWN
        case .serviceUnpublished: value.end = ANCS_AMS_END_SERVICE_UNPUBLISHED
        case .stopped: value.end = ANCS_AMS_END_STOPPED
        }
        send()
    }
}

/// Hands the actions to the callbacks, in order; `turns`: whether this input
/// started or ended a session. An operation left stale by a nested call is
/// never made: its engine hears so (a transport failure), which frees the
/// slot it held, and what that causes is dispatched.
@inline(never)
private func dispatch(_ pointer: UnsafeMutablePointer<AMSInstance>, _ actions: [AMSClientAction], turns: Bool,
                      at now: Timestamp) -> ancs_status {
    if turns { pointer.pointee.epoch &+= 1 }
    let epoch = pointer.pointee.epoch
    let callbacks = pointer.pointee.callbacks
    let context = pointer.pointee.context
    pointer.pointee.depth += 1
    for action in actions {
        if pointer.pointee.epoch != epoch {
            switch action {
            case .emit(.commandCompleted): break  // every command ends once
            case .write(_, _, let token):
                _ = dispatch(pointer, pointer.pointee.client.writeCompleted(token, .transportFailure, at: now), turns: false, at: now)
                continue
            case .read(_, let token):
                _ = dispatch(pointer, pointer.pointee.client.readCompleted(token, .transportFailure, at: now), turns: false, at: now)
                continue
            default: continue
            }
        }
        switch action {
        case .subscribe(let characteristic): callbacks.subscribe!(context, cValue(characteristic), true)
        case .unsubscribe(let characteristic): callbacks.subscribe!(context, cValue(characteristic), false)
        case .write(let characteristic, let bytes, let token):
            bytes.withUnsafeBufferPointer { callbacks.write!(context, cValue(characteristic), $0.baseAddress, $0.count, token.rawValue) }
        case .read(let characteristic, let token): callbacks.read!(context, cValue(characteristic), token.rawValue)
        case .emit(let event):
            if case .ended = event { pointer.pointee.epoch &+= 1 }
            emit(event, callbacks, context)
        }
    }
    pointer.pointee.depth -= 1
    return ok
}

@_cdecl("ancs_ams_storage_size")
public func ancsAMSStorageSize() -> Int { instanceOffset + MemoryLayout<AMSInstance>.size }

@_cdecl("ancs_ams_init")
public func ancsAMSInit(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ config: UnsafePointer<ancs_ams_config>?,
    _ callbacks: UnsafePointer<ancs_ams_callbacks>?, _ context: UnsafeMutableRawPointer?
) -> ancs_status {
    guard let storage, let callbacks, callbacks.pointee.subscribe != nil, callbacks.pointee.write != nil,
          callbacks.pointee.read != nil, callbacks.pointee.event != nil
    else { return invalidArgument }
    guard ancsAMSStorageSize() <= MemoryLayout<ancs_ams_client>.size,
          MemoryLayout<AMSInstance>.alignment <= instanceOffset,
          Int(bitPattern: UnsafeRawPointer(storage)) % MemoryLayout<AMSInstance>.alignment == 0
    else { return storageError }
    var settings = ancs_ams_config()
    if let config { settings = config.pointee }
    var configuration = AMSClientConfiguration()
    if settings.request_timeout_ms != 0 { configuration.requestNanoseconds = Int64(settings.request_timeout_ms) * 1_000_000 }
    if settings.retry_interval_ms != 0 { configuration.retryNanoseconds = Int64(settings.retry_interval_ms) * 1_000_000 }
    if settings.max_value_length != 0 { configuration.maximumValueLength = Int(settings.max_value_length) }
    if settings.max_queued_commands != 0 { configuration.maximumQueuedCommands = Int(settings.max_queued_commands) }
    let raw = UnsafeMutableRawPointer(storage)
    (raw + instanceOffset).bindMemory(to: AMSInstance.self, capacity: 1).initialize(to: AMSInstance(
        client: AMSClient(configuration: configuration), callbacks: callbacks.pointee, context: context))
    raw.storeBytes(of: amsTag, as: UInt64.self)
    return ok
}

@_cdecl("ancs_ams_deinit")
public func ancsAMSDeinit(_ storage: UnsafeMutablePointer<ancs_ams_client>?) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    guard pointer.pointee.depth == 0 else { return busy }
    pointer.deinitialize(count: 1)
    UnsafeMutableRawPointer(storage!).storeBytes(of: 0, as: UInt64.self)
    return ok
}

@_cdecl("ancs_ams_link_up")
public func ancsAMSLinkUp(_ storage: UnsafeMutablePointer<ancs_ams_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.linkUp(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_ams_link_down")
public func ancsAMSLinkDown(_ storage: UnsafeMutablePointer<ancs_ams_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.linkDown(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_ams_service_changed")
public func ancsAMSServiceChanged(_ storage: UnsafeMutablePointer<ancs_ams_client>?, _ published: Bool, _ now: UInt64) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.serviceChanged(published: published, at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_ams_stop")
public func ancsAMSStop(_ storage: UnsafeMutablePointer<ancs_ams_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.stop(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_ams_subscription_result")
public func ancsAMSSubscriptionResult(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ which: ancs_ams_characteristic, _ result: ancs_status, _ now: UInt64
) -> ancs_status {
    guard let characteristic = characteristic(which), let result = attResult(result) else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.subscriptionCompleted(characteristic, result, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_write_result")
public func ancsAMSWriteResult(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ token: UInt32, _ result: ancs_status, _ now: UInt64
) -> ancs_status {
    guard let result = attResult(result) else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.writeCompleted(WriteToken(rawValue: token), result, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_read_result")
public func ancsAMSReadResult(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ token: UInt32, _ result: ancs_status,
    _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0, let read = readResult(result, bytes, count) else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.readCompleted(WriteToken(rawValue: token), read, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_remote_command")
public func ancsAMSRemoteCommand(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0 else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    let value = Array(UnsafeBufferPointer(start: bytes, count: count))
    return dispatch(pointer, pointer.pointee.client.received(remoteCommand: value, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_entity_update")
public func ancsAMSEntityUpdate(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0 else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    let value = Array(UnsafeBufferPointer(start: bytes, count: count))
    return dispatch(pointer, pointer.pointee.client.received(entityUpdate: value, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_tick")
public func ancsAMSTick(_ storage: UnsafeMutablePointer<ancs_ams_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = amsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.tick(at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_ams_perform")
public func ancsAMSPerform(
    _ storage: UnsafeMutablePointer<ancs_ams_client>?, _ command: UInt8, _ now: UInt64, _ requestID: UnsafeMutablePointer<UInt32>?
) -> ancs_status {
    guard command <= 13 else { return invalidArgument }
    guard let pointer = amsInstance(storage) else { return storageError }
    let request = pointer.pointee.client.perform(RemoteCommandID(rawValue: command), at: time(now))
    requestID?.pointee = request.id.rawValue
    var result = ok
    for case .emit(.commandCompleted(request.id, let error?)) in request.actions { result = status(error) }
    _ = dispatch(pointer, request.actions, turns: false, at: time(now))
    return result
}

@_cdecl("ancs_ams_next_deadline")
public func ancsAMSNextDeadline(_ storage: UnsafePointer<ancs_ams_client>?, _ deadline: UnsafeMutablePointer<UInt64>?) -> Bool {
    guard let pointer = amsInstance(storage), let next = pointer.pointee.client.nextDeadline else { return false }
    deadline?.pointee = milliseconds(next)
    return true
}

@_cdecl("ancs_ams_is_ready")
public func ancsAMSIsReady(_ storage: UnsafePointer<ancs_ams_client>?) -> Bool {
    amsInstance(storage)?.pointee.client.isReady ?? false
}

@_cdecl("ancs_ams_playback_at")
public func ancsAMSPlaybackAt(
    _ storage: UnsafePointer<ancs_ams_client>?, _ now: UInt64, _ playback: UnsafeMutablePointer<ancs_ams_playback>?
) -> Bool {
    guard let pointer = amsInstance(storage), let playback else { return false }
    let playing = pointer.pointee.client.nowPlaying
    var value = ancs_ams_playback()
    if let info = playing.playback, let elapsed = playing.elapsed(at: time(now)) {
        value.has_playback = true
        value.state = UInt8(clamping: info.state.rawValue)
        value.rate_permille = Int32(clamping: thousandths(info.rate))
        value.elapsed_ms = UInt32(clamping: thousandths(elapsed))
    }
    if let duration = playing.duration {
        value.has_duration = true
        value.duration_ms = UInt32(clamping: thousandths(duration))
    }
    if let volume = playing.volume {
        value.has_volume = true
        value.volume_permille = UInt16(clamping: thousandths(volume))
    }
    playback.pointee = value
    return value.has_playback || value.has_duration || value.has_volume
}

@_cdecl("ancs_ams_text")
public func ancsAMSText(
    _ storage: UnsafePointer<ancs_ams_client>?, _ entity: UInt8, _ attribute: UInt8,
    _ value: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ length: UnsafeMutablePointer<Int>?
) -> Bool {
    guard let pointer = amsInstance(storage) else { return false }
    let playing = pointer.pointee.client.nowPlaying
    let text: AttributeValue?
    switch MediaAttribute(EntityID(rawValue: entity), attribute) {
    case .playerName: text = playing.playerName
    case .artist: text = playing.artist
    case .album: text = playing.album
    case .title: text = playing.title
    default: return false
    }
    guard let text else { return false }
    // The value's storage is the instance's, not a copy: valid until the next call changes it.
    let (start, count) = text.withBytes { ($0.baseAddress, $0.count) }
    value?.pointee = start
    length?.pointee = count
    return true
}

// MARK: - CTS

struct CTSInstance {
    var client: CTSClient
    var callbacks: ancs_cts_callbacks
    var context: UnsafeMutableRawPointer?
    var depth = 0
    var epoch: UInt32 = 0
}

private func ctsInstance(_ storage: UnsafeRawPointer?) -> UnsafeMutablePointer<CTSInstance>? {
    guard let storage, storage.load(as: UInt64.self) == ctsTag else { return nil }
    return UnsafeMutableRawPointer(mutating: storage + instanceOffset).assumingMemoryBound(to: CTSInstance.self)
}

@inline(never)
private func dispatch(_ pointer: UnsafeMutablePointer<CTSInstance>, _ actions: [CTSClientAction], turns: Bool,
                      at now: Timestamp) -> ancs_status {
    if turns { pointer.pointee.epoch &+= 1 }
    let epoch = pointer.pointee.epoch
    let callbacks = pointer.pointee.callbacks
    let context = pointer.pointee.context
    pointer.pointee.depth += 1
    for action in actions {
        if pointer.pointee.epoch != epoch {
            // Stale (a nested call stopped or restarted): a read is never made, and its engine hears so.
            if case .read(_, let token) = action {
                _ = dispatch(pointer, pointer.pointee.client.readCompleted(token, .transportFailure, at: now), turns: false, at: now)
            }
            continue
        }
        switch action {
        case .subscribe(let characteristic): callbacks.subscribe!(context, cValue(characteristic), true)
        case .unsubscribe(let characteristic): callbacks.subscribe!(context, cValue(characteristic), false)
        case .read(let characteristic, let token): callbacks.read!(context, cValue(characteristic), token.rawValue)
        case .emit(let event):
            var value = ancs_cts_event()
            switch event {
            case .currentTime(let time):
                value.type = ANCS_CTS_EVENT_CURRENT_TIME
                value.time = cValue(time)
            case .localTimeInformation(let zone):
                value.type = ANCS_CTS_EVENT_LOCAL_TIME
                value.has_utc_offset = zone.utcOffsetMinutes != nil
                value.utc_offset_minutes = Int16(clamping: zone.utcOffsetMinutes ?? 0)
                value.dst_offset = zone.dstOffset
            case .failed(let characteristic, let error):
                value.type = ANCS_CTS_EVENT_FAILED
                value.characteristic = cValue(characteristic)
                value.status = status(error)
            }
            withUnsafePointer(to: &value) { callbacks.event!(context, $0) }
        }
    }
    pointer.pointee.depth -= 1
    return ok
}

@_cdecl("ancs_cts_storage_size")
public func ancsCTSStorageSize() -> Int { instanceOffset + MemoryLayout<CTSInstance>.size }

@_cdecl("ancs_cts_init")
public func ancsCTSInit(
    _ storage: UnsafeMutablePointer<ancs_cts_client>?, _ requestTimeout: UInt32,
    _ callbacks: UnsafePointer<ancs_cts_callbacks>?, _ context: UnsafeMutableRawPointer?
) -> ancs_status {
    guard let storage, let callbacks, callbacks.pointee.subscribe != nil, callbacks.pointee.read != nil,
          callbacks.pointee.event != nil
    else { return invalidArgument }
    guard ancsCTSStorageSize() <= MemoryLayout<ancs_cts_client>.size,
          MemoryLayout<CTSInstance>.alignment <= instanceOffset,
          Int(bitPattern: UnsafeRawPointer(storage)) % MemoryLayout<CTSInstance>.alignment == 0
    else { return storageError }
    var client = CTSClient()
    if requestTimeout != 0 { client.requestNanoseconds = Int64(requestTimeout) * 1_000_000 }
    let raw = UnsafeMutableRawPointer(storage)
    (raw + instanceOffset).bindMemory(to: CTSInstance.self, capacity: 1).initialize(to: CTSInstance(
        client: client, callbacks: callbacks.pointee, context: context))
    raw.storeBytes(of: ctsTag, as: UInt64.self)
    return ok
}

@_cdecl("ancs_cts_deinit")
public func ancsCTSDeinit(_ storage: UnsafeMutablePointer<ancs_cts_client>?) -> ancs_status {
    guard let pointer = ctsInstance(storage) else { return storageError }
    guard pointer.pointee.depth == 0 else { return busy }
    pointer.deinitialize(count: 1)
    UnsafeMutableRawPointer(storage!).storeBytes(of: 0, as: UInt64.self)
    return ok
}

@_cdecl("ancs_cts_link_up")
public func ancsCTSLinkUp(_ storage: UnsafeMutablePointer<ancs_cts_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = ctsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.linkUp(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_cts_link_down")
public func ancsCTSLinkDown(_ storage: UnsafeMutablePointer<ancs_cts_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = ctsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.linkDown(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_cts_stop")
public func ancsCTSStop(_ storage: UnsafeMutablePointer<ancs_cts_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = ctsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.stop(at: time(now)), turns: true, at: time(now))
}

@_cdecl("ancs_cts_read_result")
public func ancsCTSReadResult(
    _ storage: UnsafeMutablePointer<ancs_cts_client>?, _ token: UInt32, _ result: ancs_status,
    _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0, let read = readResult(result, bytes, count) else { return invalidArgument }
    guard let pointer = ctsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.readCompleted(WriteToken(rawValue: token), read, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_cts_current_time")
public func ancsCTSCurrentTime(
    _ storage: UnsafeMutablePointer<ancs_cts_client>?, _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0 else { return invalidArgument }
    guard let pointer = ctsInstance(storage) else { return storageError }
    let value = Array(UnsafeBufferPointer(start: bytes, count: count))
    return dispatch(pointer, pointer.pointee.client.received(currentTime: value, at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_cts_tick")
public func ancsCTSTick(_ storage: UnsafeMutablePointer<ancs_cts_client>?, _ now: UInt64) -> ancs_status {
    guard let pointer = ctsInstance(storage) else { return storageError }
    return dispatch(pointer, pointer.pointee.client.tick(at: time(now)), turns: false, at: time(now))
}

@_cdecl("ancs_cts_next_deadline")
public func ancsCTSNextDeadline(_ storage: UnsafePointer<ancs_cts_client>?, _ deadline: UnsafeMutablePointer<UInt64>?) -> Bool {
    guard let pointer = ctsInstance(storage), let next = pointer.pointee.client.nextDeadline else { return false }
    deadline?.pointee = milliseconds(next)
    return true
}

@_cdecl("ancs_cts_phone_time")
public func ancsCTSPhoneTime(
    _ storage: UnsafePointer<ancs_cts_client>?, _ now: UInt64, _ result: UnsafeMutablePointer<ancs_current_time>?
) -> Bool {
    guard let pointer = ctsInstance(storage), let phone = pointer.pointee.client.phoneTime(at: time(now)) else { return false }
    result?.pointee = cValue(phone)
    return true
}
