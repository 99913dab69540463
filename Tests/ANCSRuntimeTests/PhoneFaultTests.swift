import ANCS
import ANCSRuntime
import ANCSSimulation
import Testing

/// The faults of real iPhones that the simulated phone (`ProviderServer` on
/// a `SimulatedLink`) reproduces, seen from a `ConsumerClient`: what reaches
/// the accessory and what its requests get. Each on a fast link and on a
/// slow one (1 s connection interval). The consumer's liveness checks are
/// off here (`SimulationRig`): these tests show the faults themselves;
/// LivenessRuntimeTests shows the consumer recovering from each.
@Suite struct PhoneFaultTests {
    static let intervals: [Duration] = [.milliseconds(30), .milliseconds(1000)]

    static func error(_ result: Result<NotificationAttributesResponse, ConsumerError>?) -> ConsumerError? {
        if case .failure(let error)? = result { error } else { nil }
    }

    static func note(_ title: String) -> ProviderNotification {
        ProviderNotification(appIdentifier: "com.apple.MobileSMS", title: title)
    }

    @Test("sharing off: subscriptions taken, requests refused with 0x03, nothing announced; on again, everything announced",
          arguments: intervals)
    func sharing(interval: Duration) async throws {
        let rig = SimulationRig(interval: interval)
        let provider = rig.provider
        rig.simulation.spawn { await provider.setSharing(false) }
        let held = try rig.add(Self.note("Held"))
        rig.connect()
        #expect(await rig.consumer.isInSession, "the subscriptions are taken")
        #expect(await rig.notifications().isEmpty, "nothing announced while not shared")
        #expect(Self.error(rig.fetch(held)) == .att(.writeNotPermitted))
        rig.simulation.spawn { await provider.setSharing(true) }
        rig.simulation.runUntilIdle()
        #expect(await rig.notifications()[held]?.isPreExisting == true)
        #expect(try rig.fetch(held)?.get()[.title]?.string == "Held")
    }

    @Test("Notification Source quiet: nothing announced, the Control Point answers for what was never announced",
          arguments: intervals)
    func quietNotificationSource(interval: Duration) async throws {
        let rig = SimulationRig(interval: interval)
        rig.connect()
        let provider = rig.provider
        rig.simulation.spawn { await provider.setNotificationSourceQuiet(true) }
        let unheard = try rig.add(Self.note("Unheard"))
        #expect(await rig.notifications()[unheard] == nil)
        #expect(try rig.fetch(unheard)?.get()[.title]?.string == "Unheard")
        rig.simulation.spawn { await provider.setNotificationSourceQuiet(false) }
        let heard = try rig.add(Self.note("Heard"))
        #expect(await rig.notifications()[heard] != nil)
    }

    @Test("subscriptions forgotten in silence, or ANCS restarted without Service Changed: the consumer is not told and hears nothing more",
          arguments: intervals)
    func silentlyForgotten(interval: Duration) async throws {
        for silentRestart in [false, true] {
            let rig = SimulationRig(interval: interval)
            rig.connect()
            let before = try rig.add(Self.note("Before"))
            if silentRestart {
                rig.link.unpublishANCS(serviceChanged: false)
                rig.link.publishANCS(serviceChanged: false)
            } else {
                let provider = rig.provider
                rig.simulation.spawn { await provider.forgetSubscriptions() }
            }
            rig.simulation.runUntilIdle()
            let lost = try rig.add(Self.note("Lost"))
            #expect(await rig.consumer.isInSession, "not told (restart: \(silentRestart))")
            #expect(!rig.consumerEvents.contains { if case .sessionEnded = $0 { true } else { false } })
            #expect(await rig.notifications()[lost] == nil)
            #expect(await rig.notifications()[before] != nil)
            // Data Source is not subscribed on the phone any more.
            #expect(Self.error(rig.fetch(before)) == .att(.cccdImproperlyConfigured), "restart: \(silentRestart)")
        }
    }
}
