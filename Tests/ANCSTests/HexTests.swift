import ANCS
import Testing

@Suite("Hex: the one encoder and parser")
struct HexTests {
    @Test("encodes in either case, with or without a separator; parses what it writes")
    func roundTrip() throws {
        let bytes: [UInt8] = [0x00, 0x0A, 0xA2, 0xFF]
        #expect(Hex.string(bytes) == "000aa2ff")
        #expect(Hex.string(bytes, uppercase: true, separator: " ") == "00 0A A2 FF")
        #expect(Hex.string(0xA2, uppercase: true) == "A2")
        #expect(Hex.string([UInt8]()) == "")
        for text in ["000aa2ff", "00 0A a2:FF", "\t000aA2fF "] { #expect(try Hex.bytes(text) == bytes) }
    }

    @Test("errors name the character and its position", arguments: [
        ("0g", "hex character 2: 'g' is not a hex digit"),
        ("0 1", "hex character 2: a byte needs two digits"),
        ("abc", "hex ends with half a byte (odd number of digits)"),
        ("00é", "hex character 3: 'é' is not a hex digit"),
    ])
    func errors(_ text: String, _ message: String) {
        #expect(throws: Hex.ParseError.self) { try Hex.bytes(text) }
        do { _ = try Hex.bytes(text) } catch { #expect(error.description == message) }
    }

    @Test("one byte, as an ATT code is written: one or two digits, with or without 0x")
    func oneByte() {
        for (text, byte) in [("0xa2", 0xA2), ("0XA3", 0xA3), ("0F", 0x0F), ("5", 0x05), ("0x5", 0x05), ("ff", 0xFF)] as [(String, UInt8)] {
            #expect(Hex.byte(text) == byte, "\(text)")
        }
        for text in ["", "0x", "123", "0xg1", "a 2", "0x1 "] { #expect(Hex.byte(text) == nil, "\(text)") }
    }
}

@Suite("ANCSCharacteristic: one place for UUIDs and names")
struct CharacteristicNamesTests {
    @Test("UUID, name and short name of each characteristic, and back")
    func names() {
        #expect(ANCSCharacteristic.allCases.map(\.shortName) == ["ns", "cp", "ds"])
        #expect(ANCSCharacteristic.allCases.map(\.uuid) == [ANCSUUID.notificationSource, ANCSUUID.controlPoint, ANCSUUID.dataSource])
        for characteristic in ANCSCharacteristic.allCases {
            #expect(ANCSCharacteristic(shortName: characteristic.shortName) == characteristic)
            #expect(ANCSCharacteristic(uuid: characteristic.uuid.lowercased()) == characteristic)
        }
        #expect(ANCSCharacteristic(shortName: "xx") == nil)
    }
}
