// The Consumer: ready to show (attributes and app name), request bounds and
// wrong answers from the NP.

import Testing
@testable import ANCS

/// A phone answering every Control Point write of `consumer` at once, as the
/// NP would: the write succeeds, then its response follows (attributes for
/// every notification, a name for every app). Returns every event emitted.
private func answerEverything(_ first: [ConsumerAction], _ consumer: inout Consumer, at now: Timestamp = .zero,
                              whileRunning: (inout Consumer, [ConsumerEvent]) -> [ConsumerAction] = { _, _ in [] }) throws -> [ConsumerEvent] {
    var pending = first
    var all: [ConsumerEvent] = []
    var steps = 0
    while let write = try writes(pending).first {
        steps += 1
        try #require(steps < 10_000, "the exchange does not end")
        all += events(pending)
        var next = consumer.writeCompleted(write.token, .success, at: now)
        switch write.command {
        case .getNotificationAttributes(let request):
            let response = NotificationAttributesResponse(notificationUID: request.notificationUID, attributes: request.attributes.map { tuple in
                switch tuple.id {
                case .appIdentifier: NotificationAttribute(.appIdentifier, AttributeValue("com.example.app\(request.notificationUID.rawValue % 3)"))
                case .date: NotificationAttribute(.date, "20261123T101500")
                default: NotificationAttribute(tuple.id, AttributeValue("n\(request.notificationUID.rawValue)"))
                }
            })
            next += deliver(response, to: &consumer, at: now)
        case .getAppAttributes(let request):
            next += deliver(AppAttributesResponse(appIdentifier: request.appIdentifier, attributes: [AppAttribute(.displayName, AttributeValue("App \(request.appIdentifier.suffix(1))"))]), to: &consumer, at: now)
        case .performNotificationAction:
            break
        }
        next += whileRunning(&consumer, events(next))
        pending = next
    }
    all += events(pending)
    return all
}

@Suite("Consumer: ready to show")
struct ConsumerReadyTests {
    @Test("A phone holding 100 notifications at connection: every one becomes ready, no request budget is used up, and the application's requests go out ahead of the backlog")
    func hundredAtConnection() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var first: [ConsumerAction] = []
        for raw in UInt32(1)...100 {
            first += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting, .positiveAction]), at: .zero)
        }
        #expect(try writes(first).count == 1, "one write at a time")
        var applicationRequests: [ConsumerRequestID] = []
        var applicationResults: [ConsumerResult] = []
        var readyBeforeAction = 0
        var readySoFar = 0
        let all = try answerEverything(first, &consumer) { consumer, events in
            readySoFar += events.filter { $0.readyUID != nil }.count
            // While the backlog lasts (after 10 are shown), the application asks for 70 things.
            guard readySoFar >= 10, applicationRequests.isEmpty else { return [] }
            readyBeforeAction = readySoFar
            var actions: [ConsumerAction] = []
            for raw in UInt32(31)...100 {
                applicationRequests.append(consumer.fetchAttributes([NotificationAttributeRequest(.title, maxLength: 8)], for: uid(raw), at: .zero, into: &actions))
            }
            return actions
        }
        for case .completed(let id, let result) in all where applicationRequests.contains(id) { applicationResults.append(result) }
        let ready = Set(all.compactMap(\.readyUID))
        #expect(ready.count == 100, "every notification is shown")
        #expect(all.filter { $0.readyUID != nil }.count == 100, "each once")
        #expect(!all.contains { if case .displayFailed = $0 { return true }; return false })
        // The first 64 requests were accepted (the application's budget), the
        // other 6 refused; none was refused because of the display's fetches.
        #expect(applicationResults.count == 70)
        #expect(applicationResults.filter { $0.error == nil }.count == 64)
        #expect(applicationResults.filter { $0.error == .tooManyRequests }.count == 6)
        #expect(readyBeforeAction >= 10 && readyBeforeAction < 100)
        #expect(consumer.pendingRequestCount == 0 && consumer.session.entries.isEmpty)
    }

    @Test("The application's action is written before the display's backlog of fetches")
    func actionAheadOfBacklog() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes))
        var pending: [ConsumerAction] = []
        for raw in UInt32(1)...20 {
            pending += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting, .negativeAction]), at: .zero)
        }
        let fetch1 = try onlyWrite(pending)
        var actionActions: [ConsumerAction] = []
        let action = consumer.performAction(.negative, on: uid(20), at: .zero, into: &actionActions)
        #expect(try writes(actionActions).isEmpty, "the first fetch's write is in flight")
        // An action needs no response: it goes out as soon as the write is done, before 19 more fetches.
        let actionWrite = try onlyWrite(consumer.writeCompleted(fetch1.token, .success, at: .zero))
        #expect(actionWrite.command == .performNotificationAction(PerformNotificationAction(notificationUID: uid(20), actionID: .negative)))
        #expect(results(consumer.writeCompleted(actionWrite.token, .success, at: .zero), for: action) == [.success(.actionPerformed)])
        let next = try onlyWrite(deliver(standardResponse(1), to: &consumer))
        #expect(next.command == displayNameCommand(mailApp), "the shown notification's app name before the next fetch")
    }

    @Test("A live notification is fetched before the PreExisting backlog")
    func liveBeforeBacklog() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        var pending: [ConsumerAction] = []
        for raw in UInt32(1)...5 {
            pending += consumer.received(notificationSource: sourceEvent(.added, raw, flags: [.preExisting]), at: .zero)
        }
        let fetch1 = try onlyWrite(pending)
        #expect(try writes(consumer.received(notificationSource: sourceEvent(.added, 99, category: .incomingCall), at: .zero)).isEmpty)
        _ = consumer.writeCompleted(fetch1.token, .success, at: .zero)
        #expect(try onlyWrite(deliver(standardResponse(1), to: &consumer)).command == standardCommand(99))
    }

    @Test("Two notifications of an app the phone does not know: one Get App Attributes, both shown without a name")
    func unknownAppAskedOnce() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2, eagerAttributes: standardAttributes))
        var written: [Write] = []
        var all: [ConsumerAction] = []
        func step(_ actions: [ConsumerAction]) throws { all += actions; written += try writes(actions) }
        try step(consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero))
        try step(consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero))
        try step(consumer.writeCompleted(written[0].token, .success, at: .zero))
        try step(consumer.writeCompleted(written[1].token, .success, at: .zero))
        try step(deliver(standardResponse(1), to: &consumer))
        try step(deliver(standardResponse(2), to: &consumer))
        let nameFetches = written.filter { $0.command == displayNameCommand(mailApp) }
        try #require(nameFetches.count == 1)
        try step(consumer.writeCompleted(nameFetches[0].token, .attError(.invalidParameter), at: .zero))
        try step(consumer.received(notificationSource: sourceEvent(.added, 3), at: .zero))
        if let last = written.last, last.command == standardCommand(3) {
            try step(consumer.writeCompleted(last.token, .success, at: .zero))
            try step(deliver(standardResponse(3), to: &consumer))
        }
        #expect(written.filter { $0.command == displayNameCommand(mailApp) }.count == 1)
        #expect(events(all).compactMap(\.readyUID) == [uid(1), uid(2), uid(3)])
        for case .ready(_, let appName) in events(all) { #expect(appName == nil) }
    }

    @Test("maximumRequests counts every waiting caller: of ten identical fetches with a bound of 4, four wait and six are refused; the four are answered one after the other")
    func identicalRequestsCounted() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(maximumRequests: 4), with: [(1, [])])
        var actions: [ConsumerAction] = []
        let ids = (0..<10).map { _ in consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions) }
        #expect(try writes(actions).count == 1, "one write at a time")
        #expect(consumer.pendingRequestCount == 4)
        for id in ids.suffix(6) { #expect(results(actions, for: id) == [.failure(.tooManyRequests)]) }
        var write = try onlyWrite(actions)
        for id in ids.prefix(4) {
            _ = consumer.writeCompleted(write.token, .success, at: .zero)
            let answered = deliver(standardResponse(1), to: &consumer)
            #expect(results(answered, for: id) == [.success(.notificationAttributes(standardResponse(1)))])
            if id != ids[3] { write = try onlyWrite(answered) }
        }
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("A response naming another UID fails the oldest request at once, even after unframeable bytes, with an error naming both UIDs; the next request goes on",
          arguments: [false, true])
    func wrongUIDFailsAtOnce(afterGarbage: Bool) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        if afterGarbage {
            // Bytes no request explains: the reassembler resynchronizes.
            #expect(events(consumer.received(dataSource: [0x07, 0x01, 0x02], at: .zero)).count == 1)
        }
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        let wrong = NotificationAttributesResponse(notificationUID: uid(77), attributes: standardResponse(1).attributes)
        let answered = deliver(wrong, to: &consumer, at: at(milliseconds: 50))
        let error = try #require(invalidResponse(results(answered, for: first)))
        #expect(error.reason == .wrongNotificationUID(expected: uid(1), actual: uid(77)))
        #expect(error.description.contains("uid 77") && error.description.contains("uid 1"))
        let write2 = try onlyWrite(answered)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 60))
        #expect(results(deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 70)), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }
}
