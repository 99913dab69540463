#if os(Linux)
import ANCS
import ANCSRuntime

/// How BlueZ reports ATT outcomes as D-Bus errors, both ways.
public enum BlueZ {
    /// The result of a failed `GattCharacteristic1` call (client side).
    ///
    /// BlueZ answers an ATT error response with a D-Bus error: a few codes
    /// get their own names (`NotPermitted` "Not paired" for insufficient
    /// authentication, `NotAuthorized`, `NotSupported`, `InvalidArguments`);
    /// every other code, the ANCS ones included, comes as
    /// `org.bluez.Error.Failed` "Operation failed with ATT error: 0xa2".
    /// Errors without an ATT code (not connected, in progress, a D-Bus
    /// timeout) are transport failures.
    /// Some releases name that error `org.bluez.Error` alone: a message with
    /// an ATT code gives the code whatever the name.
    public static func result(errorName: String, message: String) -> ATTResult {
        if errorName.hasPrefix("org.bluez.Error"), let code = attCode(in: message) {
            return .attError(ATTErrorCode(rawValue: code))
        }
        switch errorName {
        case "org.bluez.Error.NotPermitted":
            if message.contains("Read not permitted") { return .attError(.readNotPermitted) }
            if message.contains("Write not permitted") { return .attError(.writeNotPermitted) }
            if message.contains("Not paired") { return .attError(.insufficientAuthentication) }
            return .transportFailure
        case "org.bluez.Error.NotAuthorized": return .attError(.insufficientAuthorization)
        case "org.bluez.Error.NotSupported": return .attError(.requestNotSupported)
        case "org.bluez.Error.InvalidArguments", "org.bluez.Error.InvalidArgs":
            if message.contains("Invalid offset") { return .attError(.invalidOffset) }
            if message.contains("Invalid Length") { return .attError(.invalidAttributeValueLength) }
            return .transportFailure
        case "org.bluez.Error.InvalidValueLength": return .attError(.invalidAttributeValueLength)
        case "org.bluez.Error.InvalidOffset": return .attError(.invalidOffset)
        default: return .transportFailure
        }
    }

    /// The code in "... ATT error: 0xNN ..." (hex digits in either case).
    static func attCode(in message: String) -> UInt8? {
        guard let marker = message.firstRange(of: "ATT error: ") else { return nil }
        return Hex.byte(message[marker.upperBound...].prefix { !$0.isWhitespace })
    }
}

#endif
