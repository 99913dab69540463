#if os(Linux)
import ANCSDBus
import Foundation

/// A private `dbus-daemon --session` for one test, stopped when dropped.
final class PrivateBus: @unchecked Sendable {
    let address: String
    private let process: Process

    init() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        // The daemon prints its address once it listens.
        var line = Data()
        let handle = output.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty else { throw DBusError(name: "test", message: "dbus-daemon printed no address") }
    }

    func connect() throws -> DBusConnection { try DBusConnection(.address(address)) }

    deinit {
        // SIGKILL: a child of the test runner inherits its blocked signals, SIGTERM included.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

#endif
