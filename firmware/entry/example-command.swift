// Shared by the parser and reassembler footprint builds (scripts/check-embedded.sh):
// what both entries do alike (Notification Source decoding, handing the
// encoded command back) and the command each asks for.

/// kind 0: a Notification Source event's NotificationUID, or -1 for bytes that are not one.
func exampleNotificationSource(_ input: UnsafeRawBufferPointer) -> Int32 {
    guard let event = try? NotificationSourceEvent.decode(input) else { return -1 }
    return Int32(bitPattern: event.notificationUID.rawValue)
}

/// Copies the encoded command to the caller's buffer; returns its length.
func exampleOutput(_ encoded: [UInt8], _ output: UnsafeMutablePointer<UInt8>) -> Int32 {
    for (index, byte) in encoded.enumerated() { output[index] = byte }
    return Int32(encoded.count)
}

/// kind 1: Get Notification Attributes for uid `count` (AppIdentifier, Title
/// 64, Message 256, Date); otherwise Get App Attributes for the AppIdentifier
/// in `bytes` (DisplayName).
func exampleCommand(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> ControlPointCommand {
    kind == 1
        ? .getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(UInt32(count)), attributes: [
            NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 64),
            NotificationAttributeRequest(.message, maxLength: 256), NotificationAttributeRequest(.date),
        ]))
        : .getAppAttributes(GetAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count))))
}
