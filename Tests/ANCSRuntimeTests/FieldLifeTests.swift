import ANCS
import ANCSDemo
import Testing

/// A month of field life (`ancs bench --field-days`): `ConsumerClient`
/// showing notifications against the simulated iPhone, with every fault the
/// simulated phone can produce injected at random, notifications cleared on
/// the phone within minutes, and quiet nights. What the person gets must
/// hold (`FieldLife.bound`: probe interval + retry interval + 2 × request
/// timeout + 60 s).
@Suite struct FieldLifeTests {
    @Test("30 simulated days, faults at random (seeded), a quarter of the notifications cleared on the phone within minutes, quiet nights: every notification on the phone longer than the bound is shown, none waits past it, none is undelivered past it while the consumer says healthy, at least 99.9 % of all notifications shown, at most 2 resubscriptions per fault, at most one probe per probe interval in a healthy idle hour, each with its refresh",
          arguments: [UInt64(1), 2, 3])
    func month(seed: UInt64) {
        let report = FieldLife(days: 30, seed: seed).run()
        for fault in FieldLife.Fault.allCases {
            #expect(report.faults[fault, default: 0] > 0, "\(fault) injected")
        }
        #expect(report.posted > 2500 && report.clearedSoon > 500)
        #expect(report.lasting > 1500 && report.lastingDelivered == report.lasting, "\(report.lastingDelivered) of \(report.lasting)")
        // What is missed is cleared on the phone within minutes while a lost
        // subscription waits to be found (BENCHMARKS.md section 2 lists the share per seed).
        #expect(report.posted - report.delivered <= report.clearedSoon)
        #expect(report.deliveredShare >= 0.999, "\(report.delivered) of \(report.posted)")
        #expect(report.longestWait <= FieldLife.bound, "\(report.longestWait)")
        #expect(report.longestHealthyUndelivered <= FieldLife.bound, "\(report.longestHealthyUndelivered)")
        #expect(report.resubscriptions > 0 && report.resubscriptionsPerFault <= 2)
        // Each forgotten bond told (once, until the phone answers again).
        #expect(report.bondsLost > 0 && report.bondsLost <= report.faults[.bondForgotten, default: 0])
        let probesPerHour = Int(3600 / ConsumerConfiguration.default.probeInterval.components.seconds)
        #expect(report.idleHour.controlPointWrites <= probesPerHour && report.idleHour.controlPointWrites > 0)
        #expect(report.idleHour.cccdWrites == 2 * report.idleHour.controlPointWrites, "a refresh (off, then on) after each probe")
    }
}
