#if os(Linux)
import ANCS
@testable import ANCSBlueZ
import ANCSRuntime
import Testing

// The BlueZ transport's AMS and CTS (BlueZMedia.swift) against the stand-in
// bluetoothd: found with ANCS's link, operations on their objects, a read's
// echo in the Value property not taken for a notification, AMS removed and
// republished under new objects, the link's end.
@Suite("BlueZ transport: AMS and CTS beside ANCS")
struct BlueZMediaTests {
    func start(_ bus: PrivateBus) async throws -> BlueZConsumerTransport {
        try await BlueZConsumerTransport.start(
            options: .init(name: "test", watchdogInterval: .seconds(60), linkEncrypted: { _, _ in true }),
            bus: .address(bus.address), status: { _ in }, prompt: { _ in true })
    }

    @Test("the services found with the link; notify, write and long read on their objects; a read's echo is no notification; AMS gone and republished; link down")
    func mediaOnTheLink() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let transport = try await start(bus)
        var media = transport.mediaEvents.makeAsyncIterator()
        var events = transport.events.makeAsyncIterator()
        bluez.addMedia()
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        if case .linkUp = try await events.next() {} else { Issue.record("no ANCS linkUp") }
        let info = LinkInfo(mtu: 185, peer: "F0:F0:F0:F0:F0:F0", isEncrypted: true, isBonded: true)
        #expect(try await media.next() == .linkUp(info, ams: true, cts: true))

        #expect(await transport.subscribe(.ams(.entityUpdate)) == .success)
        #expect(await transport.subscribe(.cts(.currentTime)) == .success)
        #expect(await transport.write(.entityUpdate, [2, 0, 1, 2, 3]) == .success)
        // An AMS error comes back with its code.
        bluez.state.withLock { $0.mediaWriteRefusal = 0xA1 }
        #expect(await transport.write(.remoteCommand, [99]) == .attError(ATTErrorCode(rawValue: 0xA1)))
        #expect(bluez.state.withLock { $0.mediaWrites.map(\.path) } == [FakeBlueZ.entityUpdate, FakeBlueZ.remoteCommand])
        #expect(bluez.state.withLock { $0.mediaWrites.map(\.bytes) } == [[2, 0, 1, 2, 3], [99]])

        // A read: bluetoothd announces the value it stored, then replies; the echo is not a notification.
        let saturday = CurrentTime(year: 2026, month: 11, day: 28, hour: 14, minute: 53, second: 7, dayOfWeek: 6).encode()
        bluez.state.withLock { $0.mediaValues[FakeBlueZ.currentTime] = saturday }
        #expect(await transport.read(.cts(.currentTime)) == .value(saturday))
        let title = Array("A title longer than one notification".utf8)
        bluez.state.withLock { $0.mediaValues[FakeBlueZ.entityAttribute] = title }
        #expect(await transport.read(.ams(.entityAttribute)) == .value(title))
        // The notifications that follow are delivered, in order, and only they.
        bluez.notify(FakeBlueZ.entityUpdate, [2, 2, 1] + Array("A title".utf8))
        var later = saturday
        later[6] = 8
        bluez.notify(FakeBlueZ.currentTime, later)
        bluez.notify(FakeBlueZ.currentTime, saturday)  // the same value as read, later: a notification
        #expect(try await media.next() == .notification(.ams(.entityUpdate), [2, 2, 1] + Array("A title".utf8)))
        #expect(try await media.next() == .notification(.cts(.currentTime), later))
        #expect(try await media.next() == .notification(.cts(.currentTime), saturday))

        // ANCS's values stay ANCS's.
        bluez.notify(FakeBlueZ.ds, [1, 2, 3])
        #expect(try await events.next() == .notification(.dataSource, [1, 2, 3]))

        // AMS goes (CTS stays), then comes back under new objects.
        bluez.removeAMS()
        #expect(try await media.next() == .servicesChanged(ams: false, cts: true))
        #expect(await transport.write(.remoteCommand, [0]) == .transportFailure)
        bluez.addMedia(ams: FakeBlueZ.device + "/service0050")
        #expect(try await media.next() == .servicesChanged(ams: true, cts: true))
        #expect(await transport.write(.remoteCommand, [0]) == .success)
        #expect(bluez.state.withLock { $0.mediaWrites.last?.path } == FakeBlueZ.device + "/service0050/char0031")
        // CTS republished where it was (bluetoothd names objects by handle): kept, nothing told.
        bluez.addMedia(ams: FakeBlueZ.device + "/service0050")
        bluez.notify(FakeBlueZ.currentTime, later)
        #expect(try await media.next() == .notification(.cts(.currentTime), later))

        bluez.setDevice(["Connected": .boolean(false), "ServicesResolved": .boolean(false)])
        #expect(try await events.next() == .linkDown)
        #expect(try await media.next() == .linkDown)
        #expect(await transport.read(.cts(.currentTime)) == .transportFailure)
        await transport.close()
        #expect(try await media.next() == nil)
        bluez.connection.close()
    }

    @Test("AMS republished under other objects, the new ones seen before the old ones go: told gone, then back")
    func amsMoved() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let transport = try await start(bus)
        var media = transport.mediaEvents.makeAsyncIterator()
        bluez.addMedia()
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        if case .linkUp(_, true, true) = try await media.next() {} else { Issue.record("no linkUp with both services") }
        // The new objects come before the old ones go: AMS is never missing, but it moved.
        bluez.addMedia(ams: FakeBlueZ.device + "/service0060")
        bluez.removeAMS()
        #expect(try await media.next() == .servicesChanged(ams: false, cts: true))
        #expect(try await media.next() == .servicesChanged(ams: true, cts: true))
        #expect(await transport.write(.remoteCommand, [0]) == .success)
        #expect(bluez.state.withLock { $0.mediaWrites.last?.path } == FakeBlueZ.device + "/service0060/char0031")
        await transport.close()
        bluez.connection.close()
    }

    @Test("a phone that pairs on this link: AMS and CTS are told only once it has paired (ANCS's link is up before)")
    func mediaWaitsForPairing() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let transport = try await start(bus)
        var media = transport.mediaEvents.makeAsyncIterator()
        var events = transport.events.makeAsyncIterator()
        bluez.addMedia()
        bluez.setDevice(["Paired": .boolean(false), "Bonded": .boolean(false)])
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        if case .linkUp(let info) = try await events.next() { #expect(!info.isEncrypted) } else { Issue.record("no ANCS linkUp") }
        #expect(await transport.subscribe(.cts(.currentTime)) == .transportFailure)
        #expect(bluez.state.withLock { $0.mediaCalls.isEmpty })
        bluez.setDevice(["Paired": .boolean(true), "Bonded": .boolean(true)])
        #expect(try await media.next() == .linkUp(LinkInfo(mtu: 185, peer: "F0:F0:F0:F0:F0:F0", isEncrypted: true, isBonded: true), ams: true, cts: true))
        #expect(await transport.subscribe(.cts(.currentTime)) == .success)
        await transport.close()
        bluez.connection.close()
    }

    @Test("a phone with no AMS and no CTS: the media link says so, and nothing is issued")
    func noMedia() async throws {
        let bus = try PrivateBus()
        let bluez = try await FakeBlueZ(bus)
        let transport = try await start(bus)
        var media = transport.mediaEvents.makeAsyncIterator()
        bluez.setDevice(["Connected": .boolean(true), "ServicesResolved": .boolean(true)])
        #expect(try await media.next() == .linkUp(LinkInfo(mtu: 185, peer: "F0:F0:F0:F0:F0:F0", isEncrypted: true, isBonded: true), ams: false, cts: false))
        #expect(await transport.subscribe(.ams(.remoteCommand)) == .transportFailure)
        #expect(await transport.read(.cts(.localTimeInformation)) == .transportFailure)
        #expect(bluez.state.withLock { $0.mediaCalls.isEmpty })
        await transport.close()
        bluez.connection.close()
    }
}
#endif
