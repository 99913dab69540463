import ANCS

/// AMS and CTS in the host's line protocol (Host/PROTOCOL.md): the
/// characteristics' short names, and the services a link has.
extension MediaCharacteristic {
    /// `rc`, `eu`, `ea` (AMS), `ct`, `lt` (CTS).
    var bumbleName: String {
        switch self {
        case .ams(.remoteCommand): "rc"
        case .ams(.entityUpdate): "eu"
        case .ams(.entityAttribute): "ea"
        case .cts(.currentTime): "ct"
        case .cts(.localTimeInformation): "lt"
        }
    }

    init?(bumbleName: Substring) {
        switch bumbleName {
        case "rc": self = .ams(.remoteCommand)
        case "eu": self = .ams(.entityUpdate)
        case "ea": self = .ams(.entityAttribute)
        case "ct": self = .cts(.currentTime)
        case "lt": self = .cts(.localTimeInformation)
        default: return nil
        }
    }

    /// The `--media-uuids` argument: AMS's service and characteristics, then
    /// CTS's, in the order the host reads them; from the core, which has the
    /// one copy of them.
    static var bumbleUUIDArgument: String {
        ([AMSUUID.service] + AMSCharacteristic.allCases.map(\.uuid)
            + [CTSUUID.service] + CTSCharacteristic.allCases.map(\.uuid)).map(\.description).joined(separator: ",")
    }
}

/// Which media services a link has: `ams,cts`, `ams`, `cts` or `-`.
struct BumbleMediaServices: Hashable, Sendable {
    var ams: Bool
    var cts: Bool

    init(ams: Bool, cts: Bool) {
        self.ams = ams
        self.cts = cts
    }

    init?(_ field: Substring) {
        if field == "-" {
            self.init(ams: false, cts: false)
            return
        }
        let names = field.split(separator: ",")
        guard !names.isEmpty, names.allSatisfy({ $0 == "ams" || $0 == "cts" }) else { return nil }
        self.init(ams: names.contains("ams"), cts: names.contains("cts"))
    }
}
