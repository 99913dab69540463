// The Provider engine (our NP) fed Control Point writes from several hostile
// consumers and changes to its notification center.
//
//   byte 0   maximumResponseLength: 0 → the default, else byte × 4
//   byte 1   bit 0: NotificationUIDs start near UInt32.max (exhaustion)
//   then, repeated: an op byte, a connection byte (0…2), operands
//   op % 10: 0 linkUp(mtu 23 + 2b)    1 mtuChanged(2b)   2 subscribe(b: bit 0 DS/NS, bit 1 off)
//            3, 4 Control Point write of a length byte then that many bytes
//            5 well-formed Get Notification Attributes for a live UID
//            6 add   7 remove   8 modify   9 linkDown
//
// Invariants: no trap; every write is answered exactly once, first, to the
// writer; a failed write produces nothing more; Data Source fragments go to
// the writer only, each full (MTU − 3) but the last; a successful Get …
// Attributes response, reassembled by our DataSourceReassembler, answers the
// request exactly (values: prefixes of what the center holds, whole but for
// Title, Subtitle and Message; total length within maximumResponseLength plus
// header, tuple headers and the values never cut); Notification
// Source events go only to consumers in a session: one per change to each,
// all live notifications as PreExisting when a session starts.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runProvider(FuzzInput(start, count))
    return 0
}

func runProvider(_ input: FuzzInput) {
    var input = input
    let budget = Int(input.byte()) * 4
    let exhaust = input.bool()
    var provider = Provider(configuration: ProviderConfiguration(
        maximumResponseLength: budget == 0 ? ProviderConfiguration.default.maximumResponseLength : budget,
        firstNotificationUID: exhaust ? UInt32.max - 2 : 0))
    provider.registerApp(identifier: "com.apple.mobilemail", displayName: "邮件")
    provider.registerApp(identifier: "a", displayName: "A")
    let texts = ["", "Alice", "On my way — 5 min 🚲", String(repeating: "é", count: 150)]

    func sessions() -> [ConnectionID] {
        provider.connections.filter { provider.isSubscribed($0, to: .notificationSource) }
    }

    /// Notification Source events of one change: one to each consumer in a session.
    func checkAnnounced(_ actions: [ProviderAction], _ eventID: EventID, _ uid: NotificationUID, to inSession: [ConnectionID]) {
        var receivers: [ConnectionID] = []
        for action in actions {
            guard case .notify(let connection, let characteristic, let bytes) = action, characteristic == .notificationSource else { continue }
            receivers.append(connection)
            let event = try? NotificationSourceEvent.decode(bytes)
            check(event?.eventID == eventID && event?.notificationUID == uid, "event \(bytes) announcing \(eventID) of \(uid)")
            check(event?.eventFlags.contains(.preExisting) == false, "a change announced as PreExisting")
        }
        check(receivers.sorted() == inSession.sorted(), "\(eventID) of \(uid) went to \(receivers), in a session: \(inSession)")
        checkNotifications(actions)
    }

    func checkNotifications(_ actions: [ProviderAction]) {
        for case .notify(let connection, let characteristic, let bytes) in actions {
            guard let mtu = provider.mtu(of: connection) else { return check(false, "notification to unknown \(connection)") }
            check(bytes.count <= mtu - 3, "notification of \(bytes.count) bytes at MTU \(mtu)")
            check(provider.isSubscribed(connection, to: characteristic), "\(characteristic) notification to an unsubscribed \(connection)")
            if characteristic == .notificationSource { check(bytes.count == 8, "Notification Source event of \(bytes.count) bytes") }
        }
    }

    func write(_ connection: ConnectionID, _ bytes: [UInt8]) {
        let mtu = provider.mtu(of: connection)
        let actions = provider.controlPointWritten(connection, bytes)
        guard case .respond(let target, let result)? = actions.first else { return check(false, "write not answered first: \(actions)") }
        check(target == connection, "answer to \(target), written by \(connection)")
        var answers = 0
        var fragments: [[UInt8]] = []
        for action in actions {
            switch action {
            case .respond: answers += 1
            case .notify(let to, .dataSource, let fragment):
                check(to == connection, "Data Source fragment to \(to), written by \(connection)")
                fragments.append(fragment)
            default: break
            }
        }
        check(answers == 1, "one answer per write, got \(answers)")
        checkNotifications(actions)
        guard result == .success else {
            return check(fragments.isEmpty && !actions.contains { if case .notify = $0 { true } else { false } }, "a failed write produced notifications")
        }
        // Only a command that decodes succeeds.
        guard let command = try? ControlPointCommand.decode(bytes), let mtu else { return check(false, "\(bytes) succeeded") }
        guard let request = DataSourceRequest(command) else { return check(fragments.isEmpty, "Data Source after an action") }
        for fragment in fragments.dropLast() { check(fragment.count == mtu - 3, "short fragment \(fragment.count) at MTU \(mtu)") }
        let total = fragments.reduce(0) { $0 + $1.count }
        // Only Title, Subtitle and Message are cut to the budget; the other attributes go whole.
        var uncut = 0
        if case .getNotificationAttributes(let asked) = command, let notification = provider.notificationCenter[asked.notificationUID] {
            for attribute in asked.attributes where !attribute.id.takesMaxLength {
                uncut += min(notification.value(of: attribute.id)?.utf8.count ?? 0, 0xFFFF)
            }
        }
        check(total <= provider.configuration.maximumResponseLength + request.headerCount + 3 * request.tupleCount + uncut,
              "response of \(total) bytes")

        var reassembler = DataSourceReassembler(configuration: .init(unlimitedValueLength: 0xFFFF))
        reassembler.expect(request, id: 0)
        var responses: [DataSourceResponse] = []
        for fragment in fragments {
            reassembler.feed(fragment) { event in
                guard case .response(0, let response) = event else { return check(false, "our NC rejects our NP: \(event)") }
                responses.append(response)
            }
        }
        check(responses.count == 1 && reassembler.outstandingCount == 0 && !reassembler.isInsideResponse,
              "response does not end with its last fragment")
        checkResponse(responses[0], answers: request, unlimited: 0xFFFF)
        if case .notificationAttributes(let response) = responses[0],
           let notification = provider.notificationCenter[response.notificationUID] {
            for attribute in response.attributes {
                let held = Array((notification.value(of: attribute.id) ?? "").utf8)
                check(held.starts(with: attribute.value.bytes), "\(attribute.id) is not what the center holds")
                check(attribute.id.takesMaxLength || attribute.value.count == min(held.count, 0xFFFF), "\(attribute.id) was cut")
            }
        }
    }

    while !input.isAtEnd {
        let op = input.byte()
        let connection = ConnectionID(UInt32(input.byte() % 3))
        switch op % 10 {
        case 0:
            checkNotifications(provider.linkUp(connection, mtu: Int(input.byte()) * 2 + 23))
            check(!provider.isSubscribed(connection, to: .notificationSource), "connect starts unsubscribed")
        case 1:
            provider.mtuChanged(connection, Int(input.byte()) * 2)
        case 2:
            let choice = input.byte()
            let characteristic: ANCSCharacteristic = choice & 1 == 0 ? .dataSource : .notificationSource
            let starting = characteristic == .notificationSource && choice & 2 == 0
                && provider.mtu(of: connection) != nil && !provider.isSubscribed(connection, to: .notificationSource)
            let actions = provider.setSubscription(connection, characteristic, enabled: choice & 2 == 0)
            checkNotifications(actions)
            if starting {
                var announced: [NotificationUID] = []
                for case .notify(_, _, let bytes) in actions {
                    guard let event = try? NotificationSourceEvent.decode(bytes) else { return check(false, "bad event") }
                    check(event.eventID == .added && event.eventFlags.contains(.preExisting), "session start: \(event)")
                    announced.append(event.notificationUID)
                }
                check(announced == provider.notificationCenter.uids, "session start announced \(announced)")
            }
        case 3, 4:
            write(connection, input.chunk())
        case 5:
            let uids = provider.notificationCenter.uids
            var attributes: [NotificationAttributeRequest] = []
            for _ in 0...(input.byte() % 8) {
                attributes.append(NotificationAttributeRequest(NotificationAttributeID(rawValue: input.byte() % 10), maxLength: input.uint16()))
            }
            let uid = uids.isEmpty ? NotificationUID(0) : uids[Int(input.byte()) % uids.count]
            if let bytes = try? ControlPointCommand.getNotificationAttributes(GetNotificationAttributes(notificationUID: uid, attributes: attributes)).encode() {
                write(connection, bytes)
            }
        case 6:
            let choice = input.byte()
            let text = texts[Int(choice) % texts.count]
            let notification = ProviderNotification(
                appIdentifier: choice & 4 == 0 ? "a" : "com.apple.mobilemail", categoryID: CategoryID(rawValue: input.byte() % 14),
                flags: EventFlags(rawValue: input.byte()), title: text, subtitle: choice & 8 == 0 ? nil : text, message: text,
                date: ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 42, second: 0),
                positiveActionLabel: "Answer", negativeActionLabel: "Decline",
                positiveActionEffect: [.automatic, .keep, .remove, .removeAndAddMissedCall, .fail][Int(choice >> 4) % 5],
                negativeActionEffect: [.automatic, .keep, .remove, .removeAndAddMissedCall, .fail][Int(choice >> 5) % 5])
            let inSession = sessions()
            if let added = try? provider.add(notification) {
                let uid = added.uid, actions = added.actions
                checkAnnounced(actions, .added, uid, to: inSession)
            }
        case 7:
            let uids = provider.notificationCenter.uids
            let inSession = sessions()
            if !uids.isEmpty {
                let uid = uids[Int(input.byte()) % uids.count]
                if let actions = try? provider.remove(uid) { checkAnnounced(actions, .removed, uid, to: inSession) }
                check(provider.notificationCenter[uid] == nil, "removed \(uid) still active")
            }
        case 8:
            let uids = provider.notificationCenter.uids
            let inSession = sessions()
            if !uids.isEmpty, var notification = provider.notificationCenter[uids[Int(input.byte()) % uids.count]] {
                notification.message = texts[Int(input.byte()) % texts.count]
                let uid = uids[Int(input.byte()) % uids.count]
                if let actions = try? provider.modify(uid, to: notification) { checkAnnounced(actions, .modified, uid, to: inSession) }
            }
        default:
            checkNotifications(provider.linkDown(connection))
            check(provider.mtu(of: connection) == nil, "disconnected \(connection) still known")
        }
    }
}
