// The Consumer: Control Point requests, Data Source responses, and every request
// ending exactly once (success, error, timeout, session end).

import Testing
@testable import ANCS

extension ConsumerTests {
    // MARK: Control Point requests and Data Source responses

    @Test("Get Notification Attributes: the request ends with the value and the model holds it")
    func getNotificationAttributes() throws {
        var consumer = sessionConsumer(with: [(0x43, [])])
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(0x43), at: .zero, into: &actions)
        let write = try onlyWrite(actions)
        // Spec example shape: 00 · UID · AppIdentifier · Title + max length · Date.
        #expect(write.bytes == [0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x05])
        #expect(consumer.writeCompleted(write.token, .success, at: .zero) == [])
        let answered = deliver(standardResponse(0x43), to: &consumer)
        #expect(answered == [
            .emit(.attributes(standardResponse(0x43))),
            .emit(.completed(id, .success(.notificationAttributes(standardResponse(0x43))))),
        ])
        #expect(consumer.notifications[uid(0x43)]?.attributes == standardResponse(0x43).attributes)
        #expect(consumer.notifications[uid(0x43)]?[.title] == "Alice")
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Request IDs wrap past zero: no request is numbered 0 (an entry's \"no waiter\"), and the one after the last ID still ends")
    func requestIDsSkipZero() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        consumer.nextRequest = UInt32.max &- 1
        var actions: [ConsumerAction] = []
        let last = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions)
        #expect(last.rawValue == UInt32.max)
        let write = try onlyWrite(actions)
        // Asked again while the first is in flight: its own entry, numbered past zero.
        actions = []
        let wrapped = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions)
        #expect(wrapped.rawValue == 1)
        #expect(consumer.pendingRequestCount == 2)
        _ = consumer.writeCompleted(write.token, .success, at: .zero)
        let first = deliver(standardResponse(1), to: &consumer)
        #expect(results(first, for: last) == [.success(.notificationAttributes(standardResponse(1)))])
        let second = try onlyWrite(first)
        _ = consumer.writeCompleted(second.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        #expect(results(answered, for: wrapped) == [.success(.notificationAttributes(standardResponse(1)))])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("Responses may be split anywhere across Data Source notifications", arguments: [23, 24, 30, 185])
    func fragmentedResponse(_ mtu: Int) throws {
        var consumer = sessionConsumer(with: [(1, [])])
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions)
        _ = consumer.writeCompleted(try onlyWrite(actions).token, .success, at: .zero)
        let response = standardResponse(1, title: String(repeating: "long title ", count: 5))
        let answered = deliver(.notificationAttributes(response), mtu: mtu, to: &consumer)
        #expect(results(answered, for: id) == [.success(.notificationAttributes(response))])
    }

    @Test("At most one Control Point write is in flight, whatever the pipelining depth")
    func oneWriteInFlight() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 4), with: [(1, []), (2, []), (3, [])])
        let first = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).actions)
        #expect(try writes(consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).actions).isEmpty)
        #expect(try writes(consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero).actions).isEmpty)
        let second = try onlyWrite(consumer.writeCompleted(first.token, .success, at: .zero))
        #expect(second.command == standardCommand(2))
        let third = try onlyWrite(consumer.writeCompleted(second.token, .success, at: .zero))
        #expect(third.command == standardCommand(3))
        #expect(try writes(consumer.writeCompleted(third.token, .success, at: .zero)).isEmpty)
    }

    @Test("Pipelining depth 1: the next write waits until the previous response has fully arrived")
    func pipeliningDepthOne() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &secondActions)
        #expect(secondActions.isEmpty)
        #expect(consumer.writeCompleted(write1.token, .success, at: .zero) == [])

        let fragments = DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23)
        try #require(fragments.count >= 2)
        for fragment in fragments.dropLast() {
            #expect(consumer.received(dataSource: fragment, at: .zero) == [])  // still streaming: no write
        }
        let last = consumer.received(dataSource: fragments.last!, at: .zero)
        #expect(results(last, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write2 = try onlyWrite(last)
        #expect(write2.command == standardCommand(2))
        #expect(last.last == .writeControlPoint(write2.bytes, write2.token))

        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let answered = deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
    }

    @Test("Pipelining depth 2: the next write goes out while the previous response is streaming")
    func pipeliningDepthTwo() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, []), (3, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let third = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero).id

        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        #expect(write2.command == standardCommand(2))

        let fragments1 = DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23)
        try #require(fragments1.count >= 2)
        #expect(consumer.received(dataSource: fragments1[0], at: .zero) == [])
        // Two responses are due: the third command waits although no write is in flight.
        #expect(consumer.writeCompleted(write2.token, .success, at: .zero) == [])
        var rest: [ConsumerAction] = []
        for fragment in fragments1.dropFirst() { rest += consumer.received(dataSource: fragment, at: .zero) }
        #expect(results(rest, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write3 = try onlyWrite(rest)
        #expect(write3.command == standardCommand(3))

        // Responses are correlated in the order the NP received the commands.
        let answered2 = deliver(standardResponse(2, app: phoneApp, title: "Bob"), to: &consumer)
        #expect(results(answered2, for: second) == [.success(.notificationAttributes(standardResponse(2, app: phoneApp, title: "Bob")))])
        _ = consumer.writeCompleted(write3.token, .success, at: .zero)
        let answered3 = deliver(standardResponse(3, title: "Carol"), to: &consumer)
        #expect(results(answered3, for: third) == [.success(.notificationAttributes(standardResponse(3, title: "Carol")))])
    }

    @Test("A response for the wrong NotificationUID fails that request with invalidResponse; the next response is still parsed", arguments: [1, 2])
    func wrongNotificationUID(_ depth: Int) throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: depth), with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)

        actions += deliver(standardResponse(9), to: &consumer)
        let error = try #require(invalidResponse(results(actions, for: first)))
        #expect(error.reason == .wrongNotificationUID(expected: uid(1), actual: uid(9)))
        #expect(!events(actions).contains(.attributes(standardResponse(9))))
        #expect(consumer.notifications[uid(1)]?.attributes == [])

        let write2 = try onlyWrite(actions)
        #expect(write2.command == standardCommand(2))
        var answered = consumer.writeCompleted(write2.token, .success, at: .zero)
        answered += deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
        #expect(results(answered, for: first).isEmpty)
    }

    @Test("A response for the wrong AppIdentifier fails that request with invalidResponse; the next response is still parsed")
    func wrongAppIdentifier() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2))
        var mailActions: [ConsumerAction] = []
        let mail = consumer.fetchAppAttributes(mailApp, at: .zero, into: &mailActions)
        let write1 = try onlyWrite(mailActions)
        let phone = consumer.fetchAppAttributes(phoneApp, at: .zero).id
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        let wrong = deliver(displayNameResponse("com.apple.mobilemaik", "Mail"), to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: mail)))
        #expect(error.reason == .wrongAppIdentifier)
        #expect(consumer.displayName(of: mailApp) == nil)

        let right = deliver(displayNameResponse(phoneApp, "Phone"), to: &consumer)
        #expect(results(right, for: phone) == [.success(.appAttributes(displayNameResponse(phoneApp, "Phone")))])
        #expect(consumer.displayName(of: phoneApp) == "Phone")
    }

    @Test("Tuples come in the order the attributes were requested: another attribute fails the request; the next response is still parsed")
    func unexpectedAttribute() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        // Subtitle where Title was asked: same number of tuples, so the framing holds.
        let shuffled = NotificationAttributesResponse(notificationUID: uid(1), attributes: [
            NotificationAttribute(.appIdentifier, AttributeValue(mailApp)),
            NotificationAttribute(.subtitle, "Lunch"),
            NotificationAttribute(.date, "20140322T154200"),
        ])
        let wrong = deliver(shuffled, to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: first)))
        #expect(error.reason == .unexpectedAttribute(expected: NotificationAttributeID.title.rawValue, actual: NotificationAttributeID.subtitle.rawValue))
        let right = deliver(standardResponse(2), to: &consumer)
        #expect(results(right, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("A value never exceeds the MaxLen asked: a longer one fails the request; the next response is still parsed")
    func valueLongerThanMaxLength() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(pipeliningDepth: 2), with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        let tooLong = standardResponse(1, title: String(repeating: "x", count: 65))
        let wrong = deliver(.notificationAttributes(tooLong), mtu: 30, to: &consumer)
        let error = try #require(invalidResponse(results(wrong, for: first)))
        #expect(error.reason == .valueTooLong(attribute: NotificationAttributeID.title.rawValue, length: 65, maxLength: 64))
        let right = deliver(standardResponse(2), to: &consumer)
        #expect(results(right, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("A response that cannot be framed fails only its own request: the next request's response, written meanwhile, still parses",
          arguments: [23, 185])
    func unframeableResponseSparesTheNextRequest(_ mtu: Int) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        // The NP answers with an unknown CommandID and bytes no framing explains, in three notifications.
        let size = mtu - 3
        let garbage = DataSourceResponse.fragment([0x07] + [UInt8](repeating: 0x41, count: 3 * size - 1), mtu: mtu)
        #expect(garbage.count == 3)
        let failedFirst = consumer.received(dataSource: garbage[0], at: .zero)
        #expect(invalidResponse(results(failedFirst, for: first))?.reason == .wrongCommandID(expected: .getNotificationAttributes, actual: CommandID(rawValue: 7)))
        // The first request ended, so the second one is written while the garbage still streams.
        let write2 = try onlyWrite(failedFirst)
        #expect(write2.command == standardCommand(2))
        var actions = consumer.writeCompleted(write2.token, .success, at: .zero)
        for fragment in garbage.dropFirst() { actions += consumer.received(dataSource: fragment, at: .zero) }
        #expect(results(actions, for: second).isEmpty)
        #expect(events(actions).allSatisfy { if case .protocolError = $0 { true } else { false } })
        let answered = deliver(.notificationAttributes(standardResponse(2)), mtu: mtu, to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Data Source arriving before the write response still completes the request, once")
    func dataSourceBeforeWriteResponse() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id

        let early = deliver(standardResponse(1), to: &consumer)
        #expect(results(early, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        #expect(try writes(early).isEmpty)  // the first write has not completed yet

        let completed = consumer.writeCompleted(write1.token, .success, at: .zero)
        #expect(completionCount(completed) == 0)
        let write2 = try onlyWrite(completed)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        #expect(results(deliver(standardResponse(2), to: &consumer), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Data Source bytes no request explains are a protocol error and nothing else")
    func unsolicitedDataSource() {
        var consumer = sessionConsumer(with: [(1, [])])
        let actions = deliver(standardResponse(1), to: &consumer)
        #expect(!actions.isEmpty)
        for action in actions {
            #expect(action == .emit(.protocolError(DecodingError(.unsolicitedResponse, at: 0))))
        }
        #expect(consumer.notifications[uid(1)]?.attributes == [])
    }

    // MARK: Every request ends exactly once

    struct WriteError: Sendable, CustomTestStringConvertible {
        var result: ATTResult
        var error: ConsumerError
        var testDescription: String { "\(result) → \(error)" }
    }

    static let ancsErrors: [WriteError] = [
        WriteError(result: .attError(.unknownCommand), error: .unknownCommand),
        WriteError(result: .attError(.invalidCommand), error: .invalidCommand),
        WriteError(result: .attError(.invalidParameter), error: .invalidParameter),
        WriteError(result: .attError(.actionFailed), error: .actionFailed),
    ]

    static let otherErrors: [WriteError] = [
        WriteError(result: insufficientAuthentication, error: .att(0x05)),
        WriteError(result: .attError(.unlikelyError), error: .att(.unlikelyError)),
        WriteError(result: .attError(ATTErrorCode(rawValue: 0x9F)), error: .att(0x9F)),
        WriteError(result: .attError(ATTErrorCode(rawValue: 0xA4)), error: .att(0xA4)),
        WriteError(result: .transportFailure, error: .transportFailure),
    ]

    @Test("Errors: each ANCS error 0xA0–0xA3, another ATT error or a transport failure ends the request as its typed case; no Data Source follows",
          arguments: ConsumerTests.ancsErrors + ConsumerTests.otherErrors)
    func writeFailure(_ failure: WriteError) throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id

        let failed = consumer.writeCompleted(write1.token, failure.result, at: .zero)
        #expect(results(failed, for: first) == [.failure(failure.error)])
        // No response is awaited for the failed command: the next one goes out and its response is its own.
        let write2 = try onlyWrite(failed)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let answered = deliver(standardResponse(2), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
        #expect(results(answered, for: first).isEmpty)
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("Nothing waits forever: a request not answered within the timeout (10 s by default) fails with timedOut")
    func defaultTimeout() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        #expect(consumer.nextDeadline == nil)
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: at(milliseconds: 1_000), into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        #expect(consumer.nextDeadline == at(milliseconds: 11_000))
        _ = consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 1_010))
        #expect(consumer.tick(at: at(milliseconds: 10_999)) == [])
        let expired = consumer.tick(at: at(milliseconds: 11_000))
        #expect(expired == [.emit(.completed(first, .failure(.timedOut)))])
        #expect(consumer.nextDeadline == nil)
        #expect(consumer.pendingRequestCount == 0)
        #expect(consumer.tick(at: at(milliseconds: 60_000)) == [])

        // The late response is consumed without disturbing the next one.
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 12_000), into: &secondActions)
        let write2 = try onlyWrite(secondActions)
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 12_000))
        let late = deliver(standardResponse(1), to: &consumer, at: at(milliseconds: 12_100))
        #expect(late == [])
        let answered = deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 12_200))
        #expect(answered == [
            .emit(.attributes(standardResponse(2))),
            .emit(.completed(second, .success(.notificationAttributes(standardResponse(2))))),
        ])
    }

    @Test("The request timeout is configurable and counts from the request's write: a request queued behind another is not charged for the wait")
    func configuredTimeout() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(requestTimeout: .seconds(3)), with: [(1, []), (2, [])])
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: at(milliseconds: 0)).id
        var queued: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 500), into: &queued)
        #expect(try writes(queued).isEmpty)
        #expect(consumer.nextDeadline == at(milliseconds: 3_000))
        let firstExpired = consumer.tick(at: at(milliseconds: 3_000))
        #expect(results(firstExpired, for: first) == [.failure(.timedOut)])
        #expect(results(firstExpired, for: second).isEmpty)
        // The first write's result never came: the link is free at its deadline, and the second goes out now.
        #expect(try onlyWrite(firstExpired).command == standardCommand(2))
        #expect(consumer.nextDeadline == at(milliseconds: 6_000))
        #expect(results(consumer.tick(at: at(milliseconds: 3_500)), for: second).isEmpty, "3 s after its submission, but only 0.5 s after its write")
        let secondExpired = consumer.tick(at: at(milliseconds: 6_000))
        #expect(results(secondExpired, for: second) == [.failure(.timedOut)])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("A write that never completes times out, and later requests still proceed")
    func writeNeverCompletes() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 1_000), into: &secondActions)
        #expect(secondActions.isEmpty)

        let expired = consumer.tick(at: at(milliseconds: 10_000))
        #expect(results(expired, for: first) == [.failure(.timedOut)])
        let write2 = try onlyWrite(expired)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 10_050))
        let answered = deliver(standardResponse(2), to: &consumer, at: at(milliseconds: 10_100))
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
        // The result of the abandoned write, if it ever comes, changes nothing.
        #expect(consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 10_200)) == [])
    }

    @Test("Cancellation ends a request with cancelled; the response that still arrives is consumed without disturbing the next one")
    func cancelAwaitingResponse() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &secondActions)
        #expect(secondActions.isEmpty)

        let cancelled = consumer.cancel(first, at: .zero)
        #expect(results(cancelled, for: first) == [.failure(.cancelled)])
        let write2 = try onlyWrite(cancelled)
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)

        // The cancelled request's response arrives first: consumed, reported nowhere.
        #expect(deliver(standardResponse(1), to: &consumer) == [])
        #expect(consumer.notifications[uid(1)]?.attributes == [])
        let answered = deliver(standardResponse(2, title: "Bob"), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2, title: "Bob")))])
        // Cancelling again, or an unknown request, ends nothing.
        #expect(consumer.cancel(first, at: .zero) == [])
        #expect(consumer.cancel(ConsumerRequestID(rawValue: 9_999), at: .zero) == [])
    }

    @Test("A cancelled request that was never written is never written")
    func cancelQueued() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        #expect(consumer.cancel(second, at: .zero) == [.emit(.completed(second, .failure(.cancelled)))])
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)
        actions += deliver(standardResponse(1), to: &consumer)
        #expect(results(actions, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        #expect(try writes(actions).isEmpty)
        #expect(consumer.nextDeadline == nil)
    }

    @Test("Cancelling a request whose write is in flight: the next write still waits for that write's result")
    func cancelWhileWriting() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        #expect(consumer.cancel(first, at: .zero) == [.emit(.completed(first, .failure(.cancelled)))])
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero, into: &secondActions)
        #expect(try writes(secondActions).isEmpty, "ATT allows one write at a time")

        let write2 = try onlyWrite(consumer.writeCompleted(write1.token, .success, at: .zero))
        #expect(write2.command == standardCommand(2))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        #expect(deliver(standardResponse(1), to: &consumer) == [])
        let answered = deliver(standardResponse(2), to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("Cancelling a request whose write is in flight: if the write then fails, no response is awaited for it")
    func cancelWhileWritingThenWriteFails() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        _ = consumer.cancel(first, at: .zero)
        // The same notification asked again, for other attributes: its response starts with the same header.
        let titleOnly = [NotificationAttributeRequest(.title, maxLength: 32)]
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(titleOnly, for: uid(1), at: .zero, into: &secondActions)
        var actions = secondActions
        actions += consumer.writeCompleted(write1.token, .attError(.invalidParameter), at: .zero)
        #expect(completionCount(actions) == 0)
        let write2 = try onlyWrite(actions)
        #expect(write2.command == .getNotificationAttributes(GetNotificationAttributes(notificationUID: uid(1), attributes: titleOnly)))
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        let response = NotificationAttributesResponse(notificationUID: uid(1), attributes: [NotificationAttribute(.title, "Alice")])
        let answered = deliver(response, to: &consumer)
        #expect(results(answered, for: second) == [.success(.notificationAttributes(response))])
    }

    @Test("A cancelled request's write that never completes stops holding the link a request timeout after it was issued")
    func abandonedWriteNeverCompletes() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        _ = try onlyWrite(firstActions)
        _ = consumer.cancel(first, at: at(milliseconds: 1_000))
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 2_000), into: &secondActions)
        #expect(secondActions.isEmpty)
        // The abandoned write's deadline comes before the second request's.
        #expect(consumer.nextDeadline == at(milliseconds: 10_000))
        #expect(consumer.tick(at: at(milliseconds: 9_999)) == [])
        let released = consumer.tick(at: at(milliseconds: 10_000))
        #expect(results(released, for: second).isEmpty)
        let write2 = try onlyWrite(released)
        #expect(write2.command == standardCommand(2))
        // The second request's time counts from its write.
        #expect(consumer.nextDeadline == at(milliseconds: 20_000))
    }

    @Test("A session that ends with a write in flight: after a link drop the next session writes at once; on a link that stays up (stop, Service Changed) its first write waits for the old write's result, which answers nothing",
          arguments: SessionEnd.allCases)
    func writeInFlightAcrossSessions(_ end: SessionEnd) throws {
        var consumer = sessionConsumer(with: [(1, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        #expect(results(end.end(&consumer, at: .zero), for: first) == [.failure(.sessionEnded)])
        switch end {
        case .linkDown:
            // The link took the write with it: nothing waits for it.
            #expect(consumer.nextDeadline == nil)
            _ = consumer.linkUp(mtu: 23, at: .zero)
        case .stop, .serviceUnpublished:
            // ATT allows one write at a time: the old one holds the link until its result, or its deadline.
            #expect(consumer.nextDeadline == at(milliseconds: 10_000))
            _ = consumer.serviceChanged(published: true, at: .zero)
        }
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 2), at: .zero)
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: at(milliseconds: 1), into: &secondActions)
        let write2: Write
        if end == .linkDown {
            write2 = try onlyWrite(secondActions)
            // A late result of the old write, should one still arrive, changes nothing.
            #expect(consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 2)).isEmpty)
        } else {
            #expect(try writes(secondActions).isEmpty)
            // The old write's result frees the link and answers nothing.
            let freed = consumer.writeCompleted(write1.token, .success, at: at(milliseconds: 2))
            #expect(completionCount(freed) == 0)
            write2 = try onlyWrite(freed)
        }
        #expect(write2.command == standardCommand(2))
        #expect(write2.token != write1.token)
        _ = consumer.writeCompleted(write2.token, .success, at: at(milliseconds: 3))
        #expect(results(deliver(standardResponse(2), to: &consumer), for: second) == [.success(.notificationAttributes(standardResponse(2)))])
    }

    @Test("After the link drops, a new link has no write in flight")
    func newLinkHasNoWriteInFlight() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        _ = try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).actions)
        _ = consumer.linkDown(at: .zero)
        #expect(consumer.nextDeadline == nil)
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        _ = consumer.received(notificationSource: sourceEvent(.added, 1), at: .zero)
        #expect(try onlyWrite(consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).actions).command == standardCommand(1))
    }

    @Test("The into: forms append exactly the actions the array-returning forms return, to a buffer the caller reuses")
    func actionsIntoCallerBuffer() throws {
        var byArray = Consumer(configuration: ConsumerConfiguration(eagerAttributes: standardAttributes))
        var byBuffer = byArray
        var buffer: [ConsumerAction] = []
        func same(_ expected: [ConsumerAction], _ step: (inout Consumer, inout [ConsumerAction]) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
            buffer.removeAll(keepingCapacity: true)
            step(&byBuffer, &buffer)
            #expect(buffer == expected, sourceLocation: sourceLocation)
        }
        same(byArray.linkUp(mtu: 23, at: .zero)) { $0.linkUp(mtu: 23, at: .zero, into: &$1) }
        same(byArray.subscriptionCompleted(.dataSource, .success, at: .zero)) { $0.subscriptionCompleted(.dataSource, .success, at: .zero, into: &$1) }
        same(byArray.subscriptionCompleted(.notificationSource, .success, at: .zero)) { $0.subscriptionCompleted(.notificationSource, .success, at: .zero, into: &$1) }
        let added = sourceEvent(.added, 1, flags: [.negativeAction])
        let addedActions = byArray.received(notificationSource: added, at: .zero)
        same(addedActions) { consumer, actions in added.withUnsafeBytes { consumer.received(notificationSource: $0, at: .zero, into: &actions) } }
        let token = try onlyWrite(addedActions).token
        same(byArray.writeCompleted(token, .success, at: .zero)) { $0.writeCompleted(token, .success, at: .zero, into: &$1) }
        for fragment in DataSourceResponse.notificationAttributes(standardResponse(1)).fragments(mtu: 23) {
            same(byArray.received(dataSource: fragment, at: .zero)) { consumer, actions in
                fragment.withUnsafeBytes { consumer.received(dataSource: $0, at: .zero, into: &actions) }
            }
        }
        var fetchActions: [ConsumerAction] = []
        let fetch = byArray.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 8)], for: uid(1), at: .zero, into: &fetchActions)
        same(fetchActions) { #expect($0.fetchAttributes([NotificationAttributeRequest(.message, maxLength: 8)], for: uid(1), at: .zero, into: &$1) == fetch) }
        var appActions: [ConsumerAction] = []
        let app = byArray.fetchAppAttributes(appIdentifierBytes: Array(phoneApp.utf8), at: .zero, into: &appActions)
        same(appActions) { #expect($0.fetchAppAttributes(appIdentifierBytes: Array(phoneApp.utf8), at: .zero, into: &$1) == app) }
        var actionActions: [ConsumerAction] = []
        let action = byArray.performAction(.negative, on: uid(1), at: .zero, into: &actionActions)
        same(actionActions) { #expect($0.performAction(.negative, on: uid(1), at: .zero, into: &$1) == action) }
        same(byArray.cancel(fetch, at: .zero)) { $0.cancel(fetch, at: .zero, into: &$1) }
        same(byArray.tick(at: at(milliseconds: 20_000))) { $0.tick(at: at(milliseconds: 20_000), into: &$1) }
        same(byArray.serviceChanged(published: false, at: .zero)) { $0.serviceChanged(published: false, at: .zero, into: &$1) }
        same(byArray.stop(at: .zero)) { $0.stop(at: .zero, into: &$1) }
        same(byArray.linkDown(at: .zero)) { $0.linkDown(at: .zero, into: &$1) }
        #expect(buffer.capacity > 0)
    }

    @Test("An application request identical to one of its requests in flight is its own entry, written after it and ended by its own answer; one identical to the display's fetch joins that fetch (one write)")
    func identicalRequests() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        var secondActions: [ConsumerAction] = []
        let second = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &secondActions)
        #expect(try writes(secondActions).isEmpty, "one write at a time")
        #expect(first != second)
        #expect(consumer.pendingRequestCount == 2)
        _ = consumer.writeCompleted(write1.token, .success, at: .zero)
        let answered = deliver(standardResponse(1), to: &consumer)
        let value = ConsumerResult.success(.notificationAttributes(standardResponse(1)))
        #expect(results(answered, for: first) == [value])
        #expect(results(answered, for: second).isEmpty)
        let write2 = try onlyWrite(answered)
        #expect(write2.bytes == write1.bytes)
        _ = consumer.writeCompleted(write2.token, .success, at: .zero)
        #expect(results(deliver(standardResponse(1), to: &consumer), for: second) == [value])
        #expect(consumer.pendingRequestCount == 0)

        // The display's fetch of 3, joined by the application's identical request: one write, both served.
        var display = sessionConsumer(ConsumerConfiguration(eagerAttributes: standardAttributes, eagerAppNames: false))
        let fetch = try onlyWrite(display.received(notificationSource: sourceEvent(.added, 3), at: .zero))
        var joinedActions: [ConsumerAction] = []
        let joined = display.fetchAttributes(standardAttributes, for: uid(3), at: .zero, into: &joinedActions)
        #expect(try writes(joinedActions).isEmpty)
        _ = display.writeCompleted(fetch.token, .success, at: .zero)
        let served = deliver(standardResponse(3), to: &display)
        #expect(results(served, for: joined) == [.success(.notificationAttributes(standardResponse(3)))])
        #expect(events(served).contains { $0.readyUID == uid(3) })
        #expect(try writes(served).isEmpty)
    }

    @Test("Three identical requests, the middle one cancelled while queued: it is never written, and the other two complete, in the order asked")
    func identicalRequestsKeepTheirOrder() throws {
        var consumer = sessionConsumer(with: [(1, [])])
        var actions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &actions)
        let write = try onlyWrite(actions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).id
        let third = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero).id
        #expect(consumer.pendingRequestCount == 3)
        #expect(consumer.cancel(second, at: .zero) == [.emit(.completed(second, .failure(.cancelled)))])
        #expect(consumer.cancel(second, at: .zero).isEmpty, "a request ends once")
        #expect(consumer.pendingRequestCount == 2)
        var completed: [ConsumerRequestID] = []
        var pending = consumer.writeCompleted(write.token, .success, at: .zero) + deliver(standardResponse(1), to: &consumer)
        var written = 1
        while !pending.isEmpty {
            let action = pending.removeFirst()
            if case .emit(.completed(let id, .success)) = action { completed.append(id) }
            if case .writeControlPoint(_, let token) = action {
                written += 1
                pending += consumer.writeCompleted(token, .success, at: .zero) + deliver(standardResponse(1), to: &consumer)
            }
        }
        #expect(completed == [first, third])
        #expect(written == 2)
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("More requests than maximumRequests fail with tooManyRequests, without a write")
    func tooManyRequests() throws {
        var consumer = sessionConsumer(ConsumerConfiguration(maximumRequests: 2), with: [(1, []), (2, []), (3, [])])
        _ = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero)
        _ = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero)
        var actions: [ConsumerAction] = []
        let third = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero, into: &actions)
        #expect(actions == [.emit(.completed(third, .failure(.tooManyRequests)))])
        #expect(consumer.pendingRequestCount == 2)
    }

    @Test("An AppIdentifier is NUL-terminated on the wire: one containing NUL cannot be encoded")
    func appIdentifierWithNUL() {
        var consumer = sessionConsumer()
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAppAttributes("com.example\u{0}evil", at: .zero, into: &actions)
        #expect(actions == [.emit(.completed(id, .failure(.encoding(EncodingError(.appIdentifierContainsNUL)))))])
        #expect(consumer.pendingRequestCount == 0)
    }

    @Test("A write result with a stale token is ignored")
    func staleWriteToken() throws {
        var consumer = sessionConsumer(with: [(1, []), (2, []), (3, [])])
        var firstActions: [ConsumerAction] = []
        let first = consumer.fetchAttributes(standardAttributes, for: uid(1), at: .zero, into: &firstActions)
        let write1 = try onlyWrite(firstActions)
        let second = consumer.fetchAttributes(standardAttributes, for: uid(2), at: .zero).id
        let never = WriteToken(rawValue: write1.token.rawValue &+ 1_000)
        #expect(consumer.writeCompleted(never, .attError(.invalidParameter), at: .zero) == [])
        #expect(consumer.writeCompleted(never, .success, at: .zero) == [])
        #expect(consumer.pendingRequestCount == 2)

        // A token already answered is stale too: it neither ends nor releases the write now in flight.
        var actions = consumer.writeCompleted(write1.token, .success, at: .zero)
        actions += deliver(standardResponse(1), to: &consumer)
        #expect(results(actions, for: first) == [.success(.notificationAttributes(standardResponse(1)))])
        let write2 = try onlyWrite(actions)
        var thirdActions: [ConsumerAction] = []
        _ = consumer.fetchAttributes(standardAttributes, for: uid(3), at: .zero, into: &thirdActions)
        #expect(thirdActions.isEmpty)
        #expect(consumer.writeCompleted(write1.token, .transportFailure, at: .zero) == [])
        #expect(consumer.pendingRequestCount == 2)
        let failed = consumer.writeCompleted(write2.token, .attError(.invalidParameter), at: .zero)
        #expect(results(failed, for: second) == [.failure(.invalidParameter)])
        #expect(try onlyWrite(failed).command == standardCommand(3))
    }
}
