// The firmware test image: every conformance vector and whole sessions
// through the real Consumer and Provider engines, on the emulated device.
// Prints one line per check over semihosting and exits with status 0 only if
// every check passed and the consumer session kept within its heap budget.
import ANCS

@_cdecl("firmware_main")
public func firmwareMain() {
    print("swift-ancs firmware test")
    var log = Log()
    // The instruction counter against a loop of known length (2 instructions
    // per iteration); the call around it adds a few dozen.
    let counted = Int(truncatingIfNeeded: fwCountLoop(100_000))
    log.check(counted >= 200_000 - 40 && counted <= 200_000 + 120, "instruction counter: a 200 000-instruction loop counts \(counted)")
    log.figure("counter_loop_200000", counted)
    let start = fwInstructions()

    let ns = runNotificationSourceVectors(&log)
    let cp = runControlPointVectors(&log)
    var dataSource = DataSourceFigures()
    let ds = runDataSourceVectors(&log, &dataSource)
    log.check(ns == vectorCounts.notificationSource && cp == vectorCounts.controlPoint && ds == vectorCounts.dataSource,
              "every conformance case ran: \(ns) Notification Source, \(cp) Control Point, \(ds) Data Source")
    runErrorAnswers(&log)
    let media = runMediaVectors(&log)
    log.check(media == mediaVectorCount, "every AMS and CTS case ran: \(media) of \(mediaVectorCount)")
    runMediaSession(&log)
    let session = runConsumerSession(&log)
    let loopback = runLoopbackSession(&log)
    let worst = runWorstCaseSession(&log)
    let workload = runWorkload(&log)
    let total = Int(truncatingIfNeeded: fwInstructions() &- start)

    let budget = fwSessionHeapBudget()
    print("Consumer session: heap peak \(session.heapPeak) B (\(session.heapRequestedPeak) B asked for, \(session.allocations) allocations), stack peak \(session.stackPeak) B, \(session.instructions) instructions")
    if session.heapPeak > budget {
        print("  OVER BUDGET: heap peak \(session.heapPeak) B exceeds the budget of \(budget) B by \(session.heapPeak - budget) B")
    }
    log.check(session.heapPeak > 0 && session.heapPeak <= budget, "consumer session heap peak \(session.heapPeak) B within the budget of \(budget) B")
    print("Loopback session (Consumer and Provider): heap peak \(loopback.heapPeak) B, stack peak \(loopback.stackPeak) B, \(loopback.instructions) instructions")
    print("Worst case (microcontroller preset): heap peak \(worst.heapPeak) B (\(worst.heapRequestedPeak) B asked for, \(worst.allocations) allocations), stack peak \(worst.stackPeak) B, bound \(worstCaseHeapBound) B")
    print("heap: \(fwHeapSize()) B, \(fwHeapAllocations()) allocations in all; stack: \(fwStackSize()) B")

    log.figure("session_heap_peak", session.heapPeak)
    log.figure("session_heap_requested_peak", session.heapRequestedPeak)
    log.figure("session_stack_peak", session.stackPeak)
    log.figure("session_instructions", session.instructions)
    log.figure("session_allocations", session.allocations)
    log.figure("worstcase_heap_peak", worst.heapPeak)
    log.figure("worstcase_heap_requested_peak", worst.heapRequestedPeak)
    log.figure("worstcase_stack_peak", worst.stackPeak)
    log.figure("worstcase_heap_bound", worstCaseHeapBound)
    log.figure("loopback_heap_peak", loopback.heapPeak)
    log.figure("loopback_stack_peak", loopback.stackPeak)
    log.figure("loopback_instructions", loopback.instructions)
    log.figure("ds_1_fragment", dataSource.oneFragment)
    log.figure("ds_mtu23_fragments", dataSource.mtu23)
    log.figure("ds_1_byte_fragments", dataSource.oneByte)
    for figures in workload {
        log.figure("workload_reassembler_mtu\(figures.mtu)", figures.reassemblerPerResponse)
        log.figure("workload_consumer_mtu\(figures.mtu)", figures.consumerPerResponse)
    }
    log.figure("workload_responses", Int(fwWorkloadResponses()))
    log.figure("test_instructions", total)
    print("checks: \(log.checks), failures: \(log.failures)")
    print(log.failures == 0 ? "PASS" : "FAIL")
    fwExit(log.failures == 0 ? 0 : 1)
}
