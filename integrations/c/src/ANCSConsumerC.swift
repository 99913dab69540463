// The C API of ancs.h over the Consumer engine. Compiled with Embedded Swift
// together with Sources/ANCS as one module (integrations/c/build.sh), so the
// firmware links one object with no Swift runtime beyond Embedded's.
//
// An ancs_consumer is the caller's storage: a tag in its first word, then
// this file's `Instance` (the engine, the callbacks, a reusable action
// buffer). Every input runs the engine to completion into a buffer taken out
// of the instance, then hands the actions to the callbacks, so a callback may
// call back into the same instance.

import CANCS

/// "ANCS-NC" and the layout's version: storage without it was not initialized.
private let instanceTag: UInt64 = 0x414E_4353_4E43_0001
/// The instance starts after the tag, 16-byte aligned.
private let instanceOffset = 16

struct Callbacks {
    var subscribe: @convention(c) (UnsafeMutableRawPointer?, ancs_characteristic, Bool) -> Void
    var write: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int, UInt32) -> Void
    var event: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<ancs_event>?) -> Void
    var context: UnsafeMutableRawPointer?
}

struct Instance {
    var consumer: Consumer
    var callbacks: Callbacks
    /// Actions of the input being handled; taken out while they are dispatched.
    var actions: [ConsumerAction] = []
    /// Callbacks running (deinit is refused inside one).
    var depth = 0
    /// Sessions started or ended so far, as the callbacks were told: a
    /// callback that calls back (ancs_consumer_stop from an ADDED event)
    /// and so starts or ends one makes the actions its caller had left
    /// stale (`finish`).
    var sessionTurns: UInt32 = 0
}

private func instance(_ storage: UnsafeMutablePointer<ancs_consumer>?) -> UnsafeMutablePointer<Instance>? {
    guard let storage else { return nil }
    let raw = UnsafeMutableRawPointer(storage)
    guard raw.load(as: UInt64.self) == instanceTag else { return nil }
    return (raw + instanceOffset).assumingMemoryBound(to: Instance.self)
}

private func status(_ value: Int32) -> ancs_status { ancs_status(value) }

// MARK: - Values between C and Swift

private func time(_ milliseconds: UInt64) -> Timestamp {
    Timestamp(milliseconds: Int64(clamping: milliseconds))
}

/// A liveness interval in whole seconds (ancs.h: ANCS_OFF when off). In
/// nanoseconds as the engine keeps them: no `Duration` arithmetic linked.
private func seconds(_ nanoseconds: Int64) -> UInt32 {
    nanoseconds == 0 ? 0xFFFF_FFFF : UInt32(clamping: nanoseconds / 1_000_000_000)
}

/// A liveness interval of the C configuration, in nanoseconds: 0 takes the default, ANCS_OFF is off.
private func nanoseconds(_ setting: UInt32, _ fallback: UInt32) -> Int64 {
    let chosen = setting == 0 ? fallback : setting
    return chosen == 0xFFFF_FFFF ? 0 : Int64(chosen) * 1_000_000_000
}

private func milliseconds(_ time: Timestamp) -> UInt64 {
    let nanoseconds = time.nanoseconds
    guard nanoseconds > 0 else { return 0 }
    return UInt64(nanoseconds / 1_000_000) + (nanoseconds % 1_000_000 == 0 ? 0 : 1)  // rounded up: never early
}

private func attResult(_ value: ancs_status) -> ATTResult? {
    switch value {
    case 0: .success
    case 1...255: .attError(ATTErrorCode(rawValue: UInt8(value)))
    case Int32(ANCS_ERR_TRANSPORT): .transportFailure
    default: nil
    }
}

private func status(_ result: ATTResult) -> ancs_status {
    switch result {
    case .success: status(Int32(ANCS_OK))
    case .attError(let code): ancs_status(code.rawValue)
    case .transportFailure: status(Int32(ANCS_ERR_TRANSPORT))
    }
}

func status(_ error: ConsumerError) -> ancs_status {
    let value: Int32
    switch error {
    case .unknownCommand: value = Int32(ANCS_ATT_UNKNOWN_COMMAND)
    case .invalidCommand: value = Int32(ANCS_ATT_INVALID_COMMAND)
    case .invalidParameter: value = Int32(ANCS_ATT_INVALID_PARAMETER)
    case .actionFailed: value = Int32(ANCS_ATT_ACTION_FAILED)
    case .att(let code): value = Int32(code.rawValue)
    case .transportFailure: value = Int32(ANCS_ERR_TRANSPORT)
    case .invalidResponse: value = Int32(ANCS_ERR_INVALID_RESPONSE)
    case .timedOut: value = Int32(ANCS_ERR_TIMED_OUT)
    case .cancelled: value = Int32(ANCS_ERR_CANCELLED)
    case .sessionEnded: value = Int32(ANCS_ERR_SESSION_ENDED)
    case .notConnected: value = Int32(ANCS_ERR_NOT_CONNECTED)
    case .dataSourceUnavailable: value = Int32(ANCS_ERR_DATA_SOURCE_UNAVAILABLE)
    case .actionNotAvailable: value = Int32(ANCS_ERR_ACTION_NOT_AVAILABLE)
    case .unknownNotification: value = Int32(ANCS_ERR_UNKNOWN_NOTIFICATION)
    case .encoding: value = Int32(ANCS_ERR_ENCODING)
    case .tooManyRequests: value = Int32(ANCS_ERR_TOO_MANY_REQUESTS)
    case .notificationRemoved: value = Int32(ANCS_ERR_NOTIFICATION_REMOVED)
    }
    return ancs_status(value)
}

private func characteristic(_ value: ancs_characteristic) -> ANCSCharacteristic? {
    switch value {
    case ANCS_NOTIFICATION_SOURCE: .notificationSource
    case ANCS_CONTROL_POINT: .controlPoint
    case ANCS_DATA_SOURCE: .dataSource
    default: nil
    }
}

private func cValue(_ characteristic: ANCSCharacteristic) -> ancs_characteristic {
    switch characteristic {
    case .notificationSource: ANCS_NOTIFICATION_SOURCE
    case .controlPoint: ANCS_CONTROL_POINT
    case .dataSource: ANCS_DATA_SOURCE
    }
}

// MARK: - Events

/// Calls `body` with `count` attributes (`attribute(index)` gives each) as
/// C attributes, each pointing at its value's bytes where the engine holds
/// them: nothing is copied. The list is a temporary allocation, on the stack
/// for any response a display asks for (the standard library takes the heap
/// only past 1 KiB: an application's own request for hundreds of IDs).
private func withAttributes(
    _ count: Int, _ attribute: (Int) -> (id: UInt8, value: AttributeValue),
    _ body: (UnsafePointer<ancs_attribute>?, Int) -> Void
) {
    withUnsafeTemporaryAllocation(of: ancs_attribute.self, capacity: count) { list in
        // Each value's bytes stay valid only inside its `withBytes`: the list
        // is filled one nested call deeper per attribute, and `body` runs innermost.
        func fill(_ index: Int) {
            guard index < count else { return body(count == 0 ? nil : UnsafePointer(list.baseAddress), count) }
            let item = attribute(index)
            item.value.withBytes { bytes in
                list.initializeElement(at: index, to: ancs_attribute(
                    id: item.id, length: UInt16(truncatingIfNeeded: bytes.count), value: bytes.isEmpty ? nil : bytes.baseAddress))
                fill(index + 1)
            }
        }
        fill(0)
    }
}

private func describe(_ notification: ConsumerNotification, _ type: ancs_event_type, into event: inout ancs_event) {
    event.type = type
    event.uid = notification.uid.rawValue
    event.event_flags = notification.eventFlags.rawValue
    event.category_id = notification.categoryID.rawValue
    event.category_count = notification.categoryCount
    event.pre_existing = notification.isPreExisting
}

private func send(_ event: inout ancs_event, _ instance: Callbacks) {
    withUnsafePointer(to: &event) { instance.event(instance.context, $0) }
}

private func send<Tuple: AttributeTuple>(_ event: inout ancs_event, _ instance: Callbacks, attributes: [Tuple]) {
    withAttributes(attributes.count, { (attributes[$0].id.rawValue, attributes[$0].value) }) { list, count in
        event.attributes = list
        event.attribute_count = count
        send(&event, instance)
    }
}

private func send(_ event: inout ancs_event, _ instance: Callbacks, appIdentifier: [UInt8], attributes: [AppAttribute]) {
    appIdentifier.withUnsafeBufferPointer { identifier in
        event.app_identifier = identifier.baseAddress
        event.app_identifier_length = identifier.count
        send(&event, instance, attributes: attributes)
    }
}

private func emit(_ consumerEvent: ConsumerEvent, _ instance: Callbacks) {
    var event = ancs_event()
    switch consumerEvent {
    case .sessionStarted:
        event.type = ANCS_EVENT_SESSION_STARTED
        send(&event, instance)
    case .sessionEnded(let reason):
        event.type = ANCS_EVENT_SESSION_ENDED
        switch reason {
        case .linkDown: event.session_end = ANCS_SESSION_LINK_DOWN
        case .unsubscribed: event.session_end = ANCS_SESSION_UNSUBSCRIBED
        case .serviceUnpublished: event.session_end = ANCS_SESSION_SERVICE_UNPUBLISHED
        case .subscriptionFailed(let result):
            event.session_end = ANCS_SESSION_SUBSCRIPTION_FAILED
            event.status = status(result)
        case .resubscribing: event.session_end = ANCS_SESSION_RESUBSCRIBING
        }
        send(&event, instance)
    case .added(let notification), .modified(let notification), .removed(let notification):
        let type: ancs_event_type
        switch consumerEvent {
        case .added: type = ANCS_EVENT_ADDED
        case .modified: type = ANCS_EVENT_MODIFIED
        default: type = ANCS_EVENT_REMOVED
        }
        describe(notification, type, into: &event)
        send(&event, instance, attributes: notification.attributes)
    case .ready(let notification, let appName), .updated(let notification, let appName):
        let type: ancs_event_type
        if case .ready = consumerEvent { type = ANCS_EVENT_READY } else { type = ANCS_EVENT_UPDATED }
        describe(notification, type, into: &event)
        let values = notification.attributes
        guard let appName else { return send(&event, instance, attributes: values) }
        appName.withBytes { name in
            event.has_app_name = true
            event.app_name = name.baseAddress
            event.app_name_length = name.count
            send(&event, instance, attributes: values)
        }
    case .hidden(let uid):
        event.type = ANCS_EVENT_HIDDEN
        event.uid = uid.rawValue
        send(&event, instance)
    case .displayFailed(let uid, let error):
        event.type = ANCS_EVENT_DISPLAY_FAILED
        event.uid = uid.rawValue
        event.status = status(error)
        send(&event, instance)
    case .attributes(let response):
        event.type = ANCS_EVENT_ATTRIBUTES
        event.uid = response.notificationUID.rawValue
        send(&event, instance, attributes: response.attributes)
    case .appAttributes(let response):
        event.type = ANCS_EVENT_APP_ATTRIBUTES
        send(&event, instance, appIdentifier: response.appIdentifierBytes, attributes: response.attributes)
    case .completed(let id, let result):
        event.type = ANCS_EVENT_REQUEST_DONE
        event.request_id = id.rawValue
        switch result {
        case .failure(let error):
            event.status = status(error)
            send(&event, instance)
        case .success(.notificationAttributes(let response)):
            event.uid = response.notificationUID.rawValue
            send(&event, instance, attributes: response.attributes)
        case .success(.appAttributes(let response)):
            send(&event, instance, appIdentifier: response.appIdentifierBytes, attributes: response.attributes)
        case .success(.actionPerformed):
            send(&event, instance)
        }
    case .protocolError:
        event.type = ANCS_EVENT_PROTOCOL_ERROR
        event.status = status(Int32(ANCS_ERR_INVALID_RESPONSE))
        send(&event, instance)
    case .dataSourceUnavailable(let result):
        event.type = ANCS_EVENT_DATA_SOURCE_UNAVAILABLE
        event.status = status(result)
        send(&event, instance)
    case .unknownEvent(let source):
        event.type = ANCS_EVENT_UNKNOWN_EVENT
        event.event_id = source.eventID.rawValue
        event.event_flags = source.eventFlags.rawValue
        event.category_id = source.categoryID.rawValue
        event.category_count = source.categoryCount
        event.uid = source.notificationUID.rawValue
        send(&event, instance)
    case .health(let health):
        event.type = ANCS_EVENT_HEALTH
        switch health {
        case .healthy: event.health = ANCS_HEALTH_HEALTHY
        case .waitingForPermission(let characteristic, let code):
            event.health = ANCS_HEALTH_WAITING_FOR_PERMISSION
            event.refused = cValue(characteristic)
            event.status = status(ATTResult.attError(code))
        case .notShared: event.health = ANCS_HEALTH_NOT_SHARED
        case .resubscribing(let reason):
            event.health = ANCS_HEALTH_RESUBSCRIBING
            switch reason {
            case .probeUnanswered: event.resubscribe_reason = ANCS_RESUBSCRIBE_PROBE_UNANSWERED
            case .missedNotification: event.resubscribe_reason = ANCS_RESUBSCRIBE_MISSED_NOTIFICATION
            case .notificationSourceSilent: event.resubscribe_reason = ANCS_RESUBSCRIBE_NOTIFICATION_SOURCE_SILENT
            case .subscriptionLost: event.resubscribe_reason = ANCS_RESUBSCRIBE_SUBSCRIPTION_LOST
            case .sharingRestored: event.resubscribe_reason = ANCS_RESUBSCRIBE_SHARING_RESTORED
            }
        case .bondLost: event.health = ANCS_HEALTH_BOND_LOST
        }
        send(&event, instance)
    }
}

/// The instance, with the reused action buffer taken out of it (a nested
/// call from a callback finds none and makes its own). Each input runs the
/// engine into the buffer, to the end, then `finish` runs the callbacks:
/// two plain functions rather than one taking a closure, which the compiler
/// would copy into every export.
private func begin(_ storage: UnsafeMutablePointer<ancs_consumer>?) -> (UnsafeMutablePointer<Instance>, [ConsumerAction])? {
    guard let pointer = instance(storage) else { return nil }
    // Empty: `finish` empties the buffer before putting it back.
    var actions: [ConsumerAction] = []
    swap(&actions, &pointer.pointee.actions)
    return (pointer, actions)
}

@inline(never)
private func finish(_ pointer: UnsafeMutablePointer<Instance>, _ actions: inout [ConsumerAction], _ result: ancs_status) -> ancs_status {
    let callbacks = pointer.pointee.callbacks
    pointer.pointee.depth += 1
    var turns = pointer.pointee.sessionTurns
    var stale = false
    for action in actions {
        stale = stale || pointer.pointee.sessionTurns != turns
        if stale {
            // A callback called back and started or ended a session: what is
            // left was computed before, for the session that was (a write,
            // an event after SESSION_ENDED). Only a request's end is still
            // told, so that each one ends exactly once.
            guard case .emit(.completed) = action else { continue }
        } else if case .emit(.sessionStarted) = action {
            turns &+= 1
            pointer.pointee.sessionTurns = turns
        } else if case .emit(.sessionEnded) = action {
            turns &+= 1
            pointer.pointee.sessionTurns = turns
        }
        switch action {
        case .subscribe(let characteristic): callbacks.subscribe(callbacks.context, cValue(characteristic), true)
        case .unsubscribe(let characteristic): callbacks.subscribe(callbacks.context, cValue(characteristic), false)
        case .writeControlPoint(let bytes, let token):
            bytes.withUnsafeBufferPointer { callbacks.write(callbacks.context, $0.baseAddress, $0.count, token.rawValue) }
        case .emit(let event): emit(event, callbacks)
        }
    }
    pointer.pointee.depth -= 1
    // Most inputs (a Data Source notification inside a value) cause no action.
    if !actions.isEmpty { actions.removeAll(keepingCapacity: true) }
    if pointer.pointee.actions.capacity < actions.capacity { swap(&actions, &pointer.pointee.actions) }
    return result
}

private let ok = ancs_status(Int32(ANCS_OK))
private let storageError = ancs_status(Int32(ANCS_ERR_STORAGE))
private let invalidArgument = ancs_status(Int32(ANCS_ERR_INVALID_ARGUMENT))

/// The request's status: ANCS_OK, or its failure when the engine ended it at once.
private func requestStatus(_ id: ConsumerRequestID, _ actions: [ConsumerAction]) -> ancs_status {
    for action in actions {
        if case .emit(.completed(id, .failure(let error))) = action { return status(error) }
    }
    return ok
}

// MARK: - Exports

@_cdecl("ancs_consumer_storage_size")
public func ancsConsumerStorageSize() -> Int {
    instanceOffset + MemoryLayout<Instance>.size
}

@_cdecl("ancs_consumer_config_default")
public func ancsConsumerConfigDefault(_ config: UnsafeMutablePointer<ancs_consumer_config>?) {
    guard let config else { return }
    let defaults = ConsumerConfiguration.default
    var value = ancs_consumer_config()
    value.request_timeout_ms = UInt32(defaults.requestNanoseconds / 1_000_000)
    value.pipelining_depth = UInt8(clamping: defaults.pipeliningDepth)
    value.display_attributes = ancs_default_display_attributes(&value.display_attribute_count)
    value.display_app_names = defaults.eagerAppNames
    value.refresh_on_modified = defaults.refreshOnModified
    value.max_notifications = UInt16(clamping: defaults.maximumNotifications)
    value.max_cached_apps = UInt16(clamping: defaults.maximumCachedApps)
    value.max_requests = UInt16(clamping: defaults.maximumRequests)
    value.unlimited_value_length = UInt16(clamping: defaults.unlimitedValueLength)
    value.probe_interval_s = seconds(defaults.probeNanoseconds)
    value.silence_limit_s = seconds(defaults.silenceNanoseconds)
    value.retry_interval_s = seconds(defaults.retryNanoseconds)
    config.pointee = value
}

@_cdecl("ancs_consumer_config_microcontroller")
public func ancsConsumerConfigMicrocontroller(_ config: UnsafeMutablePointer<ancs_consumer_config>?) {
    guard let config else { return }
    ancsConsumerConfigDefault(config)
    let preset = ConsumerConfiguration.microcontroller
    config.pointee.max_notifications = UInt16(clamping: preset.maximumNotifications)
    config.pointee.max_cached_apps = UInt16(clamping: preset.maximumCachedApps)
    config.pointee.max_requests = UInt16(clamping: preset.maximumRequests)
    config.pointee.unlimited_value_length = UInt16(clamping: preset.unlimitedValueLength)
}

@_cdecl("ancs_consumer_init")
public func ancsConsumerInit(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ config: UnsafePointer<ancs_consumer_config>?,
    _ callbacks: UnsafePointer<ancs_consumer_callbacks>?, _ context: UnsafeMutableRawPointer?
) -> ancs_status {
    guard let storage, let callbacks, let subscribe = callbacks.pointee.subscribe,
          let write = callbacks.pointee.write_control_point, let event = callbacks.pointee.event
    else { return invalidArgument }
    guard ancsConsumerStorageSize() <= MemoryLayout<ancs_consumer>.size,
          MemoryLayout<Instance>.alignment <= instanceOffset,
          Int(bitPattern: UnsafeRawPointer(storage)) % MemoryLayout<Instance>.alignment == 0
    else { return storageError }
    // NULL is the microcontroller preset: what a firmware gets without
    // choosing has a stated worst case (ancs.h, ANCS_MICROCONTROLLER_HEAP_BOUND).
    var settings = ancs_consumer_config()
    if let config { settings = config.pointee } else { ancsConsumerConfigMicrocontroller(&settings) }
    if settings.display_attribute_count > 0 && settings.display_attributes == nil { return invalidArgument }
    var display: [NotificationAttributeRequest] = []
    for index in 0..<settings.display_attribute_count {
        let request = settings.display_attributes[index]
        guard request.id <= NotificationAttributeID.negativeActionLabel.rawValue else { return invalidArgument }
        display.append(NotificationAttributeRequest(NotificationAttributeID(rawValue: request.id), maxLength: request.max_length))
    }
    // A numeric field left 0 takes the microcontroller preset's value
    // (ancs.h): a zero-initialised configuration is not a 1 ms timeout, a
    // model of one notification, or a consumer refusing every AppIdentifier
    // and Date, nor one whose heap is bounded only loosely.
    var defaults = ancs_consumer_config()
    ancsConsumerConfigMicrocontroller(&defaults)
    func value<T: BinaryInteger>(_ setting: T, _ fallback: T) -> Int { Int(setting == 0 ? fallback : setting) }
    let configuration = ConsumerConfiguration(
        pipeliningDepth: value(settings.pipelining_depth, defaults.pipelining_depth),
        eagerAttributes: display,
        eagerAppNames: settings.display_app_names,
        refreshOnModified: settings.refresh_on_modified,
        maximumNotifications: value(settings.max_notifications, defaults.max_notifications),
        maximumCachedApps: value(settings.max_cached_apps, defaults.max_cached_apps),
        maximumRequests: value(settings.max_requests, defaults.max_requests),
        unlimitedValueLength: value(settings.unlimited_value_length, defaults.unlimited_value_length))
    var liveness = configuration
    liveness.requestNanoseconds = Int64(value(settings.request_timeout_ms, defaults.request_timeout_ms)) * 1_000_000
    liveness.probeNanoseconds = nanoseconds(settings.probe_interval_s, defaults.probe_interval_s)
    liveness.silenceNanoseconds = nanoseconds(settings.silence_limit_s, defaults.silence_limit_s)
    liveness.retryNanoseconds = nanoseconds(settings.retry_interval_s, defaults.retry_interval_s)
    // Nothing of this API reads the model's values: it keeps them only
    // until READY or UPDATED carries them (`keepsAttributes`, ancs.h "Memory").
    liveness.keepsAttributes = false
    // What the display fetches (zero: everything, the whole backlog).
    liveness.hiddenCategories = CategorySet(rawValue: settings.hidden_categories)
    liveness.fetchesSilent = !settings.skip_silent
    if settings.max_pre_existing != 0 { liveness.maximumPreExisting = settings.max_pre_existing == 0xFFFF ? 0 : Int(settings.max_pre_existing) }
    if settings.hidden_app_count > 0 && settings.hidden_apps == nil { return invalidArgument }
    for index in 0..<settings.hidden_app_count {
        guard let app = settings.hidden_apps[index] else { return invalidArgument }
        var length = 0
        while app[length] != 0 { length += 1 }
        liveness.hiddenApps.append(Array(UnsafeRawBufferPointer(start: app, count: length).bindMemory(to: UInt8.self)))
    }
    // The storage's previous contents are not looked at (they may be anything).
    let raw = UnsafeMutableRawPointer(storage)
    (raw + instanceOffset).bindMemory(to: Instance.self, capacity: 1).initialize(to: Instance(
        consumer: Consumer(configuration: liveness),
        callbacks: Callbacks(subscribe: subscribe, write: write, event: event, context: context)))
    raw.storeBytes(of: instanceTag, as: UInt64.self)
    return ok
}

@_cdecl("ancs_consumer_deinit")
public func ancsConsumerDeinit(_ storage: UnsafeMutablePointer<ancs_consumer>?) -> ancs_status {
    guard let pointer = instance(storage) else { return storageError }
    guard pointer.pointee.depth == 0 else { return status(Int32(ANCS_ERR_BUSY)) }
    pointer.deinitialize(count: 1)
    UnsafeMutableRawPointer(storage!).storeBytes(of: 0, as: UInt64.self)
    return ok
}

@_cdecl("ancs_consumer_link_up")
public func ancsConsumerLinkUp(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ mtu: UInt16, _ now: UInt64) -> ancs_status {
    guard mtu >= 23 else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.linkUp(mtu: Int(mtu), at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_mtu_changed")
public func ancsConsumerMTUChanged(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ mtu: UInt16, _ now: UInt64) -> ancs_status {
    guard mtu >= 23 else { return invalidArgument }
    guard let pointer = instance(storage) else { return storageError }
    pointer.pointee.consumer.mtuChanged(Int(mtu))
    return ok
}

@_cdecl("ancs_consumer_subscription_result")
public func ancsConsumerSubscriptionResult(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ which: ancs_characteristic, _ result: ancs_status, _ now: UInt64
) -> ancs_status {
    guard let characteristic = characteristic(which), characteristic != .controlPoint, let result = attResult(result)
    else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.subscriptionCompleted(characteristic, result, at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_notification_source")
public func ancsConsumerNotificationSource(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0 else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.received(notificationSource: UnsafeRawBufferPointer(start: bytes, count: count), at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_data_source")
public func ancsConsumerDataSource(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ bytes: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64
) -> ancs_status {
    guard bytes != nil || count == 0 else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.received(dataSource: UnsafeRawBufferPointer(start: bytes, count: count), at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_write_result")
public func ancsConsumerWriteResult(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ token: UInt32, _ result: ancs_status, _ now: UInt64
) -> ancs_status {
    guard let result = attResult(result) else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.writeCompleted(WriteToken(rawValue: token), result, at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_tick")
public func ancsConsumerTick(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.tick(at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_link_down")
public func ancsConsumerLinkDown(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.linkDown(at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_bond_lost")
public func ancsConsumerBondLost(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.bondLost(at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_service_changed")
public func ancsConsumerServiceChanged(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ published: Bool, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.serviceChanged(published: published, at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_stop")
public func ancsConsumerStop(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.stop(at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}

@_cdecl("ancs_consumer_next_deadline")
public func ancsConsumerNextDeadline(_ storage: UnsafePointer<ancs_consumer>?, _ deadline: UnsafeMutablePointer<UInt64>?) -> Bool {
    guard let pointer = instance(UnsafeMutablePointer(mutating: storage)), let next = pointer.pointee.consumer.deadlineInPlace() else { return false }
    deadline?.pointee = milliseconds(next)
    return true
}

extension Consumer {
    /// `nextDeadline`, read where the engine is: read through the pointer,
    /// the whole engine was copied first (504 bytes of copying code).
    fileprivate mutating func deadlineInPlace() -> Timestamp? { nextDeadline }
}

@_cdecl("ancs_consumer_in_session")
public func ancsConsumerInSession(_ storage: UnsafePointer<ancs_consumer>?) -> Bool {
    instance(UnsafeMutablePointer(mutating: storage))?.pointee.consumer.isInSession ?? false
}

@_cdecl("ancs_consumer_fetch_attributes")
public func ancsConsumerFetchAttributes(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ uid: UInt32, _ list: UnsafePointer<ancs_attribute_request>?,
    _ count: Int, _ now: UInt64, _ requestID: UnsafeMutablePointer<UInt32>?
) -> ancs_status {
    guard let list, count > 0, count <= 8 else { return invalidArgument }
    var attributes: [NotificationAttributeRequest] = []
    for index in 0..<count {
        guard list[index].id <= NotificationAttributeID.negativeActionLabel.rawValue else { return invalidArgument }
        attributes.append(NotificationAttributeRequest(NotificationAttributeID(rawValue: list[index].id), maxLength: list[index].max_length))
    }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    let id = pointer.pointee.consumer.fetchAttributes(attributes, for: NotificationUID(uid), at: time(now), into: &actions)
    requestID?.pointee = id.rawValue
    return finish(pointer, &actions, requestStatus(id, actions))
}

@_cdecl("ancs_consumer_fetch_app_attributes")
public func ancsConsumerFetchAppAttributes(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ identifier: UnsafePointer<UInt8>?, _ length: Int,
    _ list: UnsafePointer<UInt8>?, _ count: Int, _ now: UInt64, _ requestID: UnsafeMutablePointer<UInt32>?
) -> ancs_status {
    guard let identifier, length > 0, list != nil || count == 0, count <= 8 else { return invalidArgument }
    let bytes = Array(UnsafeBufferPointer(start: identifier, count: length))
    var attributes: [AppAttributeID] = [.displayName]
    if let list, count > 0 { attributes = (0..<count).map { AppAttributeID(rawValue: list[$0]) } }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    let id = pointer.pointee.consumer.fetchAppAttributes(appIdentifierBytes: bytes, attributes, at: time(now), into: &actions)
    requestID?.pointee = id.rawValue
    return finish(pointer, &actions, requestStatus(id, actions))
}

@_cdecl("ancs_consumer_perform_action")
public func ancsConsumerPerformAction(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ uid: UInt32, _ action: UInt8, _ now: UInt64,
    _ requestID: UnsafeMutablePointer<UInt32>?
) -> ancs_status {
    guard action == ActionID.positive.rawValue || action == ActionID.negative.rawValue else { return invalidArgument }
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    let id = pointer.pointee.consumer.performAction(ActionID(rawValue: action), on: NotificationUID(uid), at: time(now), into: &actions)
    requestID?.pointee = id.rawValue
    return finish(pointer, &actions, requestStatus(id, actions))
}

@_cdecl("ancs_consumer_add_app_name")
public func ancsConsumerAddAppName(
    _ storage: UnsafeMutablePointer<ancs_consumer>?, _ identifier: UnsafePointer<UInt8>?, _ length: Int,
    _ name: UnsafePointer<UInt8>?, _ nameLength: Int
) -> ancs_status {
    guard let identifier, length > 0, name != nil || nameLength == 0, nameLength <= 0xFFFF else { return invalidArgument }
    guard let pointer = instance(storage) else { return storageError }
    let value = nameLength == 0 ? AttributeValue.empty : AttributeValue(bytes: Array(UnsafeBufferPointer(start: name, count: nameLength)))
    pointer.pointee.consumer.learn(AppAttributesResponse(
        appIdentifierBytes: Array(UnsafeBufferPointer(start: identifier, count: length)),
        attributes: [AppAttribute(.displayName, value)]))
    return ok
}

@_cdecl("ancs_consumer_cancel")
public func ancsConsumerCancel(_ storage: UnsafeMutablePointer<ancs_consumer>?, _ requestID: UInt32, _ now: UInt64) -> ancs_status {
    guard case (let pointer, var actions)? = begin(storage) else { return storageError }
    pointer.pointee.consumer.cancel(ConsumerRequestID(rawValue: requestID), at: time(now), into: &actions)
    return finish(pointer, &actions, ok)
}
