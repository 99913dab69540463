import ANCS

extension ANCSJSON {
    /// One consumer event as a JSON object (`ancs demo --json`, `ancs listen --json`).
    /// Attribute values appear only with `includeContents`; otherwise their byte length.
    public static func consumerEvent(_ event: ConsumerEvent, includeContents: Bool = true) -> JSON {
        func notification(_ kind: String, _ n: ConsumerNotification) -> JSON {
            var members: [(String, JSON)] = [
                ("event", .string(kind)),
                ("uid", .integer(Int(n.uid.rawValue))),
                ("category", name(n.categoryID.name, n.categoryID.rawValue)),
                ("categoryCount", .integer(Int(n.categoryCount))),
                ("flags", flags(n.eventFlags)),
            ]
            if !n.attributes.isEmpty {
                members.append(("attributes", attributes(n.attributes, includeContents: includeContents)))
            }
            return .object(members)
        }
        switch event {
        case .sessionStarted:
            return .object([("event", .string("sessionStarted"))])
        case .added(let n): return notification("added", n)
        case .modified(let n): return notification("modified", n)
        case .removed(let n): return notification("removed", n)
        case .unknownEvent(let e):
            return .object([("event", .string("unknownEvent")), ("notificationSource", notificationSource(e))])
        case .attributes(let response):
            return .object([
                ("event", .string("attributes")),
                ("uid", .integer(Int(response.notificationUID.rawValue))),
                ("attributes", attributes(response.attributes, includeContents: includeContents)),
            ])
        case .appAttributes(let response):
            return .object([
                ("event", .string("appAttributes")),
                ("appIdentifier", .string(response.appIdentifier)),
                ("attributes", .array(response.attributes.map { attribute in
                    var members: [(String, JSON)] = [("id", name(attribute.id.name, attribute.id.rawValue))]
                    members.append(contentsOf: valueMembers(attribute.value, parse: nil, includeContents: includeContents))
                    return .object(members)
                })),
            ])
        case .completed(let id, let result):
            var members: [(String, JSON)] = [("event", .string("completed")), ("request", .integer(Int(id.rawValue)))]
            switch result {
            case .success(.notificationAttributes): members.append(("result", .string("notificationAttributes")))
            case .success(.appAttributes): members.append(("result", .string("appAttributes")))
            case .success(.actionPerformed): members.append(("result", .string("actionPerformed")))
            case .failure(let error): members.append(("error", .string(error.description)))
            }
            return .object(members)
        case .sessionEnded(let reason):
            return .object([("event", .string("sessionEnded")), ("reason", .string(reason.identifier))])
        case .protocolError(let error):
            return .object([("event", .string("protocolError")), ("error", .string(error.description))])
        case .dataSourceUnavailable:
            return .object([("event", .string("dataSourceUnavailable"))])
        case .ready(let n, let appName), .updated(let n, let appName):
            guard case .object(var members) = notification(event.isReady ? "ready" : "updated", n) else { return .null }
            if let appName {
                members.append(("appName", includeContents ? .string(appName.string) : .object([("length", .integer(appName.count))])))
            }
            return .object(members)
        case .displayFailed(let uid, let error):
            return .object([("event", .string("displayFailed")), ("uid", .integer(Int(uid.rawValue))), ("error", .string(error.description))])
        case .hidden(let uid):
            return .object([("event", .string("hidden")), ("uid", .integer(Int(uid.rawValue)))])
        case .health(let health):
            return .object([("event", .string("health"))] + healthMembers(health))
        }
    }

    /// A health state's members: `state`, and what it carries (the
    /// characteristic and ATT error of a refusal, the reason for subscribing
    /// again); `remedy` says what to do on the iPhone, when there is something.
    public static func healthMembers(_ health: ConsumerHealth) -> [(String, JSON)] {
        var members: [(String, JSON)] = [("state", .string(health.identifier))]
        switch health {
        case .waitingForPermission(let characteristic, let code):
            members.append(("characteristic", .string(characteristic.identifier)))
            members.append(("attError", .string(code.description)))
        case .resubscribing(let reason):
            members.append(("reason", .string(reason.identifier)))
        case .healthy, .notShared, .bondLost:
            break
        }
        if let remedy = health.remedy { members.append(("remedy", .string(remedy))) }
        return members
    }

    static func attributes(_ attributes: [NotificationAttribute], includeContents: Bool) -> JSON {
        .array(attributes.map { attribute in
            var members: [(String, JSON)] = [("id", name(attribute.id.name, attribute.id.rawValue))]
            members.append(contentsOf: valueMembers(attribute.value, parse: attribute.id, includeContents: includeContents))
            return .object(members)
        })
    }

    static func valueMembers(_ value: AttributeValue, parse: NotificationAttributeID?, includeContents: Bool) -> [(String, JSON)] {
        guard includeContents else { return [("length", .integer(value.count))] }
        guard case .object(let members) = attribute(id: .null, value: value, parse: parse) else { return [] }
        return Array(members.dropFirst())
    }
}

extension ConsumerEvent {
    var isReady: Bool {
        if case .ready = self { return true }
        return false
    }
}
