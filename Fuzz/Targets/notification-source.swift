// sources: Identifiers Codec Reassembly
//
// NotificationSourceEvent.decode on arbitrary bytes. Invariants: no trap;
// exactly the 8-byte inputs decode, and a decoded event encodes to the very
// same bytes; both decode entry points (array, raw buffer) agree.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runNotificationSource(FuzzInput(start, count).bytes)
    return 0
}

func runNotificationSource(_ bytes: [UInt8]) {
    let raw = bytes.withUnsafeBytes { buffer in
        Result { () throws(DecodingError) in try NotificationSourceEvent.decode(buffer) }
    }
    do {
        let event = try NotificationSourceEvent.decode(bytes)
        check(bytes.count == NotificationSourceEvent.length, "\(bytes.count) bytes decoded")
        check(event.encode() == bytes, "encode(decode(x)) == x")
        check(raw == .success(event), "raw-buffer decode agrees")
    } catch {
        check(bytes.count != NotificationSourceEvent.length, "8 bytes failed: \(error)")
        check(error.reason == .notificationSourceLength(actual: bytes.count), "reason \(error.reason)")
        check(raw == .failure(error), "raw-buffer decode agrees")
    }
}
