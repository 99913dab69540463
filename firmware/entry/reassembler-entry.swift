// Entry point of the reassembler footprint build (scripts/check-embedded.sh):
// parser-entry.swift's subset with the Data Source reassembler (several
// requests outstanding, abandonment, resynchronization, values collected
// into responses) in place of the one-response DataSourceParser.

var reassembler = DataSourceReassembler()
var nextRequest: UInt32 = 0
var checksum: UInt32 = 0

@_cdecl("ancs_reassembler_input")
public func ancsReassemblerInput(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ output: UnsafeMutablePointer<UInt8>) -> Int32 {
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    switch kind {
    case 0:
        return exampleNotificationSource(input)
    case 1, 2:
        let command = exampleCommand(kind, bytes, count)
        guard let encoded = try? command.encode(), let request = DataSourceRequest(command) else { return -1 }
        nextRequest &+= 1
        reassembler.expect(request, id: nextRequest)
        return exampleOutput(encoded, output)
    case 3:
        reassembler.feed(input) { event in
            switch event {
            case .response(let id, .notificationAttributes(let response)):
                for attribute in response.attributes {
                    attribute.value.withBytes { value in for byte in value { checksum = checksum &* 31 &+ UInt32(byte) } }
                }
                checksum &+= id
            case .response(let id, .appAttributes(let response)):
                checksum &+= id &+ UInt32(response.attributes.count)
            case .failed(let id, let error):
                checksum &+= id &+ UInt32(truncatingIfNeeded: error.offset)
            case .unsolicited:
                checksum &+= 1
            }
        }
        return Int32(bitPattern: checksum)
    case 4:
        return reassembler.cancel(UInt32(count), responseMayFollow: true) ? 1 : 0
    default:
        reassembler.finish { _ in checksum &+= 1 }
        return 0
    }
}
