import ANCS
import ANCSRuntime
import ANCSSimulation
import Testing

/// A phone (`ProviderServer`) and an accessory (`ConsumerClient`) joined by
/// a `SimulatedLink` in a `Simulation`: the runtime's real actors, on the
/// virtual clock. Every step runs the simulation until it is idle, so a test
/// reads like a script and is exact.
final class SimulationRig: @unchecked Sendable {
    let simulation = Simulation()
    let server = SimulatedServer()
    let link: SimulatedLink
    let provider: ProviderServer
    let consumer: ConsumerClient
    /// Everything the client told, in order.
    private(set) var events: [ConsumerClientEvent] = []
    private(set) var providerEvents: [ProviderEvent] = []
    /// How `run()` of each actor ended: nil while running.
    private(set) var consumerRunEnded: Result<Void, any Error>?
    private(set) var providerRunEnded: Result<Void, any Error>?

    /// Without `liveness` the consumer's probe and silence limit are off:
    /// with them a session is never idle (the probe's timer always runs),
    /// and each step would run to its limit, probing. The liveness tests
    /// turn them on.
    init(mtu: Int = 185, interval: Duration = .milliseconds(30), configuration: ConsumerConfiguration = .default, liveness: Bool = false,
         display: DisplayPolicy? = nil, apps: [(String, String)] = [("com.apple.MobileSMS", "Messages")]) {
        var configuration = configuration
        if let display { configuration.display = display }
        if !liveness {
            configuration.probeInterval = .zero
            configuration.silenceLimit = .zero
        }
        link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: mtu, connectionInterval: interval))
        provider = ProviderServer(transport: server)
        consumer = ConsumerClient(transport: link.client, configuration: configuration,
                                  clock: simulation.clock, executor: simulation.executor)
        let provider = self.provider, consumer = self.consumer
        simulation.spawn { [self] in
            do { try await provider.run(); providerRunEnded = .success(()) } catch { providerRunEnded = .failure(error) }
        }
        simulation.spawn { [self] in
            do { try await consumer.run(); consumerRunEnded = .success(()) } catch { consumerRunEnded = .failure(error) }
        }
        simulation.spawn { [self] in for await event in consumer.events { events.append(event) } }
        simulation.spawn { [self] in for await event in provider.events { providerEvents.append(event) } }
        for (identifier, name) in apps {
            simulation.spawn { await provider.registerApp(identifier: identifier, displayName: name) }
        }
        simulation.runUntilIdle()
    }

    var now: Timestamp { simulation.now }

    /// The engine's events among the client's.
    var consumerEvents: [ConsumerEvent] {
        events.filter(\.isEngineEvent).map(\.consumerEvent)
    }

    func connect() {
        link.connect()
        simulation.runUntilIdle()
    }

    /// Adds a notification on the phone; runs until the link is quiet.
    @discardableResult
    func add(_ notification: ProviderNotification) throws -> NotificationUID {
        let provider = self.provider
        let task = simulation.spawn { try await provider.add(notification) }
        simulation.runUntilIdle()
        return try unwrap(task)
    }

    func remove(_ uid: NotificationUID) {
        let provider = self.provider
        simulation.spawn { try await provider.remove(uid) }
        simulation.runUntilIdle()
    }

    /// Starts a request on the accessory; its outcome is read with `result`.
    func request<T: Sendable>(_ body: @escaping @Sendable (ConsumerClient) async throws(ConsumerError) -> T) -> Request<T> {
        let request = Request<T>()
        let consumer = self.consumer
        request.task = simulation.spawn {
            do throws(ConsumerError) {
                let value = try await body(consumer)
                request.outcome = .success(value)
            } catch {
                request.outcome = .failure(error)
            }
        }
        return request
    }

    /// Fetches title and message of `uid`, runs until idle, returns the outcome.
    func fetch(_ uid: NotificationUID, _ attributes: [NotificationAttributeRequest] = [.init(.title, maxLength: 32), .init(.message, maxLength: 64)]) -> Result<NotificationAttributesResponse, ConsumerError>? {
        let request = request { client throws(ConsumerError) in try await client.fetchAttributes(attributes, for: uid) }
        simulation.runUntilIdle()
        return request.outcome
    }

    /// A snapshot of the consumer's model (the simulation is paused, so this is exact).
    func notifications() async -> [NotificationUID: ConsumerNotification] { await consumer.notifications }
    func pendingRequestCount() async -> Int { await consumer.pendingRequestCount }

    func unwrap<T: Sendable>(_ task: Task<T, any Error>) throws -> T {
        let done = Box<Result<T, any Error>>()
        simulation.spawn { done.value = await task.result }
        simulation.runUntilIdle()
        guard let outcome = done.value else { throw SimulationRigError("the task did not finish") }
        return try outcome.get()
    }
}

/// One request started in a rig; `outcome` is set when it ends.
final class Request<T: Sendable>: @unchecked Sendable {
    var outcome: Result<T, ConsumerError>?
    var task: Task<Void, any Error>?
    var error: ConsumerError? { if case .failure(let error)? = outcome { error } else { nil } }
    var value: T? { if case .success(let value)? = outcome { value } else { nil } }
}

/// A value set inside the simulation and read outside it (one thread: the simulation's).
final class Box<T>: @unchecked Sendable { var value: T? }

struct SimulationRigError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension ConsumerEvent {
    var isProtocolError: Bool { if case .protocolError = self { true } else { false } }
}

extension ConsumerClientEvent {
    /// An event the engine tells as it is (not the display's `.ready`,
    /// `.updated`, `.displayFailed`): what these tests log as `ConsumerEvent`s.
    var isEngineEvent: Bool {
        switch self {
        case .ready, .updated, .displayFailed: false
        default: true
        }
    }
}
