// Examples are what people copy: without BlueZ they fail with one error line
// and a non-zero status, not a trap and a backtrace.

#if os(Linux)
import Foundation
import Testing

enum ExampleExecutable {
    /// The built example `name`, next to the test bundle or in the package's debug build.
    static func url(_ name: String) -> URL? {
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name),
            packageRoot.appendingPathComponent(".build/debug/\(name)"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}

@Suite("Examples without a system D-Bus")
struct ExampleTests {
    @Test("PrintNotifications with no system bus: one error line, status 1")
    func printNotificationsWithoutBus() throws {
        let url = try #require(ExampleExecutable.url("PrintNotifications"), "build the example first: swift build --build-tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("print-notifications-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("out"), errURL = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)

        let process = Process()
        process.executableURL = url
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + directory.appendingPathComponent("no-such-socket").path
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try out.close()
        try err.close()

        let stderr = String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        let stdout = String(decoding: try Data(contentsOf: outURL), as: UTF8.self)
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus); stderr: \(stderr)")
        #expect(process.terminationStatus == 1, "status \(process.terminationStatus); stderr: \(stderr)")
        #expect(stderr.hasPrefix("error: ") && stderr.hasSuffix("\n"), "stderr: \(stderr.debugDescription)")
        #expect(stderr.split(separator: "\n").count == 1, "more than one line: \(stderr.debugDescription)")
        #expect(stderr.contains("system D-Bus"), "the line says what is missing: \(stderr)")
        #expect(!stderr.contains("Fatal error"))
        #expect(stdout.isEmpty, "stdout: \(stdout)")
    }
}

#endif
