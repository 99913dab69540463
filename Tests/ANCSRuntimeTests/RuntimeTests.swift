import ANCS
import ANCSDemo
import ANCSRuntime
import ANCSSimulation
import Testing

// The runtime end to end: a ConsumerClient and a ProviderServer joined by a
// LoopbackLink, time from a ManualClock. Every wait below is on an event or
// a sync point, never on wall time; the suite's time limit only keeps a
// broken build from hanging CI.

/// One consumer and one provider on a loopback link, both running.
private struct Rig {
    let link = LoopbackLink()
    let clock = ManualClock()
    let provider: ProviderServer
    let consumer: ConsumerClient
    let running: Task<Void, any Error>

    /// Liveness (the probe, the silence limit) off: these tests move the
    /// clock by hand, and a probe due at a session's start would take the
    /// write a test means for its request (LivenessRuntimeTests turn it on).
    init(configuration: ConsumerConfiguration = .default) {
        var configuration = configuration
        configuration.probeInterval = .zero
        configuration.silenceLimit = .zero
        provider = ProviderServer(transport: link.server)
        consumer = ConsumerClient(transport: link.client, configuration: configuration, clock: clock)
        running = Task { [provider, consumer] in
            async let providing: Void = provider.run()
            async let consuming: Void = consumer.run()
            _ = try await (providing, consuming)
        }
    }

    /// Closes the link and waits for both actors to finish running.
    func shutDown() async {
        link.close()
        try? await running.value
    }
}

/// Reads one event stream in order.
private struct Events<Element: Sendable> {
    private var iterator: AsyncStream<Element>.Iterator

    init(_ stream: AsyncStream<Element>) { iterator = stream.makeAsyncIterator() }

    /// The next event satisfying `predicate`; nil if the stream finished first.
    mutating func next(where predicate: (Element) -> Bool) async -> Element? {
        while let event = await iterator.next() {
            if predicate(event) { return event }
        }
        return nil
    }

    /// Every event up to and including the first satisfying `predicate`.
    mutating func collect(through predicate: (Element) -> Bool) async -> [Element] {
        var events: [Element] = []
        while let event = await iterator.next() {
            events.append(event)
            if predicate(event) { break }
        }
        return events
    }
}

extension AsyncStream where Element == ConsumerClientEvent {
    /// The engine's events among the client's, in order.
    var consumerEvents: AsyncStream<ConsumerEvent> {
        let (stream, sink) = AsyncStream<ConsumerEvent>.makeStream()
        Task {
            for await event in self where event.isEngineEvent { sink.yield(event.consumerEvent) }
            sink.finish()
        }
        return stream
    }
}

private extension ConsumerEvent {
    var addedUID: NotificationUID? {
        if case .added(let notification) = self { return notification.uid }
        return nil
    }
    var isSessionEnded: Bool {
        if case .sessionEnded = self { return true }
        return false
    }
}

private let mail = ProviderNotification(
    appIdentifier: "com.apple.mobilemail",
    categoryID: .email,
    flags: [.negativeAction],
    title: "Lunch on Friday?",
    message: String(repeating: "Are you free at noon? The usual place. ", count: 8),
    date: ANCSDate(year: 2014, month: 3, day: 22, hour: 15, minute: 42, second: 0),
    negativeActionLabel: "Clear")

private let call = ProviderNotification(
    appIdentifier: "com.apple.mobilephone",
    categoryID: .incomingCall,
    flags: [.important, .positiveAction, .negativeAction],
    title: "Ada Lovelace",
    positiveActionLabel: "Answer",
    negativeActionLabel: "Decline")

private let display: [NotificationAttributeRequest] = [
    NotificationAttributeRequest(.appIdentifier),
    NotificationAttributeRequest(.title, maxLength: 64),
    NotificationAttributeRequest(.message, maxLength: 512),
    NotificationAttributeRequest(.date),
]

@Suite("Runtime", .timeLimit(.minutes(1)))
struct RuntimeTests {
    @Test("fetches attributes, app names and performs actions over the loopback")
    func endToEnd() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        await rig.provider.registerApp(identifier: "com.apple.mobilemail", displayName: "Mail")
        let mailUID = try await rig.provider.add(mail)
        // A small MTU: the message comes back in many Data Source fragments.
        rig.link.connect(mtu: 23)

        let announced = await events.next { $0.addedUID != nil }
        guard case .added(let notification) = announced else { Issue.record("no Added event"); return }
        #expect(notification.uid == mailUID)
        #expect(notification.isPreExisting)
        #expect(notification.categoryID == .email)

        let attributes = try await rig.consumer.fetchAttributes(display, for: mailUID)
        #expect(attributes.notificationUID == mailUID)
        #expect(attributes[.appIdentifier]?.string == "com.apple.mobilemail")
        #expect(attributes[.title]?.string == "Lunch on Friday?")
        #expect(attributes[.message]?.string == mail.message)
        #expect(attributes[.date]?.date == mail.date)
        // The session's model holds what was fetched.
        #expect(await rig.consumer.notifications[mailUID]?[.title]?.string == "Lunch on Friday?")

        let app = try await rig.consumer.fetchAppAttributes("com.apple.mobilemail")
        #expect(app[.displayName]?.string == "Mail")
        #expect(await rig.consumer.displayName(of: "com.apple.mobilemail")?.string == "Mail")
        // The second time it comes from the session's cache.
        #expect(try await rig.consumer.fetchAppAttributes("com.apple.mobilemail") == app)

        // A notification added during the session, then acted upon.
        let callUID = try await rig.provider.add(call)
        #expect(await events.next { $0.addedUID == callUID } != nil)
        try await rig.consumer.performAction(.positive, on: callUID)
        let removed = await events.next {
            if case .removed(let notification) = $0 { return notification.uid == callUID }
            return false
        }
        #expect(removed != nil)
        #expect(await rig.consumer.notifications[callUID] == nil)

        await rig.shutDown()
    }

    @Test("concurrent requests each get their own response")
    func concurrentRequests() async throws {
        let rig = Rig(configuration: ConsumerConfiguration(pipeliningDepth: 2))
        var events = Events(rig.consumer.events.consumerEvents)
        await rig.provider.registerApp(identifier: "com.apple.mobilemail", displayName: "Mail")
        var uids: [NotificationUID] = []
        for index in 0..<5 {
            var notification = mail
            notification.title = "Message \(index)"
            uids.append(try await rig.provider.add(notification))
        }
        rig.link.connect(mtu: 23)
        _ = await events.next { $0.addedUID == uids.last }

        let consumer = rig.consumer
        let titles = try await withThrowingTaskGroup(of: (NotificationUID, String?).self) { group in
            for uid in uids {
                group.addTask { (uid, try await consumer.fetchAttributes(display, for: uid)[.title]?.string) }
            }
            group.addTask { (NotificationUID(UInt32.max), try await consumer.fetchAppAttributes("com.apple.mobilemail")[.displayName]?.string) }
            var titles: [NotificationUID: String?] = [:]
            for try await (uid, title) in group { titles[uid] = title }
            return titles
        }
        for (index, uid) in uids.enumerated() { #expect(titles[uid] == "Message \(index)") }
        #expect(titles[NotificationUID(UInt32.max)] == "Mail")
        await rig.shutDown()
    }

    @Test("a request the NP never answers times out on the manual clock")
    func timeout() async throws {
        let rig = Rig(configuration: ConsumerConfiguration(requestTimeout: .seconds(10)))
        var events = Events(rig.consumer.events.consumerEvents)
        let uid = try await rig.provider.add(mail)
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }

        rig.link.neverAnswerNextWrite()
        let consumer = rig.consumer
        let fetch = Task { try await consumer.fetchAttributes(display, for: uid) }
        // The request's timer is asleep on the clock: time can move now.
        await rig.clock.waitForSleepers(1)

        rig.clock.advance(by: .seconds(9))
        #expect(await consumer.pendingRequestCount == 1)
        rig.clock.advance(by: .seconds(1))

        await #expect(throws: ConsumerError.timedOut) { try await fetch.value }
        #expect(await consumer.pendingRequestCount == 0)
        await rig.shutDown()
    }

    @Test("a cancelled fetch throws cancelled; its late response is consumed and the next fetch works")
    func cancellation() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        var providerEvents = Events(rig.provider.events)
        let first = try await rig.provider.add(mail)
        let second = try await rig.provider.add(call)
        rig.link.connect(mtu: 23)
        _ = await events.next { $0.addedUID == second }

        let held = rig.link.holdNextWrite()
        let consumer = rig.consumer
        let fetch = Task { try await consumer.fetchAttributes(display, for: first) }
        // The Control Point write is out, its answer not yet in.
        let written = await held.arrived()
        #expect(written.first == CommandID.getNotificationAttributes.rawValue)
        fetch.cancel()
        await #expect(throws: ConsumerError.cancelled) { try await fetch.value }

        // Now the NP answers the cancelled command after all, before the
        // next fetch (for another notification) is answered: the cancelled
        // response must be consumed, not taken for the next one.
        held.release()
        let next = try await consumer.fetchAttributes(
            [NotificationAttributeRequest(.title, maxLength: 32), NotificationAttributeRequest(.positiveActionLabel)],
            for: second)
        #expect(next.notificationUID == second)
        #expect(next[.title]?.string == "Ada Lovelace")
        #expect(next[.positiveActionLabel]?.string == "Answer")

        // The provider did answer the cancelled command, first.
        let sent = await providerEvents.collect {
            if case .notificationAttributesSent(_, let request) = $0 { return request.notificationUID == second }
            return false
        }
        let answered = sent.compactMap { event -> NotificationUID? in
            if case .notificationAttributesSent(_, let request) = event { return request.notificationUID }
            return nil
        }
        #expect(answered == [first, second])

        // Its response was consumed silently: no protocol error, and the
        // cancellation is the one completion of the first request.
        rig.link.drop()
        let seen = await events.collect { $0.isSessionEnded }
        #expect(!seen.contains { $0.isProtocolError })
        // Request completions are returned to their callers, never mixed into events.
        #expect(!seen.contains { if case .completed = $0 { true } else { false } })
        await rig.shutDown()
    }

    @Test("ANCS errors surface as typed errors")
    func ancsErrors() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        let uid = try await rig.provider.add(mail)
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }

        // 0xA2 from the provider: the UID names nothing on the NP.
        await #expect(throws: ConsumerError.invalidParameter) {
            try await rig.consumer.fetchAttributes(display, for: NotificationUID(999))
        }
        // 0xA2: an app the provider does not know.
        await #expect(throws: ConsumerError.invalidParameter) {
            try await rig.consumer.fetchAppAttributes("com.example.unknown")
        }
        // 0xA3 injected on the link, and a plain ATT code.
        rig.link.failNextWrite(with: .attError(.actionFailed))
        await #expect(throws: ConsumerError.actionFailed) {
            try await rig.consumer.performAction(.negative, on: uid)
        }
        rig.link.failNextWrite(with: .attError(.insufficientAuthentication))
        await #expect(throws: ConsumerError.att(0x05)) {
            try await rig.consumer.fetchAttributes(display, for: uid)
        }
        // The engine refuses what the flags do not announce, without a write.
        await #expect(throws: ConsumerError.actionNotAvailable) {
            try await rig.consumer.performAction(.positive, on: uid)
        }
        // The session survives errors.
        let attributes = try await rig.consumer.fetchAttributes(display, for: uid)
        #expect(attributes[.title]?.string == mail.title)
        await rig.shutDown()
    }

    @Test("an action answered as the link drops was performed: the answer reaches the engine before the link's end")
    func answerThenLinkDown() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        let uid = try await rig.provider.add(mail)
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }
        rig.link.dropAfterNextAnswer()
        // Performed on the phone, answered, and the link gone at once: not sessionEnded.
        try await rig.consumer.performAction(.negative, on: uid)
        await rig.shutDown()
    }

    @Test("a dropped link fails pending requests with sessionEnded; a new link starts a new session")
    func linkDrop() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        let uid = try await rig.provider.add(mail)
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }

        let held = rig.link.holdNextWrite()
        let consumer = rig.consumer
        let inFlight = Task { try await consumer.fetchAttributes(display, for: uid) }
        _ = await held.arrived()
        // A second request waits in the engine behind the write in flight.
        let queued = Task { try await consumer.fetchAppAttributes("com.apple.mobilemail") }
        // Submission has no event of its own: poll the actor until it is in.
        while await consumer.pendingRequestCount < 2 { await Task.yield() }

        rig.link.drop()
        await #expect(throws: ConsumerError.sessionEnded) { try await inFlight.value }
        await #expect(throws: ConsumerError.sessionEnded) { try await queued.value }
        let seen = await events.collect { $0.isSessionEnded }
        #expect(seen.last == .sessionEnded(.linkDown))
        #expect(!seen.contains { if case .completed = $0 { true } else { false } })
        #expect(await consumer.notifications.isEmpty)

        // No session, no requests.
        await #expect(throws: ConsumerError.notConnected) { try await consumer.fetchAttributes(display, for: uid) }

        // The released write finds no link; the next link is a new session.
        held.release()
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }
        let attributes = try await consumer.fetchAttributes(display, for: uid)
        #expect(attributes[.title]?.string == mail.title)
        await rig.shutDown()
    }

    @Test("stop unsubscribes, ends the session and ends run()")
    func stop() async throws {
        let rig = Rig()
        var events = Events(rig.consumer.events.consumerEvents)
        var providerEvents = Events(rig.provider.events)
        let uid = try await rig.provider.add(mail)
        rig.link.connect()
        _ = await events.next { $0.addedUID == uid }

        await rig.consumer.stop()
        let rest = await events.collect { _ in false }  // until the stream finishes
        #expect(rest.last == .sessionEnded(.unsubscribed))
        let ended = await providerEvents.next { if case .sessionEnded = $0 { true } else { false } }
        #expect(ended != nil)
        #expect(await !rig.provider.isSubscribed(ConnectionID(1), to: .notificationSource))
        await #expect(throws: ConsumerError.notConnected) { try await rig.consumer.fetchAttributes(display, for: uid) }
        await rig.shutDown()
    }

    @Test("cancelling run() ends the session and finishes the events")
    func cancelRun() async throws {
        let link = LoopbackLink()
        let provider = ProviderServer(transport: link.server)
        let consumer = ConsumerClient(transport: link.client)  // the default, continuous clock
        let providing = Task { try await provider.run() }
        let consuming = Task { try await consumer.run() }
        var events = Events(consumer.events.consumerEvents)
        let uid = try await provider.add(mail)
        link.connect()
        _ = await events.next { $0.addedUID == uid }

        consuming.cancel()
        try await consuming.value
        let rest = await events.collect { _ in false }
        #expect(rest.last == .sessionEnded(.linkDown))
        link.close()
        try await providing.value
    }
}

@Suite("Transport helpers")
struct TransportHelperTests {
    @Test("a responder answers once")
    func responderOnce() {
        final class Box: @unchecked Sendable { var results: [ATTResult] = [] }
        let box = Box()
        let responder = ATTResponder { box.results.append($0) }
        #expect(!responder.hasResponded)
        responder(.success)
        responder(.attError(.invalidParameter))
        #expect(responder.hasResponded)
        #expect(box.results == [.success])
    }
}

@Suite("ManualClock")
struct ManualClockTests {
    @Test("advance wakes sleepers whose deadline passed, earliest first")
    func advance() async throws {
        let clock = ManualClock()
        let start = clock.now
        let (order, sink) = AsyncStream.makeStream(of: Int.self)
        let sleepers = Task {
            await withTaskGroup(of: Void.self) { group in
                for seconds in [3, 1, 2] {
                    group.addTask {
                        try? await clock.sleep(until: start.advanced(by: .seconds(seconds)))
                        sink.yield(seconds)
                    }
                }
            }
            sink.finish()
        }
        await clock.waitForSleepers(3)
        clock.advance(by: .seconds(2))
        var woken = order.makeAsyncIterator()
        let firstTwo = [await woken.next(), await woken.next()].compactMap { $0 }
        #expect(Set(firstTwo) == [1, 2])
        #expect(clock.sleeperCount == 1)
        clock.advance(to: start.advanced(by: .seconds(3)))
        #expect(await woken.next() == 3)
        await sleepers.value
        #expect(clock.now == start.advanced(by: .seconds(3)))
    }

    @Test("a cancelled sleeper throws and leaves the clock")
    func cancel() async {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(until: clock.now.advanced(by: .seconds(5))) }
        await clock.waitForSleepers(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }
}

/// A GATT server whose events the test sends and whose output it reads, in
/// the order the provider performed it.
private struct RecordingServer: GATTServerTransport {
    enum Output: Hashable, Sendable {
        case reply(ATTResult)
        case notify(ConnectionID, ANCSCharacteristic, [UInt8])
    }
    let events: AsyncThrowingStream<GATTServerEvent, any Error>
    let input: AsyncThrowingStream<GATTServerEvent, any Error>.Continuation
    let output: AsyncStream<Output>
    let log: AsyncStream<Output>.Continuation

    init() {
        (events, input) = AsyncThrowingStream.makeStream()
        (output, log) = AsyncStream.makeStream()
    }

    func notify(_ connection: ConnectionID, _ characteristic: ANCSCharacteristic, _ value: [UInt8]) async throws(TransportError) {
        log.yield(.notify(connection, characteristic, value))
    }

    func write(_ connection: ConnectionID, _ command: ControlPointCommand) throws {
        let log = self.log
        input.yield(.controlPointWrite(connection, try command.encode(), reply: ATTResponder { log.yield(.reply($0)) }))
    }
}

@Suite("ProviderServer", .timeLimit(.minutes(1)))
struct ProviderServerTests {
    @Test("a write's response goes out before the notifications it causes; a failed write causes none")
    func replyBeforeNotifications() async throws {
        let transport = RecordingServer()
        let provider = ProviderServer(transport: transport)
        let running = Task { try await provider.run() }
        var output = Events(transport.output)
        let uid = try await provider.add(mail)
        let consumer = ConnectionID(7)

        transport.input.yield(.linkUp(consumer, LinkInfo(mtu: 23)))
        transport.input.yield(.subscriptionChanged(consumer, .dataSource, enabled: true))
        transport.input.yield(.subscriptionChanged(consumer, .notificationSource, enabled: true))
        guard case .notify(consumer, .notificationSource, let preExisting)? = await output.next(where: { _ in true }) else {
            Issue.record("no PreExisting announcement"); return
        }
        #expect(try NotificationSourceEvent.decode(preExisting).eventFlags.contains(.preExisting))

        let request = GetNotificationAttributes(notificationUID: uid, attributes: display)
        try transport.write(consumer, .getNotificationAttributes(request))
        #expect(await output.next(where: { _ in true }) == .reply(.success))
        // Then the response, in MTU − 3 byte fragments, up to the next output.
        let expected = DataSourceResponse.notificationAttributes(NotificationAttributesResponse(
            notificationUID: uid,
            attributes: [
                NotificationAttribute(.appIdentifier, AttributeValue(mail.appIdentifier)),
                NotificationAttribute(.title, AttributeValue(mail.title!)),
                NotificationAttribute(.message, AttributeValue(mail.message!)),
                NotificationAttribute(.date, AttributeValue(mail.date!.wireValue)),
            ])).fragments(mtu: 23)
        var fragments: [[UInt8]] = []
        for _ in expected {
            guard case .notify(consumer, .dataSource, let fragment)? = await output.next(where: { _ in true }) else { break }
            fragments.append(fragment)
        }
        #expect(fragments == expected)

        // 0xA2 and nothing else: the next output is the announcement of the removal.
        try transport.write(consumer, .getNotificationAttributes(GetNotificationAttributes(notificationUID: NotificationUID(999), attributes: display)))
        #expect(await output.next(where: { _ in true }) == .reply(.attError(.invalidParameter)))
        try await provider.remove(uid)
        guard case .notify(consumer, .notificationSource, let removed)? = await output.next(where: { _ in true }) else {
            Issue.record("no Removed announcement"); return
        }
        #expect(try NotificationSourceEvent.decode(removed).eventID == .removed)

        transport.input.finish()
        try await running.value
    }
}
