// Notification Source decode on arbitrary bytes; a decoded event re-encodes to the same bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = FuzzInput(start, count)
    do {
        let event = try NotificationSourceEvent.decode(input.bytes)
        check(event.encode() == input.bytes, "round trip")
    } catch {
        check(input.bytes.count != 8, "8 bytes always decode")
        check(error.description.contains("exactly 8 bytes"), "message")
    }
    return 0
}
