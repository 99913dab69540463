// Control Point decode (a hostile NC against our NP): never traps; a decoded
// command re-encodes and decodes to the same command; errors map to 0xA0/0xA1.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = FuzzInput(start, count)
    do {
        let command = try ControlPointCommand.decode(input.bytes)
        if let again = try? command.encode() {
            let decoded = try? ControlPointCommand.decode(again)
            check(decoded == command, "decode(encode(x)) == x")
        }
    } catch {
        let code = error.controlPointErrorCode
        check(code == .unknownCommand || code == .invalidCommand, "code")
        check(error.offset >= 0 && error.offset <= input.bytes.count, "offset in range")
    }
    // The same bytes at the provider: exactly one answer to the write.
    var provider = Provider()
    provider.registerApp(identifier: "com.example.app", displayName: "App")
    _ = try? provider.add(ProviderNotification(appIdentifier: "com.example.app", flags: [.negativeAction], title: "t", message: "m"))
    _ = provider.connect(ConnectionID(1), mtu: 23)
    _ = provider.setSubscription(ConnectionID(1), .dataSource, enabled: true)
    let actions = provider.controlPointWritten(ConnectionID(1), input.bytes)
    var responses = 0
    for action in actions {
        switch action {
        case .respond: responses += 1
        case .notify(_, _, let bytes): check(bytes.count <= 20, "fragment ≤ MTU − 3")
        case .emit: break
        }
    }
    check(responses == 1, "one answer per write, got \(responses)")
    return 0
}
