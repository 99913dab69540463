import Synchronization

/// A clock that moves only when told to: `advance(by:)` wakes, in deadline
/// order, every sleeper whose deadline has been reached. Tests drive the
/// runtime's timers with it, so a ten-second timeout takes no wall time and
/// happens exactly when the test says.
///
/// Written here rather than taken from swift-clocks: its `TestClock` settles
/// woken tasks by yielding a fixed number of times, which is a guess about
/// the scheduler; this one gives tests an explicit sync point instead
/// (`waitForSleepers`).
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        /// Time since the clock was created.
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        public var description: String { "\(offset)" }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
        /// Tasks waiting in `waitForSleepers` for the count to reach a value.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func readyWatchers() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            watchers.removeAll { watcher in
                guard sleepers.count >= watcher.count else { return false }
                ready.append(watcher.continuation)
                return true
            }
            return ready
        }
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// Tasks currently sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline a task sleeps until, if any sleeps.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Suspends until `deadline` is reached by `advance`; returns at once if it
    /// already has. Throws `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case wait, wake, cancel }
                let (outcome, watchers) = state.withLock { state -> (Outcome, [CheckedContinuation<Void, Never>]) in
                    // Checked under the lock: a cancellation handler that ran
                    // earlier found nothing to remove.
                    if Task.isCancelled { return (.cancel, []) }
                    if deadline <= state.now { return (.wake, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (.wait, state.readyWatchers())
                }
                for watcher in watchers { watcher.resume() }
                switch outcome {
                case .wait: break
                case .wake: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline is now
    /// reached, earliest deadline first (ties in the order they slept).
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: max(duration, .zero))
            let now = state.now
            var due: [Sleeper] = []
            state.sleepers.removeAll { sleeper in
                guard sleeper.deadline <= now else { return false }
                due.append(sleeper)
                return true
            }
            return due
        }
        // A stable sort keeps sleep order among equal deadlines.
        for sleeper in due.enumerated().sorted(by: { ($0.element.deadline, $0.offset) < ($1.element.deadline, $1.offset) }) {
            sleeper.element.continuation.resume()
        }
    }

    /// Moves time forward to `instant` (never backwards).
    public func advance(to instant: Instant) {
        advance(by: now.duration(to: instant))
    }

    /// Returns once at least `count` tasks are sleeping on this clock: the
    /// point after which `advance` is sure to reach them.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
