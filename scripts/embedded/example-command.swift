// Shared by the parser and reassembler footprint builds (scripts/check-embedded.sh):
// the command each asks for. kind 1: Get Notification Attributes for uid
// `count` (AppIdentifier, Title 64, Message 256, Date); otherwise Get App
// Attributes for the AppIdentifier in `bytes` (DisplayName).

func exampleCommand(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> ControlPointCommand {
    kind == 1
        ? .getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(UInt32(count)), attributes: [
            NotificationAttributeRequest(.appIdentifier), NotificationAttributeRequest(.title, maxLength: 64),
            NotificationAttributeRequest(.message, maxLength: 256), NotificationAttributeRequest(.date),
        ]))
        : .getAppAttributes(GetAppAttributes(appIdentifierBytes: Array(UnsafeBufferPointer(start: bytes, count: count))))
}
