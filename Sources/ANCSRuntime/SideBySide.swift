import ANCS

/// How `ConsumerClient` and `MediaClient` run: the transport's event loop
/// and the operation worker side by side, until either ends (the event
/// stream finished or failed, or the worker's queue was finished after a
/// stop); the other is then cancelled. Returns what ended the event loop,
/// if it failed.
func runSideBySide(events: @escaping @Sendable () async throws -> Void,
                   worker: @escaping @Sendable () async -> Void) async -> (any Error)? {
    await withTaskGroup(of: (any Error)?.self) { group in
        group.addTask {
            do {
                try await events()
                return nil
            } catch {
                return error
            }
        }
        group.addTask {
            await worker()
            return nil
        }
        let failure = await group.next() ?? nil
        group.cancelAll()
        return failure
    }
}

/// What a client keeps while its event loop holds a link-down until the
/// operation on the air has been given its result (`ConsumerClient`,
/// `MediaClient`): the loop's waiters, and a transport failure that came
/// meanwhile (the link's end caused it: given after the link-down).
struct LinkDownSettling<Ended> {
    /// The longest wait, for a transport that breaks its contract (at a
    /// link's end every operation has returned or returns at once).
    static var limit: Duration { .seconds(2) }

    var waiters: [CheckedContinuation<Void, Never>] = []
    var endedWithTheLink: Ended?

    var isWaiting: Bool { !waiters.isEmpty }

    mutating func release() {
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    /// Calls `release` after `limit` on the client's clock, unless cancelled first.
    static func bound(time: TimeSource, executor: (any TaskExecutor)?,
                      _ release: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task(executorPreference: executor) {
            do { try await time.sleep(until: time.now() + limit) } catch { return }
            await release()
        }
    }
}
