// Timestamp: whole nanoseconds in 64 bits, saturating at the ends.
import Testing
@testable import ANCS

@Suite("Timestamp")
struct TimestampTests {
    @Test("a Duration and milliseconds give the same moment, and it gives the Duration back")
    func roundTrip() {
        #expect(Timestamp(milliseconds: 1500) == Timestamp(.milliseconds(1500)))
        #expect(Timestamp(.milliseconds(1500)).sinceOrigin == .milliseconds(1500))
        #expect(Timestamp(.seconds(-2)).sinceOrigin == .seconds(-2))
        #expect(Timestamp(.seconds(3)) - Timestamp(.seconds(1)) == .seconds(2))
        #expect(Timestamp(.seconds(1)) + .milliseconds(250) == Timestamp(milliseconds: 1250))
        var moment = Timestamp.zero
        moment.sinceOrigin = .microseconds(7)
        #expect(moment == Timestamp(.nanoseconds(7000)))
    }

    @Test("less than a nanosecond is dropped, toward zero")
    func subNanosecond() {
        #expect(Timestamp(Duration(secondsComponent: 1, attosecondsComponent: 1_999_999_999)) == Timestamp(.nanoseconds(1_000_000_001)))
        #expect(Timestamp(.zero - Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000)) == Timestamp(.nanoseconds(-1)))
    }

    @Test("beyond 292 years a moment, and a sum, saturate instead of trapping")
    func saturation() {
        let latest = Timestamp(.seconds(Int64.max))
        #expect(latest == Timestamp(milliseconds: .max))
        #expect(latest > Timestamp(.seconds(290 * 365 * 86_400)))
        #expect(latest + .seconds(1) == latest)
        let earliest = Timestamp(.seconds(Int64.min))
        #expect(earliest == Timestamp(milliseconds: .min))
        #expect(earliest + .seconds(-1) == earliest)
        #expect(earliest < Timestamp.zero && Timestamp.zero < latest)
    }

    @Test("a consumer whose request timeout is beyond 292 years waits without trapping, until the latest moment")
    func hugeTimeout() {
        var consumer = Consumer(configuration: ConsumerConfiguration(requestTimeout: .seconds(Int64.max)).withoutLiveness)
        _ = consumer.linkUp(mtu: 23, at: .zero)
        _ = consumer.subscriptionCompleted(.dataSource, .success, at: .zero)
        _ = consumer.subscriptionCompleted(.notificationSource, .success, at: .zero)
        var actions: [ConsumerAction] = []
        let id = consumer.fetchAppAttributes("com.example.app", at: Timestamp(.seconds(5)), into: &actions)
        #expect(actions.contains { if case .writeControlPoint = $0 { true } else { false } })
        #expect(consumer.nextDeadline == Timestamp(milliseconds: .max))
        #expect(consumer.tick(at: Timestamp(.seconds(290 * 365 * 86_400))).isEmpty)
        #expect(consumer.tick(at: Timestamp(milliseconds: .max)).contains(.emit(.completed(id, .failure(.timedOut)))))
    }
}
