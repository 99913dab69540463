#if os(Linux)
import ANCS
import ANCSBlueZ
import ANCSRuntime
import Testing

@Suite("BlueZ error mapping")
struct BlueZErrorTests {
    @Test("BlueZ D-Bus errors map to ATT results")
    func blueZClientErrors() {
        #expect(BlueZ.result(errorName: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0xa2") == .attError(.invalidParameter))
        #expect(BlueZ.result(errorName: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0xA3 (Unknown)") == .attError(.actionFailed))
        #expect(BlueZ.result(errorName: "org.bluez.Error.NotPermitted", message: "Not paired") == .attError(.insufficientAuthentication))
        #expect(BlueZ.result(errorName: "org.bluez.Error.NotAuthorized", message: "") == .attError(.insufficientAuthorization))
        #expect(BlueZ.result(errorName: "org.bluez.Error.NotPermitted", message: "Write not permitted") == .attError(.writeNotPermitted))
        // Releases whose error for the other codes is named org.bluez.Error alone.
        #expect(BlueZ.result(errorName: "org.bluez.Error", message: "Operation failed with ATT error: 0xfd") == .attError(ATTErrorCode(rawValue: 0xFD)))
        #expect(BlueZ.result(errorName: "org.bluez.Error.Failed", message: "Not connected") == .transportFailure)
        #expect(BlueZ.result(errorName: "org.bluez.Error.Failed", message: "Operation failed") == .transportFailure)
        #expect(BlueZ.result(errorName: "org.freedesktop.DBus.Error.NoReply", message: "timeout") == .transportFailure)
    }
}

#endif
