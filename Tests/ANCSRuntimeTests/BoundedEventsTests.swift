import ANCS
import ANCSRuntime
import ANCSSimulation
import Testing

/// An application that stops reading `events` keeps a bounded buffer: the
/// newest events, the count of those dropped, and the complete model.
@Suite("Runtime: bounded event streams", .timeLimit(.minutes(1)))
struct BoundedEventsTests {
    @Test("nobody reads events: the client keeps the newest 8 and counts the rest; the provider counts its drops; the model is whole")
    func unreadEventsAreBounded() async throws {
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 185, connectionInterval: .milliseconds(30)))
        let provider = ProviderServer(transport: server, eventBufferLimit: 4)
        let client = ConsumerClient(transport: link.client, configuration: .displaying(.standard), clock: simulation.clock,
                                    executor: simulation.executor, eventBufferLimit: 8)
        simulation.spawn { try await provider.run() }
        simulation.spawn { try await client.run() }
        for index in 0..<30 {
            simulation.spawn { try await provider.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: "n\(index)")) }
        }
        simulation.runUntilIdle()
        link.connect()
        simulation.runUntilIdle()
        let box = Box<(model: Int, dropped: Int, providerDropped: Int)>()
        simulation.spawn { box.value = (await client.notifications.count, await client.droppedEventCount, await provider.droppedEventCount) }
        simulation.runUntilIdle()
        let counts = try #require(box.value)
        #expect(counts.model == 30, "the model is complete")
        #expect(counts.providerDropped > 0)
        // The link ends; the stream finishes with the newest events kept.
        link.closeClient()
        simulation.runUntilIdle()
        let read = Box<[ConsumerClientEvent]>()
        simulation.spawn {
            var events: [ConsumerClientEvent] = []
            for await event in client.events { events.append(event) }
            read.value = events
        }
        simulation.runUntilIdle()
        let events = try #require(read.value)
        #expect(events.count == 8)
        let dropped = await client.droppedEventCount
        #expect(dropped >= counts.dropped && dropped > 0)
        // The newest are kept: the last thing the client told is the session's end.
        if case .sessionEnded = events.last {} else { Issue.record("the newest event is kept: \(String(describing: events.last))") }
        // 30 Added, 30 attributes, 30 ready, an app name, the session start and end: all counted.
        #expect(events.count + dropped >= 93)
    }
}
