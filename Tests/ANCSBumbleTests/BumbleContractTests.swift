import ANCS
import ANCSBumble
import ANCSRuntime
import ANCSSimulation
import Foundation
import Testing

/// The Bumble transports pass the contract every transport passes, over a
/// virtual link: one host process as the phone, another as the accessory.
@Suite("Bumble transport contract", .enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing),
       .timeLimit(.minutes(3)))
struct BumbleContractTests {
    @Test(arguments: [23, 185])
    func contract(mtu: Int) async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        // The phone advertises; the accessory scans, connects and pairs as it starts:
        // `connect` has nothing left to do, the link's events wait in the streams.
        let server = try await BumbleServerTransport.start(BumbleHostOptions(transport: link.transports.0), environment: environment)
        let client = try await BumbleClientTransport.start(BumbleHostOptions(transport: link.transports.1, mtu: mtu), environment: environment)
        defer {
            client.close()
            server.close()
        }
        let pair = TransportContract.Pair(client: client, server: server, connect: {}, disconnect: { client.disconnect() })
        let failures = await TransportContract.check(pair, clock: ContinuousClock(), timeout: .seconds(30))
        #expect(failures.isEmpty, "\(failures)")
    }
}
