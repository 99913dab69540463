// Entry point of the parser-only footprint build (scripts/check-embedded.sh):
// what Nordic's ANCS client offers, without an engine — the Notification
// Source decoder, Get Notification / App Attributes encoding, and one Data
// Source response at a time streamed through DataSourceParser, values
// handed over as bytes.

var parser = DataSourceParser()
var command: [UInt8] = []
var checksum: UInt32 = 0

@_cdecl("ancs_parser_input")
public func ancsParserInput(_ kind: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int, _ output: UnsafeMutablePointer<UInt8>) -> Int32 {
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    switch kind {
    case 0:
        return exampleNotificationSource(input)
    case 1, 2:
        let request = exampleCommand(kind, bytes, count)
        guard let encoded = try? request.encode() else { return -1 }
        command = encoded
        guard command.withUnsafeBytes({ raw in (try? parser.begin(raw)) != nil }) else { return -1 }
        return exampleOutput(encoded, output)
    case 3:
        let consumed = command.withUnsafeBytes { raw in
            parser.feed(input, answering: raw) { event in
                switch event {
                case .attribute(let id, let length):
                    checksum = checksum &+ UInt32(id) &+ UInt32(truncatingIfNeeded: length)
                case .value(let value):
                    for byte in value { checksum = checksum &* 31 &+ UInt32(byte) }
                case .complete:
                    checksum &+= 1
                case .failed(let error):
                    checksum &+= UInt32(truncatingIfNeeded: error.offset)
                }
            }
        }
        return Int32(bitPattern: checksum &+ UInt32(truncatingIfNeeded: consumed))
    default:
        parser.reset()
        return 0
    }
}
