#if os(Linux)
import ANCS
import ANCSBlueZ
import ANCSDBus
import ANCSRuntime
import Foundation
import Synchronization
import Testing

/// `--device` (Options.device) limits the accessory to one phone: bluetoothd's
/// pairing questions about any other device are rejected by the agent, and
/// any other device that connects is disconnected.
@Suite("--device: only the named phone pairs and connects")
struct DeviceRestrictionTests {
    static let named = "F0:F0:F0:F0:F0:F0"
    static let stranger = "11:22:33:44:55:66"

    final class Prompts: Sendable {
        let asked = Mutex<[String]>([])
        let statuses = Mutex<[String]>([])
    }

    func start(_ bus: PrivateBus, device: String?, _ prompts: Prompts) async throws -> BlueZConsumerTransport {
        try await BlueZConsumerTransport.start(
            options: .init(device: device, name: "test", watchdogInterval: .seconds(60)), bus: .address(bus.address),
            status: { status in prompts.statuses.withLock { $0.append(status.message) } },
            prompt: { request in prompts.asked.withLock { $0.append(request.device) }; return true })
    }

    /// The D-Bus error name a call to the agent ends with, nil when it succeeds.
    func agentAnswer(_ bluez: FakeBlueZ, _ member: String, _ device: String, _ more: [DBusValue] = []) async -> String? {
        do {
            try await bluez.callAgent(member, device: device, more)
            return nil
        } catch {
            return error.name
        }
    }

    @Test("pairing and service authorization: another device is rejected, the named one accepted")
    func pairing() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let prompts = Prompts()
        // In lower case, as a person may type it.
        let transport = try await start(bus, device: Self.named.lowercased(), prompts)
        let stranger = FakeBlueZ.devicePath(Self.stranger)
        bluez.addDevice(address: Self.stranger, connected: true)

        #expect(await agentAnswer(bluez, "RequestConfirmation", stranger, [.uint32(123456)]) == "org.bluez.Error.Rejected")
        #expect(await agentAnswer(bluez, "RequestAuthorization", stranger) == "org.bluez.Error.Rejected")
        #expect(await agentAnswer(bluez, "AuthorizeService", stranger, [.string(ANCSUUID.service.description.lowercased())]) == "org.bluez.Error.Rejected")
        // The person was never asked about the stranger, and was told why it was refused.
        #expect(prompts.asked.withLock { $0 }.isEmpty)
        #expect(prompts.statuses.withLock { $0 }.contains { $0.contains(Self.stranger) && $0.contains("refused") })

        #expect(await agentAnswer(bluez, "RequestConfirmation", FakeBlueZ.device, [.uint32(123456)]) == nil)
        #expect(await agentAnswer(bluez, "RequestAuthorization", FakeBlueZ.device) == nil)
        #expect(await agentAnswer(bluez, "AuthorizeService", FakeBlueZ.device, [.string(ANCSUUID.service.description.lowercased())]) == nil)
        #expect(prompts.asked.withLock { $0 } == [Self.named, Self.named])

        await transport.close()
        bluez.connection.close()
    }

    @Test("without --device every device may pair")
    func pairingUnrestricted() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let prompts = Prompts()
        let transport = try await start(bus, device: nil, prompts)
        let stranger = FakeBlueZ.devicePath(Self.stranger)
        bluez.addDevice(address: Self.stranger, connected: true)
        #expect(await agentAnswer(bluez, "RequestConfirmation", stranger, [.uint32(1)]) == nil)
        #expect(await agentAnswer(bluez, "AuthorizeService", stranger, [.string(ANCSUUID.service.description.lowercased())]) == nil)
        #expect(prompts.asked.withLock { $0 } == [Self.stranger])
        try await Task.sleep(for: .milliseconds(200))
        #expect(!bluez.state.withLock { $0.deviceCalls }.contains { $0.member == "Disconnect" })
        await transport.close()
        bluez.connection.close()
    }

    @Test("a connection from another device is disconnected; the named phone's link comes up")
    func connections() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let prompts = Prompts()
        let transport = try await start(bus, device: Self.named, prompts)
        var events = transport.events.makeAsyncIterator()
        let stranger = FakeBlueZ.devicePath(Self.stranger)

        bluez.addDevice(address: Self.stranger, connected: true)
        let deadline = ContinuousClock.now + .seconds(10)
        func disconnects(_ path: String) -> Int {
            bluez.state.withLock { $0.deviceCalls.filter { $0.path == path && $0.member == "Disconnect" }.count }
        }
        while disconnects(stranger) == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(disconnects(stranger) == 1)
        #expect(prompts.statuses.withLock { $0 }.contains { $0.contains(Self.stranger) && $0.contains("disconnecting") })

        // It goes, and comes back: disconnected again.
        bluez.setDevice(stranger, ["Connected": .boolean(false)])
        bluez.setDevice(stranger, ["Connected": .boolean(true)])
        while disconnects(stranger) < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(disconnects(stranger) == 2)

        // The named phone connects and its session starts; it is not disconnected.
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        let up = try await events.next()
        #expect(up == .linkUp(LinkInfo(mtu: 185, peer: Self.named, isEncrypted: true, isBonded: true)))
        #expect(disconnects(FakeBlueZ.device) == 0)

        await transport.close()
        bluez.connection.close()
    }
}

#endif
