#if os(Linux)
import ANCS
@testable import ANCSBlueZ
import ANCSRuntime
import Synchronization
import Testing

@Suite("BlueZ transport against a stand-in bluetoothd on a private bus")
struct BlueZTransportTests {
    final class Log: Sendable {
        let lines = Mutex<[BlueZStatus]>([])
        func add(_ status: BlueZStatus) { lines.withLock { $0.append(status) } }
        var kinds: [BlueZStatus.Kind] { lines.withLock { $0.map(\.kind) } }
    }

    func start(_ bus: PrivateBus, _ log: Log, linkEncrypted: Bool? = true, subscribeWait: Duration = .seconds(10),
               encryptionWait: Duration = .seconds(8), resolveWait: Duration = .seconds(30)) async throws -> BlueZConsumerTransport {
        try await BlueZConsumerTransport.start(
            options: .init(name: "test", watchdogInterval: .seconds(60), subscribeWait: subscribeWait, encryptionWait: encryptionWait,
                           resolveWait: resolveWait, linkEncrypted: { _, _ in linkEncrypted }),
            bus: .address(bus.address),
            status: { log.add($0) }, prompt: { _ in true })
    }

    /// The phone connects, its services resolved: the transport's link comes up.
    func connect(_ bluez: FakeBlueZ, _ events: inout AsyncThrowingStream<GATTClientEvent, any Error>.Iterator) async throws {
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        if case .linkUp = try await events.next() {} else { Issue.record("no linkUp") }
    }

    @Test("link up, a refused subscription answered with its ATT code, notifications in order, serialized writes, 0xA2, Service Changed, link down")
    func session() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log)
        var events = transport.events.makeAsyncIterator()
        #expect(bluez.state.withLock { $0.registered }.contains("RegisterAgent"))
        #expect(bluez.state.withLock { $0.registered }.contains("RegisterAdvertisement"))

        // A second consumer on the same adapter is refused, clearly.
        let refusal = await #expect(throws: TransportError.self) { _ = try await self.start(bus, Log()) }
        #expect(refusal?.kind == .unavailable)

        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        let up = try await events.next()
        #expect(up == .linkUp(LinkInfo(mtu: 185, peer: "F0:F0:F0:F0:F0:F0", isEncrypted: true, isBonded: true)))

        // Notification Source values before the engine subscribes it are held, then handed over.
        bluez.notify(FakeBlueZ.ns, [0, 0x10, 4, 1, 7, 0, 0, 0])
        #expect(await transport.subscribe(.dataSource) == .success)
        // A refusal comes back at once with its ATT code (the engine asks again later, and says why);
        // on an encrypted link the bond is kept.
        bluez.state.withLock { $0.startNotifyRefusals = 1 }
        #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
        #expect(await transport.subscribe(.notificationSource) == .success)
        #expect(bluez.state.withLock { $0.startNotifyCalls } == [FakeBlueZ.ds, FakeBlueZ.ns, FakeBlueZ.ns])
        #expect(!bluez.state.withLock { $0.registered }.contains("RemoveDevice"))
        #expect(!log.kinds.contains(.bondLost))
        #expect(try await events.next() == .notification(.notificationSource, [0, 0x10, 4, 1, 7, 0, 0, 0]))
        bluez.notify(FakeBlueZ.ds, [1, 2, 3])
        bluez.notify(FakeBlueZ.ns, [2, 0, 4, 0, 7, 0, 0, 0])
        #expect(try await events.next() == .notification(.dataSource, [1, 2, 3]))
        #expect(try await events.next() == .notification(.notificationSource, [2, 0, 4, 0, 7, 0, 0, 0]))

        // Data Source fragments once the link is up cost no rescan of the object tree.
        let rescans = await transport.rescans
        for index in 0..<100 { bluez.notify(FakeBlueZ.ds, [UInt8(index)]) }
        for index in 0..<100 { #expect(try await events.next() == .notification(.dataSource, [UInt8(index)])) }
        #expect(await transport.rescans == rescans)

        // Two writes at once reach bluetoothd one after the other; the ANCS code comes back typed.
        bluez.state.withLock { $0.writeReplies = [nil, ("org.bluez.Error.Failed", "Operation failed with ATT error: 0xa2")] }
        async let first = transport.writeControlPoint([0, 7, 0, 0, 0, 0])
        async let second = transport.writeControlPoint([0, 99, 0, 0, 0, 0])
        let results = await [first, second]
        #expect(results.contains(.success))
        #expect(results.contains(.attError(.invalidParameter)))
        #expect(bluez.state.withLock { $0.maximumWritesInFlight } == 1)

        bluez.removeANCS()
        #expect(try await events.next() == .serviceChanged(published: false))
        #expect(await transport.writeControlPoint([0]) == .transportFailure)
        bluez.addANCS()
        #expect(try await events.next() == .serviceChanged(published: true))
        #expect(await transport.subscribe(.notificationSource) == .success)

        bluez.setDevice(["Connected": .boolean(false), "ServicesResolved": .boolean(false)])
        #expect(try await events.next() == .linkDown)
        #expect(log.kinds.contains(.disconnected))
        // Reconnection without a restart.
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        if case .linkUp = try await events.next() {} else { Issue.record("no linkUp after reconnection") }

        await transport.close()
        #expect(try await events.next() == .linkDown)
        #expect(try await events.next() == nil)
        bluez.connection.close()
    }

    @Test("watchdog: a subscription that stopped notifying without telling is made again; --device ignores other phones")
    func watchdog() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let other = try await BlueZConsumerTransport.start(
            options: .init(device: "11:22:33:44:55:66", name: "test", watchdogInterval: .milliseconds(100)), bus: .address(bus.address),
            status: { log.add($0) }, prompt: { _ in true })
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        try await Task.sleep(for: .milliseconds(300))
        #expect(!log.kinds.contains(.connected))
        await other.close()

        let transport = try await BlueZConsumerTransport.start(
            options: .init(device: "f0:f0:f0:f0:f0:f0", name: "test", watchdogInterval: .milliseconds(100)), bus: .address(bus.address),
            status: { log.add($0) }, prompt: { _ in true })
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        var events = transport.events.makeAsyncIterator()
        if case .linkUp = try await events.next() {} else { Issue.record("no linkUp") }
        #expect(await transport.subscribe(.dataSource) == .success)
        #expect(await transport.subscribe(.notificationSource) == .success)
        bluez.connection.emit(path: FakeBlueZ.ns, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                              [.string("org.bluez.GattCharacteristic1"), .properties(["Notifying": .boolean(false)]), .strings([])])
        // Wait for Notification Source's new subscription (its status comes
        // after the stand-in counted the call), not any: Data Source's could be
        // made again too if a watchdog pass ran before its Notifying true came.
        func resubscribedNotificationSource() -> Bool {
            log.lines.withLock { lines in
                lines.contains { $0.kind == .resubscribed && $0.message.contains("\(ANCSCharacteristic.notificationSource)") }
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !resubscribedNotificationSource(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(resubscribedNotificationSource())
        #expect(bluez.state.withLock { $0.startNotifyCalls.filter { $0 == FakeBlueZ.ns }.count } >= 2)
        // What the phone sees: the CCCD written again (off, then on), not only a StartNotify answered at once.
        #expect(bluez.state.withLock { $0.cccdWrites[FakeBlueZ.ns] } == [true, false, true])
        await transport.close()
        bluez.connection.close()
    }

    @Test("the phone forgot the bond: refused 0x05 on an unencrypted link, the stale device is removed and the engine told")
    func bondLostUnencrypted() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log, linkEncrypted: false)
        var events = transport.events.makeAsyncIterator()
        try await connect(bluez, &events)
        bluez.state.withLock { $0.startNotifyRefusals = 2 }
        #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
        #expect(try await events.next() == .bondLost)
        #expect(bluez.state.withLock { $0.registered.filter { $0 == "RemoveDevice" }.count } == 1)
        #expect(log.kinds.contains(.bondLost))
        // The device went with its bond: the link is down.
        #expect(try await events.next() == .linkDown)
        await transport.close()
        bluez.connection.close()
    }

    @Test("a StartNotify bluetoothd leaves unanswered is a refusal (0x05); the next subscribe takes its late answer, no second call")
    func unansweredStartNotify() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log, subscribeWait: .milliseconds(300))
        var events = transport.events.makeAsyncIterator()
        try await connect(bluez, &events)
        bluez.state.withLock { $0.holdStartNotify = true }
        #expect(await transport.subscribe(.dataSource) == .attError(.insufficientAuthentication))
        #expect(await transport.subscribe(.dataSource) == .attError(.insufficientAuthentication))
        #expect(bluez.state.withLock { $0.startNotifyCalls } == [FakeBlueZ.ds])
        // Nothing withdrawn: a StopNotify would leave bluetoothd's registration without its owner.
        #expect(bluez.state.withLock { $0.cccdWrites[FakeBlueZ.ds] } == nil)
        #expect(!bluez.state.withLock { $0.registered }.contains("RemoveDevice"))
        bluez.answerHeldStartNotify()
        try await Task.sleep(for: .milliseconds(100))
        #expect(await transport.subscribe(.dataSource) == .success)
        #expect(bluez.state.withLock { $0.startNotifyCalls } == [FakeBlueZ.ds])
        // Undone when the engine unsubscribes, once answered.
        #expect(await transport.unsubscribe(.dataSource) == .success)
        #expect(bluez.state.withLock { $0.cccdWrites[FakeBlueZ.ds] } == [false])
        await transport.close()
        bluez.connection.close()
    }

    @Test("a bonded phone whose link stays unencrypted, its services unresolved, forgot the bond: the stale device is removed")
    func bondLostAtConnection() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log, linkEncrypted: false, encryptionWait: .milliseconds(200))
        var events = transport.events.makeAsyncIterator()
        bluez.setDevice(["Connected": .boolean(true)])
        #expect(try await events.next() == .bondLost)
        let deadline = ContinuousClock.now + .seconds(10)
        while !bluez.state.withLock({ $0.registered.contains("RemoveDevice") }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(bluez.state.withLock { $0.registered.filter { $0 == "RemoveDevice" }.count } == 1)
        #expect(log.lines.withLock { $0.contains { $0.kind == .bondLost && $0.message.contains("could not encrypt") } })
        await transport.close()
        bluez.connection.close()
    }

    @Test("a fast reconnection whose services bluetoothd never resolves (encrypted, no session possible) is disconnected after resolveWait, once, said in one line; a link that comes up is left alone")
    func servicesNeverResolved() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log, linkEncrypted: true, resolveWait: .milliseconds(300))
        var events = transport.events.makeAsyncIterator()
        bluez.setDevice(["Connected": .boolean(true)])
        func disconnects() -> Int { bluez.state.withLock { $0.deviceCalls.filter { $0.member == "Disconnect" }.count } }
        let deadline = ContinuousClock.now + .seconds(10)
        while disconnects() == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(disconnects() == 1)
        #expect(log.lines.withLock { $0.contains { $0.kind == .warning && $0.message.contains("services were not resolved") } })
        try await Task.sleep(for: .milliseconds(600))
        #expect(disconnects() == 1, "once per connection")
        // The phone connects again and its services resolve: the link comes up and stays.
        bluez.setDevice(["Connected": .boolean(false)])
        try await Task.sleep(for: .milliseconds(100))
        try await connect(bluez, &events)
        try await Task.sleep(for: .milliseconds(600))
        #expect(disconnects() == 1)
        await transport.close()
        bluez.connection.close()
    }

    @Test("refused 0x05 by a phone that is neither paired nor encrypted (the pairing bluetoothd asked for failed): the second such answer in a row disconnects it, once; on an encrypted link (notifications not allowed yet) the refusals are waited out")
    func refusedAfterFailedPairing() async throws {
        for encrypted in [false, true] {
            let bus = try PrivateBus()
            let bluez = try await FakeBlueZ(bus)
            let log = Log()
            let transport = try await start(bus, log, linkEncrypted: encrypted)
            var events = transport.events.makeAsyncIterator()
            bluez.setDevice(["Paired": .boolean(false), "Bonded": .boolean(false)])
            try await connect(bluez, &events)
            func disconnects() -> Int { bluez.state.withLock { $0.deviceCalls.filter { $0.member == "Disconnect" }.count } }
            bluez.state.withLock { $0.startNotifyRefusals = 3 }
            #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
            #expect(disconnects() == 0, "one refusal: the phone may still allow it")
            #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
            #expect(disconnects() == (encrypted ? 0 : 1), "encrypted: \(encrypted)")
            #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
            #expect(disconnects() == (encrypted ? 0 : 1), "once per link")
            #expect(log.lines.withLock { $0.contains { $0.message.contains("could not be paired") } } == !encrypted)
            #expect(!bluez.state.withLock { $0.registered }.contains("RemoveDevice"), "no bond to remove")
            await transport.close()
            bluez.connection.close()
        }
    }

    @Test("a refusal whose link security is unknown keeps the bond; a paired phone that asks to pair again lost its bond")
    func bondLostPairingAgain() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let log = Log()
        let transport = try await start(bus, log, linkEncrypted: nil)
        var events = transport.events.makeAsyncIterator()
        try await connect(bluez, &events)
        bluez.state.withLock { $0.startNotifyRefusals = 1 }
        #expect(await transport.subscribe(.notificationSource) == .attError(.insufficientAuthentication))
        #expect(!bluez.state.withLock { $0.registered }.contains("RemoveDevice"))
        // The phone (bonded, as bluetoothd says) pairs anew: accepted, and the engine is told.
        try await bluez.callAgent("RequestConfirmation", device: FakeBlueZ.device, [.uint32(123456)])
        #expect(try await events.next() == .bondLost)
        #expect(log.kinds.contains(.bondLost))
        // A service authorization is no pairing.
        try await bluez.callAgent("AuthorizeService", device: FakeBlueZ.device, [.string(ANCSUUID.service.description)])
        #expect(log.lines.withLock { $0.filter { $0.kind == .bondLost }.count } == 1)
        await transport.close()
        bluez.connection.close()
    }

    @Test("bluetoothd leaving the bus ends the event stream with an error")
    func bluetoothdStops() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let transport = try await start(bus, Log())
        bluez.connection.close()
        let error = await #expect(throws: TransportError.self) {
            for try await _ in transport.events {}
        }
        #expect(error?.kind == .stackEnded)
        await transport.close()
    }

    @Test("no bluetoothd: a clear error")
    func noBluetoothd() async throws {
        let bus = try PrivateBus()
        let error = await #expect(throws: TransportError.self) { _ = try await self.start(bus, Log()) }
        #expect(error?.message.contains("bluetoothd is not running") == true)
        #expect(error?.kind == .unavailable)
    }

    @Test("doctor: main.conf and version findings")
    func doctor() {
        let off = BlueZDoctor.mainConf("[General]\nControllerMode = bredr\nSecureConnections=off\n")
        #expect(off.map(\.level) == [.problem, .warning])
        #expect(off[0].fix?.contains("ControllerMode = dual") == true)
        #expect(BlueZDoctor.mainConf("[General]\n#ControllerMode = bredr\n").map(\.level) == [.ok, .ok])
        #expect(BlueZDoctor.versionFinding("5.66\n").level == .ok)
        #expect(BlueZDoctor.versionFinding("5.50").level == .warning)
        #expect(BlueZDoctor.versionFinding(nil).level == .problem)
    }
}

#endif
