import Synchronization

/// An executor that runs jobs only when asked, one at a time, in the order
/// they were enqueued, on the thread that asks. Tasks that prefer it (and
/// the default actors they call) therefore run one step at a time, in a
/// fixed order; once `runUntilIdle` returns, every such task is waiting for
/// something outside: the clock, a link, another thread. That is what lets
/// `Simulation` advance virtual time only when everything has settled.
public final class SimulationExecutor: TaskExecutor, SerialExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])

    public init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether a job is waiting to run.
    public var hasWork: Bool { jobs.withLock { !$0.isEmpty } }

    /// Runs jobs, including those they enqueue, until none is left; returns
    /// how many ran.
    @discardableResult
    public func runUntilIdle() -> Int {
        var count = 0
        while true {
            // Jobs enqueued while a batch runs go after it: first in, first run.
            let batch = jobs.withLock { jobs in
                defer { jobs.removeAll(keepingCapacity: true) }
                return jobs
            }
            if batch.isEmpty { return count }
            for job in batch {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
            count += batch.count
        }
    }
}
