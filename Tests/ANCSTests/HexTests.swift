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
            #expect(ANCSCharacteristic(uuid: characteristic.uuid) == characteristic)
            #expect(BluetoothUUID(characteristic.uuid.description.lowercased()) == characteristic.uuid)
        }
        #expect(ANCSCharacteristic(shortName: "xx") == nil)
    }
}

@Suite("BluetoothUUID: one type for UUIDs")
struct BluetoothUUIDTests {
    @Test("reads either case and the 16-bit form; prints upper case; compares bits")
    func forms() {
        let service = ANCSUUID.service
        #expect(service.description == "7905F431-B5CE-4E99-A40F-4B1E122D00D0")
        #expect(BluetoothUUID("7905f431-b5ce-4e99-a40f-4b1e122d00d0") == service)
        #expect(service.bytes.first == 0x79 && service.bytes.last == 0xD0 && service.bytes.count == 16)
        #expect(service.uuid16 == nil)
        #expect(ANCSUUID.serviceChanged.uuid16 == 0x2A05)
        #expect(BluetoothUUID("2a05") == ANCSUUID.serviceChanged)
        #expect(ANCSUUID.serviceChanged.description == "00002A05-0000-1000-8000-00805F9B34FB")
        #expect(BluetoothUUID("00002a05-0000-1000-8000-00805f9b34fb") == ANCSUUID.serviceChanged)
        for bad in ["", "7905F431B5CE4E99A40F4B1E122D00D0", "7905F431-B5CE-4E99-A40F-4B1E122D00D", "7905F431-B5CE-4E99-A40F-4B1E122D00DG", "2a0", "2a05-"] {
            #expect(BluetoothUUID(bad) == nil, "\(bad)")
        }
    }
}
