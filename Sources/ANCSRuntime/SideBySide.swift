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
