// Every case of conformance.json through the real engines: Notification
// Source events through the codec and a live Consumer; Control Point
// commands through the codec, the Consumer (which must write exactly these
// bytes) and the Provider (which must answer them, or reject them with the
// right ANCS error); Data Source responses through the Consumer (fetch,
// write, fragments, completion), the DataSourceReassembler alone (exact error
// reasons) and the Provider (which must send exactly these bytes).
import ANCS

struct NSVector {
    enum Expected {
        case event(NotificationSourceEvent, line: StaticString)
        case error(StaticString)
    }
    let name: StaticString
    let bytes: [UInt8]
    let expected: Expected
}

struct CPVector {
    enum Expected {
        case command(ControlPointCommand)
        /// The decoding error's text, and the ANCS error the NP answers with.
        case error(StaticString, answer: UInt8)
    }
    let name: StaticString
    let bytes: [UInt8]
    let expected: Expected
}

struct DSVector {
    enum Expected {
        case response(DataSourceResponse, date: ANCSDate?, messageSize: Int?)
        case error(StaticString)
    }
    let name: StaticString
    let request: [UInt8]
    let fragments: [[UInt8]]
    let expected: Expected
}

let phone = ConnectionID(1)

// MARK: - Notification Source

func runNotificationSourceVectors(_ log: inout Log) -> Int {
    print("Notification Source: \(nsVectors.count) cases, through the codec and Consumer.received(notificationSource:)")
    var consumer = connectedConsumer(log: &log)
    var ran = 0
    for vector in nsVectors {
        print("- \(vector.name.text)")
        var decoded: NotificationSourceEvent?
        var decodeError: DecodingError?
        do throws(DecodingError) {
            decoded = try NotificationSourceEvent.decode(vector.bytes)
        } catch {
            decodeError = error
        }
        var engineLine = "no event"
        var engineEvent: NotificationSourceEvent?
        for action in consumer.received(notificationSource: vector.bytes, at: .zero) {
            guard case .emit(let event) = action else { continue }
            switch event {
            case .added(let n): engineEvent = NotificationSourceEvent(eventID: .added, eventFlags: n.eventFlags, categoryID: n.categoryID, categoryCount: n.categoryCount, notificationUID: n.uid)
            case .modified(let n): engineEvent = NotificationSourceEvent(eventID: .modified, eventFlags: n.eventFlags, categoryID: n.categoryID, categoryCount: n.categoryCount, notificationUID: n.uid)
            case .removed(let n): engineEvent = NotificationSourceEvent(eventID: .removed, eventFlags: n.eventFlags, categoryID: n.categoryID, categoryCount: n.categoryCount, notificationUID: n.uid)
            case .unknownEvent(let e): engineEvent = e
            case .protocolError(let error): engineLine = "error: \(error.message)"
            default: continue
            }
            if let engineEvent { engineLine = eventLine(engineEvent) }
        }
        switch vector.expected {
        case .event(let expected, let line):
            log.check(decoded == expected, "codec: \(decoded.map(eventLine) ?? "error: \(decodeError?.message ?? "")")")
            log.check(decoded.map { sameText(eventLine($0), line.text) } ?? false, "codec names: \(line.text)")
            log.check(engineEvent == expected && sameText(engineLine, line.text), "engine: \(engineLine)")
        case .error(let text):
            log.check(decoded == nil && decodeError.map { contains($0.message, text) } ?? false,
                      "codec: error: \(decodeError?.message ?? "none") (expected: \(text.text))")
            log.check(engineEvent == nil && contains(engineLine, text), "engine: \(engineLine)")
        }
        ran += 1
    }
    log.check(consumer.isInSession, "the session survives every malformed event")
    return ran
}

// MARK: - Control Point

/// The Consumer's request for a command, in a live session; the notification
/// it names is announced first, with both actions.
func consumerRequest(_ command: ControlPointCommand, _ consumer: inout Consumer) -> ConsumerRequest {
    switch command {
    case .getNotificationAttributes(let get):
        return consumer.fetchAttributes(get.attributes, for: get.notificationUID, at: .zero)
    case .getAppAttributes(let get):
        return consumer.fetchAppAttributes(get.appIdentifier, get.attributes, at: .zero)
    case .performNotificationAction(let perform):
        _ = consumer.received(notificationSource: sourceEvent(.added, [.positiveAction, .negativeAction], .social, count: 1,
                                                              uid: perform.notificationUID.rawValue), at: .zero)
        return consumer.performAction(perform.actionID, on: perform.notificationUID, at: .zero)
    }
}

/// A provider at MTU 23, Data Source subscribed, holding what `command` names.
func providerFor(_ command: ControlPointCommand, _ log: inout Log) -> Provider {
    var uid: UInt32 = 0
    switch command {
    case .getNotificationAttributes(let get): uid = get.notificationUID.rawValue
    case .performNotificationAction(let perform): uid = perform.notificationUID.rawValue
    case .getAppAttributes: break
    }
    var provider = Provider(configuration: ProviderConfiguration(firstNotificationUID: uid))
    _ = provider.linkUp(phone, mtu: 23)
    _ = provider.setSubscription(phone, .dataSource, enabled: true)
    switch command {
    case .getAppAttributes(let get):
        provider.registerApp(identifier: get.appIdentifier, displayName: "Mail")
    default:
        do throws(ProviderError) {
            let added = try provider.add(ProviderNotification(
                appIdentifier: "com.example.chat", categoryID: .social, flags: [.positiveAction, .negativeAction],
                title: "Bob", subtitle: "Lunch", message: "Noon at the café? ☕", date: ANCSDate(year: 2024, month: 5, day: 6, hour: 11, minute: 30, second: 0),
                positiveActionLabel: "Yes", negativeActionLabel: "No", positiveActionEffect: .keep))
            if added.uid.rawValue != uid { log.check(false, "provider gave uid \(added.uid), not \(uid)") }
        } catch {
            log.check(false, "provider: \(error)")
        }
    }
    return provider
}

func runControlPointVectors(_ log: inout Log) -> Int {
    print("Control Point: \(cpVectors.count) cases, through the codec, the Consumer (writes) and the Provider (answers)")
    var ran = 0
    for vector in cpVectors {
        print("- \(vector.name.text)")
        var decoded: ControlPointCommand?
        var decodeError: DecodingError?
        do throws(DecodingError) {
            decoded = try ControlPointCommand.decode(vector.bytes)
        } catch {
            decodeError = error
        }
        switch vector.expected {
        case .command(let command):
            log.check(decoded == command, "codec decodes the command (\(command.commandID))")
            var encoded: [UInt8] = []
            do throws(EncodingError) { encoded = try command.encode() } catch { log.check(false, "encode: \(error)") }
            log.check(encoded == vector.bytes, "codec encodes it back: \(hex(encoded))")

            var consumer = connectedConsumer(log: &log)
            let submitted = consumerRequest(command, &consumer)
            let request = submitted.id, actions = submitted.actions
            let written = writes(actions)
            log.check(written.count == 1 && written[0].bytes == vector.bytes,
                      "consumer writes \(written.first.map { hex($0.bytes) } ?? "nothing")")

            var provider = providerFor(command, &log)
            let answered = provider.controlPointWritten(phone, vector.bytes)
            log.check(answer(answered) == .success, "provider answers \(describe(answer(answered)))")
            var providerEvent = false
            for action in answered {
                guard case .emit(let event) = action else { continue }
                switch (event, command) {
                case (.notificationAttributesSent(_, let get), .getNotificationAttributes(let asked)): providerEvent = get == asked
                case (.appAttributesSent(_, let get), .getAppAttributes(let asked)): providerEvent = get == asked
                case (.actionPerformed(let performed), .performNotificationAction(let asked)):
                    providerEvent = performed.notificationUID == asked.notificationUID && performed.actionID == asked.actionID
                default: break
                }
            }
            log.check(providerEvent, "provider reports the command it carried out")

            // The provider's answer back into the consumer that asked.
            guard let token = written.first?.token else { break }
            var results = consumer.writeCompleted(token, answer(answered) ?? .transportFailure, at: .zero)
            for fragment in notified(answered, on: .dataSource) {
                results += consumer.received(dataSource: fragment, at: .zero)
            }
            switch (completion(of: request, in: results), command) {
            case (.success(.notificationAttributes(let response))?, .getNotificationAttributes(let get)):
                log.check(response.notificationUID == get.notificationUID && response.attributes.map { $0.id } == get.attributes.map { $0.id },
                          "consumer decodes the provider's response: \(response.attributes.count) attributes")
            case (.success(.appAttributes(let response))?, .getAppAttributes(let get)):
                log.check(sameText(response.appIdentifier, get.appIdentifier) && response[.displayName]?.string == "Mail",
                          "consumer decodes the provider's response: displayName=\(response[.displayName]?.string ?? "none")")
            case (.success(.actionPerformed)?, .performNotificationAction):
                log.check(true, "consumer: action performed")
            case (let other, _):
                log.check(false, "consumer: request ended with \(describe(other))")
            }
        case .error(let text, let code):
            log.check(decoded == nil && decodeError.map { contains($0.message, text) } ?? false,
                      "codec: error: \(decodeError?.message ?? "none") (expected: \(text.text))")
            var provider = Provider()
            _ = provider.linkUp(phone, mtu: 23)
            _ = provider.setSubscription(phone, .dataSource, enabled: true)
            let answered = provider.controlPointWritten(phone, vector.bytes)
            log.check(answer(answered) == .attError(ATTErrorCode(rawValue: code)),
                      "provider answers \(describe(answer(answered))) (expected 0x\(hex([code])))")
            var rejected = false
            for action in answered {
                if case .emit(.commandRejected(_, .malformed(let error))) = action { rejected = contains(error.message, text) }
            }
            log.check(rejected && notified(answered, on: .dataSource).isEmpty, "provider rejects it as malformed, sends nothing")
        }
        ran += 1
    }
    return ran
}

// MARK: - Data Source

/// Instructions per response for the report, by the shape of the vector.
struct DataSourceFigures {
    var oneFragment = 0
    var mtu23 = 0
    var oneByte = 0
}

func runDataSourceVectors(_ log: inout Log, _ figures: inout DataSourceFigures) -> Int {
    print("Data Source: \(dsVectors.count) cases, through the Consumer, the DataSourceReassembler and the Provider")
    var ran = 0
    for vector in dsVectors {
        print("- \(vector.name.text) (\(vector.fragments.count) fragment\(vector.fragments.count == 1 ? "" : "s"))")
        let command: ControlPointCommand
        do throws(DecodingError) {
            command = try ControlPointCommand.decode(vector.request)
        } catch {
            log.check(false, "the vector's request does not decode: \(error)")
            continue
        }
        let spent = throughConsumer(vector, command, &log)
        throughReassembler(vector, command, &log)
        if case .response(let response, let date, let messageSize) = vector.expected {
            throughProvider(vector, command, response, date: date, messageSize: messageSize, &log)
            if case .notificationAttributes = response {
                let longest = vector.fragments.map { $0.count }.max() ?? 0
                if vector.fragments.count == 1, figures.oneFragment == 0 { figures.oneFragment = spent }
                if longest == 20, figures.mtu23 == 0 { figures.mtu23 = spent }
                if longest == 1, figures.oneByte == 0 { figures.oneByte = spent }
            }
        }
        ran += 1
    }
    return ran
}

func checkValues(_ response: DataSourceResponse, _ expected: DataSourceResponse, date: ANCSDate?, messageSize: Int?, _ log: inout Log) {
    let have = valueLines(response), want = valueLines(expected)
    for (index, line) in have.enumerated() {
        log.check(index < want.count && sameText(line, want[index]), line)
    }
    log.check(have.count == want.count && response == expected, "\(have.count - 1) values, response equals the vector's")
    if case .notificationAttributes(let value) = response {
        if let date { log.check(value[.date]?.date == date, "date parsed: \(value[.date]?.date.map { "\($0)" } ?? "nil")") }
        if let messageSize { log.check(value[.messageSize]?.messageSize == messageSize, "message size parsed: \(value[.messageSize]?.messageSize ?? -1)") }
    }
}

/// Fetch, Control Point write (checked byte for byte), write completed,
/// fragments in, completion out. Returns the instructions spent on the fragments.
func throughConsumer(_ vector: DSVector, _ command: ControlPointCommand, _ log: inout Log) -> Int {
    var consumer = connectedConsumer(log: &log)
    var now = Timestamp.zero
    if case .getNotificationAttributes(let get) = command {
        _ = consumer.received(notificationSource: sourceEvent(.added, [], .social, count: 1, uid: get.notificationUID.rawValue), at: now)
    }
    let submitted = consumerRequest(command, &consumer)
    let request = submitted.id, actions = submitted.actions
    let written = writes(actions)
    log.check(written.count == 1 && written[0].bytes == vector.request, "consumer writes the vector's request")
    guard let token = written.first?.token else { return 0 }
    var results = consumer.writeCompleted(token, .success, at: now)
    // The moments of the fragments, 15 ms apart, made before counting (a
    // firmware's clock gives milliseconds: no Duration arithmetic per input).
    let moments = vector.fragments.indices.map { Timestamp(milliseconds: 15 * Int64($0 + 1)) }
    let start = fwInstructions()
    for (index, fragment) in vector.fragments.enumerated() {
        now = moments[index]
        results += consumer.received(dataSource: fragment, at: now)
    }
    let spent = Int(truncatingIfNeeded: fwInstructions() &- start)
    print("  consumer: \(spent) instructions for the fragments")
    let result = completion(of: request, in: results)
    switch (vector.expected, result) {
    case (.response(let expected, let date, let messageSize), .success(let response)?):
        switch response {
        case .notificationAttributes(let value):
            checkValues(.notificationAttributes(value), expected, date: date, messageSize: messageSize, &log)
            if let title = value[.title] { print("  title: \(title.string)") }
            log.check(consumer.notifications[value.notificationUID]?.attributes == value.attributes,
                      "the session's model holds the fetched attributes")
        case .appAttributes(let value):
            checkValues(.appAttributes(value), expected, date: date, messageSize: messageSize, &log)
            log.check(consumer.displayName(of: value.appIdentifier) == value[.displayName], "the session caches the app's name")
        case .actionPerformed:
            log.check(false, "consumer: a fetch ended as an action")
        }
    case (.error(let text), .failure(.invalidResponse(let error))?):
        log.check(contains(error.message, text), "consumer: invalid response: \(error.message)")
    case (.error, nil):
        // An incomplete response is known only at the request's deadline.
        let late = consumer.tick(at: now + consumer.configuration.requestTimeout)
        let ended = completion(of: request, in: late)
        log.check(ended == .failure(.timedOut), "consumer: the request fails at its deadline: \(describe(ended))")
    case (_, let other):
        log.check(false, "consumer: request ended with \(describe(other))")
    }
    log.check(consumer.pendingRequestCount == 0, "consumer: nothing left pending")
    return spent
}

/// The reassembler alone, finished after the last fragment: exact reasons.
func throughReassembler(_ vector: DSVector, _ command: ControlPointCommand, _ log: inout Log) {
    guard let request = DataSourceRequest(command) else {
        log.check(false, "reassembler: no Data Source request for this command")
        return
    }
    var reassembler = DataSourceReassembler()
    reassembler.expect(request, id: 7)
    var events: [DataSourceReassembler.Event] = []
    for fragment in vector.fragments { reassembler.feed(fragment) { events.append($0) } }
    reassembler.finish { events.append($0) }
    switch (vector.expected, events.first) {
    case (.response(let expected, _, _), .response(7, let response)?):
        log.check(events.count == 1 && response == expected, "reassembler: the same response")
    case (.error(let text), .failed(7, let error)?):
        log.check(events.count == 1 && contains(error.message, text), "reassembler: \(error.message)")
    case (_, let other):
        log.check(false, "reassembler: \(describe(other))")
    }
}

/// A provider holding what the response carries must send exactly its bytes.
func throughProvider(_ vector: DSVector, _ command: ControlPointCommand, _ response: DataSourceResponse,
                     date: ANCSDate?, messageSize: Int?, _ log: inout Log) {
    var provider: Provider
    switch response {
    case .notificationAttributes(let value):
        provider = Provider(configuration: ProviderConfiguration(firstNotificationUID: value.notificationUID.rawValue))
        var message = value[.message]?.string
        if message == nil, let messageSize { message = String(repeating: "x", count: messageSize) }
        let notification = ProviderNotification(
            appIdentifier: value[.appIdentifier]?.string ?? "com.example.app", categoryID: .social,
            title: value[.title]?.string, subtitle: value[.subtitle]?.string, message: message, date: date,
            positiveActionLabel: value[.positiveActionLabel]?.string, negativeActionLabel: value[.negativeActionLabel]?.string)
        do throws(ProviderError) {
            _ = try provider.add(notification)
        } catch {
            log.check(false, "provider: \(error)")
            return
        }
    case .appAttributes(let value):
        provider = Provider()
        provider.registerApp(identifier: value.appIdentifier, displayName: value[.displayName]?.string ?? "")
    }
    _ = provider.linkUp(phone, mtu: 23)
    _ = provider.setSubscription(phone, .dataSource, enabled: true)
    let answered = provider.controlPointWritten(phone, vector.request)
    let sent = notified(answered, on: .dataSource)
    log.check(answer(answered) == .success && flatten(sent) == flatten(vector.fragments),
              "provider sends the same \(flatten(sent).count) bytes, in \(sent.count) MTU-23 notifications")
    if vector.fragments.dropLast().allSatisfy({ $0.count == 20 }) && vector.fragments.count > 1 {
        log.check(sent == vector.fragments, "provider's fragments equal the vector's MTU-23 fragments")
    }
}
