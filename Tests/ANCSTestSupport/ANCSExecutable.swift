import Foundation

/// A class defined in this module, to find the test bundle's location.
private final class BundleMarker {}

/// The built `ancs` executable: `ANCS_TEST_EXECUTABLE` names one to test,
/// else the one next to the test bundle in the build products directory.
public enum ANCSExecutable {
    public static let url: URL? = locate()

    /// Why tests that run `ancs` are skipped when it is not found.
    public static let missing = "no `ancs` executable found near the test bundle; build with `swift build --build-tests`"

    static func isExecutable(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isExecutableFile(atPath: url.path)
    }

    /// Directories that may hold the build products, the test bundle's own first.
    public static var candidateDirectories: [URL] {
        var directories: [URL] = []
        let bundle = Bundle.main.bundleURL
        directories.append(bundle)
        directories.append(bundle.deletingLastPathComponent())
        if let executable = Bundle.main.executableURL {
            directories.append(executable.deletingLastPathComponent())
        }
        if let argument = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: argument).deletingLastPathComponent())
        }
        // On macOS the class's bundle is the .xctest bundle inside the products directory.
        directories.append(Bundle(for: BundleMarker.self).bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        // A test bundle on macOS: …/debug/X.xctest/Contents/MacOS/X.
        directories = directories.flatMap { directory in
            var upward = [directory]
            var current = directory
            for _ in 0..<4 {
                current = current.deletingLastPathComponent()
                if current.lastPathComponent.hasSuffix(".xctest") { upward.append(current.deletingLastPathComponent()) }
            }
            return upward
        }
        return directories
    }

    static func locate() -> URL? {
        if let override = ProcessInfo.processInfo.environment["ANCS_TEST_EXECUTABLE"], !override.isEmpty {
            let url = URL(fileURLWithPath: override)
            return isExecutable(url) ? url : nil
        }
        for directory in candidateDirectories {
            let candidate = directory.appendingPathComponent("ancs")
            if isExecutable(candidate) { return candidate }
        }
        // The default build directory of the package, as a last resort.
        for path in [".build/debug/ancs", ".build/release/ancs"] {
            let candidate = PackagePaths.root.appendingPathComponent(path)
            if isExecutable(candidate) { return candidate }
        }
        return nil
    }

    /// Where a child's stdout or stderr goes.
    public enum Sink: Sendable {
        /// A file, read back after the run.
        case capture
        /// `/dev/full`: every write fails with ENOSPC.
        case full
        /// A pipe whose read end is closed before the child starts: every write fails with EPIPE.
        case closedPipe
    }

    public struct Output: Sendable {
        public var status: Int32
        /// True when the child exited (rather than being killed by a signal).
        public var exited: Bool
        public var stdout: String
        public var stderr: String
    }

    /// The most a run may take before it counts as hung.
    public static let timeout: Duration = .seconds(120)

    /// Runs `ancs` with `arguments` to its end. Output goes through files, so
    /// no pipe can fill and block; a run longer than `timeout` is killed and
    /// reported as an error.
    public static func run(
        _ arguments: [String], stdin: String? = nil, stdout: Sink = .capture, stderr: Sink = .capture,
        environment: [String: String] = [:]
    ) throws -> Output {
        guard let url else { throw TestSupportError(missing + " (looked in \(candidateDirectories.map(\.path)))") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var keepAlive: [FileHandle] = []
        defer { for handle in keepAlive { try? handle.close() } }
        func handle(_ sink: Sink, _ name: String) throws -> (FileHandle, URL?) {
            switch sink {
            case .capture:
                let url = directory.appendingPathComponent(name)
                _ = FileManager.default.createFile(atPath: url.path, contents: nil)
                let handle = try FileHandle(forWritingTo: url)
                keepAlive.append(handle)
                return (handle, url)
            case .full:
                guard let handle = FileHandle(forWritingAtPath: "/dev/full") else { throw TestSupportError("cannot open /dev/full") }
                keepAlive.append(handle)
                return (handle, nil)
            case .closedPipe:
                let pipe = Pipe()
                try pipe.fileHandleForReading.close()
                keepAlive.append(pipe.fileHandleForWriting)
                return (pipe.fileHandleForWriting, nil)
            }
        }
        let (out, outURL) = try handle(stdout, "stdout")
        let (err, errURL) = try handle(stderr, "stderr")

        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let stdin {
            let inURL = directory.appendingPathComponent("stdin")
            try Data(stdin.utf8).write(to: inURL)
            let input = try FileHandle(forReadingFrom: inURL)
            keepAlive.append(input)
            process.standardInput = input
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        try waitForExit(process, "ancs \(arguments.joined(separator: " "))")
        func text(_ url: URL?) throws -> String {
            guard let url else { return "" }
            return String(decoding: try Data(contentsOf: url), as: UTF8.self)
        }
        return Output(
            status: process.terminationStatus, exited: process.terminationReason == .exit,
            stdout: try text(outURL), stderr: try text(errURL)
        )
    }

    /// Waits for `process` to end, at most `timeout`; a hung child is killed and reported.
    public static func waitForExit(_ process: Process, _ context: String) throws {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                throw TestSupportError("\(context): still running after \(timeout)")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}
