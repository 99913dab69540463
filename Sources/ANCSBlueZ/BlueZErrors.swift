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
    public static func result(errorName: String, message: String) -> ATTResult {
        switch errorName {
        case "org.bluez.Error.Failed":
            if let code = attCode(in: message) { return .attError(ATTErrorCode(rawValue: code)) }
            return .transportFailure
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

    /// The D-Bus error a GATT application (server side) answers `WriteValue`
    /// with, or nil for success.
    ///
    /// BlueZ turns `org.bluez.Error.Failed` with a message that is just a
    /// number into that ATT code, but only for application errors
    /// 0x80–0x9F; it answers the ANCS codes 0xA0–0xA3 as 0x0E (Unlikely
    /// Error). A BlueZ-hosted NP therefore cannot send the exact ANCS code.
    public static func error(for result: ATTResult) -> (name: String, message: String)? {
        switch result {
        case .success:
            return nil
        case .transportFailure:
            return ("org.bluez.Error.Failed", "transport failure")
        case .attError(let code):
            switch code {
            case .writeNotPermitted: return ("org.bluez.Error.NotPermitted", "Write not permitted")
            case .requestNotSupported: return ("org.bluez.Error.NotSupported", "Not supported")
            case .invalidOffset: return ("org.bluez.Error.InvalidOffset", "Invalid offset")
            case .insufficientAuthorization: return ("org.bluez.Error.NotAuthorized", "Not authorized")
            case .invalidAttributeValueLength: return ("org.bluez.Error.InvalidValueLength", "Invalid length")
            default: return ("org.bluez.Error.Failed", "0x" + Hex.string(code.rawValue, uppercase: true))
            }
        }
    }

    /// The code in "... ATT error: 0xNN ..." (hex digits in either case).
    static func attCode(in message: String) -> UInt8? {
        guard let marker = message.firstRange(of: "ATT error: 0x") else { return nil }
        var value: UInt16 = 0
        var digits = 0
        for character in message[marker.upperBound...] {
            guard let digit = character.hexDigitValue else { break }
            value = value * 16 + UInt16(digit)
            digits += 1
            if digits > 2 { return nil }
        }
        return digits == 0 ? nil : UInt8(value)
    }
}

#endif
