// sources: Identifiers Codec Reassembly
//
// ControlPointCommand.decode on arbitrary bytes (a hostile NC against our NP).
// Invariants: no trap; a decoded command re-encodes and decodes to the same
// command, and re-encodes to the very same bytes unless an AppIdentifier was
// not valid UTF-8 (decoded leniently) or the input was longer than an ATT
// write; its Data Source request expects one tuple per attribute asked; a
// failure is 0xA0 for an unknown CommandID, 0xA1 otherwise, at an offset
// inside the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runControlPoint(FuzzInput(start, count).bytes)
    return 0
}

func runControlPoint(_ bytes: [UInt8]) {
    let command: ControlPointCommand
    do {
        command = try ControlPointCommand.decode(bytes)
    } catch {
        let unknown = bytes.first.map { $0 > 2 } ?? false
        check(error.controlPointErrorCode == (unknown ? .unknownCommand : .invalidCommand),
              "\(error) answered \(error.controlPointErrorCode)")
        check(error.offset >= 0 && error.offset <= bytes.count, "offset \(error.offset) outside \(bytes.count) bytes")
        return
    }
    check(command.commandID.rawValue == bytes[0], "CommandID \(command.commandID) from byte \(bytes[0])")

    var lenient = false
    switch command {
    case .getNotificationAttributes(let c):
        check(DataSourceRequest(command)?.tupleCount == c.attributes.count, "tuples expected for \(command)")
    case .getAppAttributes(let c):
        check(DataSourceRequest(command)?.tupleCount == c.attributes.count, "tuples expected for \(command)")
        let nul = bytes[1...].firstIndex(of: 0)!
        lenient = String(validating: bytes[1..<nul], as: UTF8.self) == nil
    case .performNotificationAction:
        check(DataSourceRequest(command) == nil, "Perform Notification Action expects no Data Source response")
    }

    let again: [UInt8]
    do {
        again = try command.encode()
    } catch {
        // Only a command as long as an ATT write allows, or one grown by
        // U+FFFD replacements, can fail to encode.
        check(bytes.count > ControlPointCommand.maximumLength || lenient, "\(command) from \(bytes.count) bytes: \(error)")
        return
    }
    check(lenient || again == bytes, "encode(decode(x)) == x")
    check((try? ControlPointCommand.decode(again)) == command, "decode(encode(c)) == c")
}
