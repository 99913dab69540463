#if os(Linux)
import ANCSDBus
import Foundation
import Synchronization
import Testing

@Suite("D-Bus over libdbus, against a private dbus-daemon", .timeLimit(.minutes(2)))
struct DBusConnectionTests {
    /// The shapes BlueZ sends: GetManagedObjects' a{oa{sa{sv}}}, byte arrays
    /// (empty too), object paths, nested variants, structs, every integer.
    static let bluezShapes: [DBusValue] = [
        .dictionary(key: "o", value: "a{sa{sv}}", [
            DBusDictEntry(.objectPath("/org/bluez/hci0/dev_F0_F0_F0_F0_F0_F0/service0010/char0011"), .dictionary(key: "s", value: "a{sv}", [
                DBusDictEntry(.string("org.bluez.GattCharacteristic1"), .properties([
                    "UUID": .string("9fbf120d-6301-42d9-8c58-25e699a21dbd"),
                    "Service": .objectPath("/org/bluez/hci0/dev_F0_F0_F0_F0_F0_F0/service0010"),
                    "Value": .bytes([0, 1, 2, 0xFF]),
                    "Notifying": .boolean(true),
                    "Flags": .strings(["notify"]),
                    "MTU": .uint16(517),
                ])),
            ])),
            DBusDictEntry(.objectPath("/org/bluez/hci0"), .dictionary(key: "s", value: "a{sv}", [])),
        ]),
        .bytes([]),
        .bytes(Array(0...255).map(UInt8.init)),
        .variant(.variant(.int32(-7))),
        .structure([.byte(1), .int16(-2), .uint16(3), .uint32(4), .int64(-5), .uint64(6), .double(0.5), .signature("a{sv}")]),
        .array(element: "o", []),
        .array(element: "(su)", [.structure([.string("é"), .uint32(9)])]),
        .string(""),
    ]

    @Test("values BlueZ uses survive a round trip through a method call and its reply")
    func roundTrip() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect()
        let client = try bus.connect()
        server.export("/test/echo") { call in call.reply(call.arguments) }
        let reply = try await client.call(destination: server.uniqueName, path: "/test/echo", interface: "test.Echo",
                                          member: "Echo", Self.bluezShapes, timeout: .seconds(5))
        #expect(reply == Self.bluezShapes)
        let objects = try #require(reply.first?.managedObjects)
        let characteristic = try #require(objects["/org/bluez/hci0/dev_F0_F0_F0_F0_F0_F0/service0010/char0011"]?["org.bluez.GattCharacteristic1"])
        #expect(characteristic["MTU"]?.integer == 517)
        #expect(characteristic["Value"]?.bytes == [0, 1, 2, 0xFF])
        #expect(characteristic["Flags"]?.strings == ["notify"])
        #expect(objects["/org/bluez/hci0"] == [:])
        server.close()
        client.close()
    }

    @Test("an error reply arrives with its name and message")
    func errorReply() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect()
        let client = try bus.connect()
        server.export("/test/cp") { call in call.fail("org.bluez.Error.Failed", "Operation failed with ATT error: 0xa2") }
        await #expect(throws: DBusError(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0xa2")) {
            _ = try await client.call(destination: server.uniqueName, path: "/test/cp", interface: "org.bluez.GattCharacteristic1",
                                      member: "WriteValue", [.bytes([0]), .properties(["type": .string("request")])])
        }
        // No object there: the connection answers for it.
        let unknown = await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: server.uniqueName, path: "/nothing", interface: "x.Y", member: "Z")
        }
        #expect(unknown?.name == "org.freedesktop.DBus.Error.UnknownObject")
        server.close()
        client.close()
    }

    @Test("a call nobody answers times out; a cancelled call ends at once")
    func timeoutAndCancel() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect()
        let client = try bus.connect()
        server.export("/test/silent") { _ in }  // never replies
        // The call's own timeout ends it with NoReply (a hang would hit the suite's time limit).
        let error = await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: server.uniqueName, path: "/test/silent", interface: "t.T", member: "Wait", timeout: .milliseconds(200))
        }
        #expect(error?.name == "org.freedesktop.DBus.Error.NoReply")

        let task = Task {
            try await client.call(destination: server.uniqueName, path: "/test/silent", interface: "t.T", member: "Wait", timeout: .seconds(60))
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        await #expect(throws: DBusError.cancelled) { _ = try await task.value }
        server.close()
        client.close()
    }

    @Test("a reply given later, from another thread, reaches the caller")
    func deferredReply() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect()
        let client = try bus.connect()
        server.export("/test/agent") { call in
            // Answered from a dispatch queue, not from a task: the suite runs
            // beside tests that block the cooperative pool's threads while a
            // subprocess runs (ANCSExecutable.run), and a task answering here
            // once waited past the call's 25 s timeout on a loaded machine.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
                call.reply([.uint32(123456)])
                call.reply([.uint32(0)])  // a second answer is ignored
            }
        }
        let reply = try await client.call(destination: server.uniqueName, path: "/test/agent", interface: "org.bluez.Agent1",
                                          member: "RequestPasskey", [.objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55")])
        #expect(reply == [.uint32(123456)])
        server.close()
        client.close()
    }

    @Test("signals reach the subscription whose rules match, in order")
    func signals() async throws {
        let bus = try PrivateBus()
        let emitter = try bus.connect()
        let listener = try bus.connect()
        let stream = try await listener.signals([
            DBusMatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", pathNamespace: "/org/bluez"),
            DBusMatchRule(interface: "org.freedesktop.DBus.ObjectManager", path: "/"),
        ])
        let changed: [DBusValue] = [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes([1, 2, 3])]), .strings([])]
        emitter.emit(path: "/elsewhere/x", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", changed)
        for i in 0..<20 {
            emitter.emit(path: "/org/bluez/hci0/char\(i)", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", changed)
        }
        emitter.emit(path: "/org/bluezzz", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", changed)
        emitter.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                     [.objectPath("/org/bluez/hci0/char3"), .strings(["org.bluez.GattCharacteristic1"])])
        var received: [DBusSignal] = []
        for await signal in stream {
            received.append(signal)
            if received.count == 21 { break }
        }
        #expect(received.prefix(20).map(\.path) == (0..<20).map { "/org/bluez/hci0/char\($0)" })
        #expect(received[0].arguments == changed)
        #expect(received[0].sender == emitter.uniqueName)
        #expect(received[20].member == "InterfacesRemoved")
        emitter.close()
        listener.close()
    }

    @Test("closing fails pending calls and finishes subscriptions; bad arguments fail before sending")
    func closing() async throws {
        let bus = try PrivateBus()
        let server = try bus.connect()
        let client = try bus.connect()
        server.export("/test/silent") { _ in }
        let bad = await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: server.uniqueName, path: "/test/silent", interface: "t.T", member: "M", [.objectPath("not a path")])
        }
        #expect(bad?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        let stream = try await client.signals([DBusMatchRule(interface: "t.T")])
        let pending = Task {
            try await client.call(destination: server.uniqueName, path: "/test/silent", interface: "t.T", member: "Wait", timeout: .seconds(60))
        }
        try await Task.sleep(for: .milliseconds(50))
        client.close()
        await #expect(throws: DBusError.disconnected) { _ = try await pending.value }
        for await _ in stream {}
        #expect(!client.isOpen)
        await #expect(throws: DBusError.disconnected) {
            _ = try await client.call(destination: server.uniqueName, path: "/test/silent", interface: "t.T", member: "Wait")
        }
        server.close()
    }
}

#endif
