import ANCS

/// A deterministic world on a virtual clock: tasks that run on its
/// executor (the runtime's actors, a phone's script, an accessory's
/// application), a `ManualClock` for their timers, and the simulated links
/// between them.
///
/// `run(until:)` alternates two steps until nothing is left to do before
/// the end: run every task that can run (`SimulationExecutor.runUntilIdle`),
/// then move the clock to the next thing that happens (a sleeper's
/// deadline, a link's next connection event, an ATT transaction timeout)
/// and let it happen. A run is therefore exact and repeatable, and an hour
/// of simulated time takes milliseconds.
///
/// Everything about a simulation happens on the thread that calls `run`:
/// create, drive and inspect it from one task.
public final class Simulation: @unchecked Sendable {
    public let clock = ManualClock()
    public let executor = SimulationExecutor()
    var links: [SimulatedLink] = []

    public init() {}

    /// Virtual time since the simulation began.
    public var now: Timestamp { Timestamp(clock.now.offset) }

    /// Starts `body` as a task on the simulation's executor; it (and its
    /// child tasks) run only inside `run`.
    @discardableResult
    public func spawn<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
        Task(executorPreference: executor) { try await body() }
    }

    /// Runs until virtual time `end`; the clock is at `end` afterwards.
    public func run(until end: Timestamp) {
        advance(until: end, stopWhenIdle: false, while: { true })
    }

    /// Runs for `duration` of virtual time.
    public func run(for duration: Duration) {
        run(until: now + duration)
    }

    /// Runs until nothing is left to do (no task can run, no sleeper, no
    /// traffic), or until `limit` has passed.
    public func runUntilIdle(limit: Duration = .seconds(3600)) {
        advance(until: now + limit, stopWhenIdle: true, while: { true })
    }

    /// Runs while `condition` holds (checked whenever tasks have settled),
    /// for at most `limit`. Returns whether the condition became false.
    @discardableResult
    public func run(while condition: () -> Bool, limit: Duration = .seconds(3600)) -> Bool {
        advance(until: now + limit, stopWhenIdle: true, while: condition)
        return !condition()
    }

    /// When the next thing is due (a sleeper, a link's traffic or timeout),
    /// if anything is.
    public var nextActivity: Timestamp? {
        var next = clock.nextDeadline.map { Timestamp($0.offset) }
        for link in links {
            if let time = link.nextActivity(), next == nil || time < next! { next = time }
        }
        return next
    }

    func advance(until end: Timestamp, stopWhenIdle: Bool, while condition: () -> Bool) {
        while true {
            executor.runUntilIdle()
            guard condition() else { return }
            guard let time = nextActivity, time <= end else {
                if !stopWhenIdle && now < end { clock.advance(to: ManualClock.Instant(offset: end.sinceOrigin)) }
                executor.runUntilIdle()
                return
            }
            if time > now { clock.advance(to: ManualClock.Instant(offset: time.sinceOrigin)) }
            // Sleepers woke (jobs queued); links act at this instant.
            for link in links { link.act(at: time) }
        }
    }
}
