import ANCS
import ANCSRuntime
import ANCSSimulation
import Testing

/// Every transport in the project passes the same contract.
@Suite("Transport contract", .timeLimit(.minutes(1)))
struct TransportContractTests {
    @Test("the loopback link")
    func loopback() async {
        let link = LoopbackLink()
        let pair = TransportContract.Pair(client: link.client, server: link.server,
                                          connect: { link.connect(mtu: 185) }, disconnect: { link.drop() })
        let failures = await TransportContract.check(pair, clock: ContinuousClock(), timeout: .seconds(5))
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test("the simulated link, on the virtual clock", arguments: [23, 185, 517])
    func simulated(mtu: Int) {
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: mtu))
        let pair = TransportContract.Pair(client: link.client, server: server,
                                          connect: { link.connect() }, disconnect: { link.disconnect() })
        let result = Box<[String]>()
        simulation.spawn { result.value = await TransportContract.check(pair, clock: simulation.clock) }
        simulation.runUntilIdle()
        #expect(result.value == [], "\(String(describing: result.value))")
    }

    @Test("the contract catches a transport that loses a notification")
    func catchesLoss() {
        let simulation = Simulation()
        let server = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: server, configuration: .init(mtu: 23))
        var count = 0
        link.rewriteNotification = { _, bytes in
            count += 1
            return count == 3 ? [] : [bytes]
        }
        let pair = TransportContract.Pair(client: link.client, server: server,
                                          connect: { link.connect() }, disconnect: { link.disconnect() })
        let result = Box<[String]>()
        simulation.spawn { result.value = await TransportContract.check(pair, clock: simulation.clock, timeout: .seconds(2)) }
        simulation.runUntilIdle()
        #expect(result.value?.isEmpty == false)
    }
}
