#if os(Linux)
import ANCS
import ANCSDBus
import ANCSDesktop
import Foundation
import Synchronization
import Testing

/// `--notify` against a real notification server: dunst on a private
/// session bus under Xvfb (skipped where they are not installed). dunst's
/// context menu runs a stand-in for dmenu that chooses the negative action.
@Suite("Desktop notifications through dunst")
struct DesktopNotificationsTests {
    static let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/dunst")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb")

    final class Processes: @unchecked Sendable {
        var list: [Process] = []
        func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            if let environment { process.environment = environment }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            list.append(process)
        }
        deinit {
            for process in list.reversed() {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    @Test("a notification appears with its actions; choosing one in dunst comes back as that ANCS action",
          .enabled(if: available))
    func actionThroughDunst() async throws {
        let processes = Processes()
        let display = ":\(Int.random(in: 200...900))"
        try processes.run("/usr/bin/Xvfb", [display, "-screen", "0", "640x480x16", "-nolisten", "tcp"])
        let socket = "/tmp/.X11-unix/X" + display.dropFirst()
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { try await Task.sleep(for: .milliseconds(50)) }
        let bus = try PrivateBus()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-dunst-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let picker = directory.appendingPathComponent("pick.sh").path
        try "#!/bin/sh\ngrep -m1 ',negative\\]'\n".write(toFile: picker, atomically: true, encoding: .utf8)
        chmod(picker, 0o755)
        let config = directory.appendingPathComponent("dunstrc").path
        try "[global]\n    dmenu = \(picker)\n".write(toFile: config, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = display
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        try processes.run("/usr/bin/dunst", ["-config", config], environment: environment)

        // Wait for dunst to own the name (without activating anything).
        let probe = try bus.connect()
        defer { probe.close() }
        var owned = false
        for _ in 0..<200 where !owned {
            owned = (try? await probe.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                           member: "NameHasOwner", [.string("org.freedesktop.Notifications")]))?.first?.bool == true
            if !owned { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(owned)

        let desktop = try await DesktopNotifications.start(bus: .address(bus.address))
        defer { desktop.close() }
        let actions = Mutex<[(NotificationUID, ActionID)]>([])
        desktop.onAction = { uid, action in actions.withLock { $0.append((uid, action)) } }
        let notification = ConsumerNotification(
            uid: NotificationUID(7), eventFlags: [.positiveAction, .negativeAction], categoryID: .social, categoryCount: 1, isPreExisting: false,
            attributes: [NotificationAttribute(.title, AttributeValue("Alice")), NotificationAttribute(.message, AttributeValue("Lunch?")),
                         NotificationAttribute(.negativeActionLabel, AttributeValue("Clear"))])
        desktop.show(notification, app: "Messages")
        // Once dunst shows it, open its context menu: the picker chooses "Clear".
        for _ in 0..<100 {
            let shown = try await probe.properties(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                   interface: "org.dunstproject.cmd0")["displayedLength"]?.integer ?? 0
            if shown > 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        _ = try await probe.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                 interface: "org.dunstproject.cmd0", member: "ContextMenuCall")
        for _ in 0..<200 where actions.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(50)) }
        let got = actions.withLock { $0 }
        #expect(got.count == 1)
        #expect(got.first?.0 == NotificationUID(7))
        #expect(got.first?.1 == .negative)
    }
}

#endif
