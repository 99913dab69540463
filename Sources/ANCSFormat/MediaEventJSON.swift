import ANCS

extension ANCSJSON {
    /// One AMS client event as a JSON object (`ancs listen --json`), beside
    /// the consumer's events. Names are the identifiers' (`nextTrack`,
    /// `title`); a PlaybackInfo value is also given parsed. Values appear only
    /// with `includeContents`; otherwise their byte length.
    ///
    /// - `mediaReady`: AMS is set up; updates follow.
    /// - `supportedCommands`: `commands`, the player's list now.
    /// - `mediaUpdated`: `attribute`, `value` (or `length`), `truncated`;
    ///   `playback` for PlaybackInfo (`state`, `rate`, `elapsed`).
    /// - `mediaCommandCompleted`: `request`, and `error` when it failed.
    /// - `mediaSetupFailed`, `mediaInvalidUpdate`: `error`.
    /// - `mediaEnded`: `reason` (`linkDown`, `serviceUnpublished`, `stopped`).
    public static func amsEvent(_ output: AMSClientEvent, includeContents: Bool = true) -> JSON {
        switch output {
        case .ready:
            return event("mediaReady")
        case .supportedCommands(let commands):
            return event("supportedCommands", [("commands", .array(commands.map { name($0.name, $0.rawValue) }))])
        case .updated(let attribute, let value, let isTruncated):
            var members: [(String, JSON)] = [("attribute", .string(attribute.description))]
            members.append(includeContents ? ("value", .string(value.string)) : ("length", .integer(value.count)))
            members.append(("truncated", .bool(isTruncated)))
            if includeContents, attribute == .playbackInfo, let info = PlaybackInfo(value) {
                members.append(("playback", .object([
                    ("state", name(info.state.name, UInt8(truncatingIfNeeded: info.state.rawValue))),
                    ("rate", .double(info.rate)), ("elapsed", .double(info.elapsed)),
                ])))
            }
            return event("mediaUpdated", members)
        case .commandCompleted(let id, let error):
            var members: [(String, JSON)] = [("request", .integer(Int(id.rawValue)))]
            if let error { members.append(("error", .string(error.description))) }
            return event("mediaCommandCompleted", members)
        case .setupFailed(let error):
            return event("mediaSetupFailed", [("error", .string(error.description))])
        case .invalidUpdate(let error):
            return event("mediaInvalidUpdate", [("error", .string(error.description))])
        case .ended(let reason):
            let text = switch reason {
            case .linkDown: "linkDown"
            case .serviceUnpublished: "serviceUnpublished"
            case .stopped: "stopped"
            }
            return event("mediaEnded", [("reason", .string(text))])
        }
    }

    /// One CTS client event as a JSON object (`ancs listen --json`):
    /// - `phoneTime`: `time` (the phone's local time, ISO 8601 without a
    ///   zone: CTS gives it apart), `adjustReason`;
    /// - `timeZone`: `utcOffsetMinutes` (null when unknown), `dstOffset` (the raw code);
    /// - `timeFailed`: `characteristic`, `error`.
    public static func ctsEvent(_ output: CTSClientEvent) -> JSON {
        switch output {
        case .currentTime(let time):
            var reasons: [JSON] = []
            let names: [(AdjustReason, String)] = [(.manualTimeUpdate, "manualTimeUpdate"),
                                                    (.externalReferenceTimeUpdate, "externalReferenceTimeUpdate"),
                                                    (.timeZoneChange, "timeZoneChange"),
                                                    (.daylightSavingChange, "daylightSavingChange")]
            for (reason, text) in names where time.adjustReason.contains(reason) { reasons.append(.string(text)) }
            return event("phoneTime", [("time", .string(time.date.description)), ("adjustReason", .array(reasons))])
        case .localTimeInformation(let zone):
            return event("timeZone", [("utcOffsetMinutes", zone.utcOffsetMinutes.map { .integer($0) } ?? .null),
                                      ("dstOffset", .integer(Int(zone.dstOffset)))])
        case .failed(let characteristic, let error):
            return event("timeFailed", [("characteristic", .string(characteristic.description)), ("error", .string("\(error)"))])
        }
    }
}

private func event(_ name: String, _ members: [(String, JSON)] = []) -> JSON {
    .object([("event", .string(name))] + members)
}
