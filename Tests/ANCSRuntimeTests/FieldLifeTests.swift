import ANCS
import ANCSDemo
import Testing

/// A month of field life (`ancs bench --field-days`): `ConsumerClient`
/// against the simulated iPhone with every fault the simulated phone can
/// produce injected at random. What the person gets must hold: at least
/// 99.9 % of what the phone posted while sharing reaches the accessory, and
/// no notification waits longer than one probe interval plus a
/// subscription's round trip.
@Suite struct FieldLifeTests {
    @Test("30 simulated days, faults at random (seeded): ≥ 99.9 % of the notifications posted while sharing reach the accessory, none waits longer than a probe interval and a minute",
          arguments: [UInt64(1), 2])
    func month(seed: UInt64) {
        let report = FieldLife(days: 30, seed: seed).run()
        for fault in FieldLife.Fault.allCases {
            #expect(report.faults[fault, default: 0] > 0, "\(fault) injected")
        }
        #expect(report.posted > 3000)
        #expect(report.reachedShare >= 0.999, "\(report.reached) of \(report.posted)")
        #expect(report.longestWait <= ConsumerConfiguration.default.probeInterval + .seconds(60), "\(report.longestWait)")
        #expect(report.resubscriptions > 0 && report.probes > 0)
        // Each forgotten bond told (once, until the phone answers again).
        #expect(report.bondsLost > 0 && report.bondsLost <= report.faults[.bondForgotten, default: 0])
        #expect(report.probeBytesOnAir > 0)
    }
}
