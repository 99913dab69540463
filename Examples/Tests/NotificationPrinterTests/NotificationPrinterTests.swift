import ANCS
import ANCSRuntime
import ANCSSimulation
import NotificationPrinter
import Synchronization
import Testing

/// The accessory's logic against a simulated iPhone: a `ProviderServer` (the
/// phone) and a `ConsumerClient` (the accessory) on a `SimulatedLink`, run
/// on the simulation's virtual clock, so the test takes milliseconds and
/// does the same every time.
@Suite("NotificationPrinter against a simulated iPhone")
struct NotificationPrinterTests {
    @Test("a notification is printed once ready (attributes and app name fetched), and its removal")
    func readyAndRemoved() async throws {
        let simulation = Simulation()
        let phoneSide = SimulatedServer()
        let link = SimulatedLink(in: simulation, to: phoneSide)
        let phone = ProviderServer(transport: phoneSide)
        let accessory = ConsumerClient(transport: link.client, configuration: .displaying(.standard),
                                       clock: simulation.clock, executor: simulation.executor)
        let seen = Seen()
        simulation.spawn { try await phone.run() }
        simulation.spawn { try await accessory.run() }
        simulation.spawn {
            for await event in accessory.events {
                seen.state.withLock { seen in
                    if case .ready(let shown) = event { seen.ready.append(shown) }
                    if let line = NotificationPrinter.line(for: event) { seen.lines.append(line) }
                }
            }
        }

        // The phone knows an app and has one notification when the accessory connects.
        let added = simulation.spawn {
            await phone.registerApp(identifier: "com.apple.MobileSMS", displayName: "Messages")
            return try await phone.add(ProviderNotification(appIdentifier: "com.apple.MobileSMS", categoryID: .social,
                                                            title: "Alice", message: "On my way"))
        }
        simulation.runUntilIdle()
        link.connect()
        simulation.runUntilIdle()

        let ready = seen.state.withLock { $0.ready }
        #expect(ready.count == 1)
        #expect(ready.first?.appName == "Messages")
        #expect(ready.first?.title == "Alice")
        #expect(ready.first?.notification.isPreExisting == true)
        #expect(seen.state.withLock { $0.lines } == ["[Messages] Alice — On my way"])

        // The phone removes it: the accessory prints that too.
        let uid = try await added.value
        simulation.spawn { try await phone.remove(uid) }
        simulation.runUntilIdle()
        #expect(seen.state.withLock { $0.lines } == ["[Messages] Alice — On my way", "removed \(uid)"])
    }
}

/// What the accessory saw, written on the simulation's thread, read by the test.
final class Seen: Sendable {
    let state = Mutex<(ready: [DisplayedNotification], lines: [String])>(([], []))
}
