import ANCSRuntime
import Foundation

/// Where the Python that runs the Bumble host comes from, and the host
/// program itself.
///
/// - `ANCS_BUMBLE_PYTHON`: a Python interpreter that has `bumble` installed;
///   used as is.
/// - Otherwise a virtual environment with `bumble==0.0.236`: the directory
///   `ANCS_BUMBLE_VENV`, or by default the user cache
///   (`$XDG_CACHE_HOME/swift-ancs/bumble-0.0.236`, `~/.cache/...`;
///   `~/Library/Caches/...` on macOS). `ancs setup bumble` creates it; the
///   first use creates it too.
/// - `ANCS_BUMBLE_HOST`: the host program to run instead of the one shipped
///   with the package.
public struct BumbleEnvironment: Sendable {
    /// The Bumble release the host program is written and tested against.
    public static let bumbleVersion = "0.0.236"
    /// The line protocol version the host speaks (see PROTOCOL.md beside it).
    public static let protocolVersion = 2

    public var python: String
    public var script: String
    /// The virtual environment, when it is the one managed here.
    public var virtualEnvironment: String?

    public init(python: String, script: String, virtualEnvironment: String? = nil) {
        self.python = python
        self.script = script
        self.virtualEnvironment = virtualEnvironment
    }

    /// The host program shipped with the package (or `ANCS_BUMBLE_HOST`).
    public static func hostScript(environment: [String: String] = ProcessInfo.processInfo.environment) throws(TransportError) -> String {
        if let path = environment["ANCS_BUMBLE_HOST"], !path.isEmpty {
            guard FileManager.default.fileExists(atPath: path) else {
                throw TransportError(.configuration, "ANCS_BUMBLE_HOST: no file at \(path)")
            }
            return path
        }
        guard let script = Bundle.module.url(forResource: "ancs_bumble_host", withExtension: "py") else {
            throw TransportError(.unavailable, "the Bumble host program is missing from the package's resources")
        }
        return script.path
    }

    /// The default virtual environment directory.
    public static func defaultVirtualEnvironment(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment["ANCS_BUMBLE_VENV"], !path.isEmpty { return path }
        let home = environment["HOME"] ?? NSHomeDirectory()
        #if os(macOS)
        let cache = home + "/Library/Caches"
        #else
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.cache"
        #endif
        return cache + "/swift-ancs/bumble-\(bumbleVersion)"
    }

    static func venvPython(_ directory: String) -> String { directory + "/bin/python" }

    /// The environment to run the host with: `ANCS_BUMBLE_PYTHON`, or the
    /// virtual environment, created first when `createIfMissing` and it is not there.
    public static func resolve(createIfMissing: Bool = true,
                               environment: [String: String] = ProcessInfo.processInfo.environment,
                               progress: @Sendable (String) -> Void = { _ in }) async throws(TransportError) -> BumbleEnvironment {
        let script = try hostScript(environment: environment)
        if let python = environment["ANCS_BUMBLE_PYTHON"], !python.isEmpty {
            return BumbleEnvironment(python: python, script: script)
        }
        let directory = defaultVirtualEnvironment(environment: environment)
        let python = venvPython(directory)
        if !isInstalled(directory) {
            guard createIfMissing else {
                throw TransportError(.unavailable, "no Bumble environment at \(directory): run `ancs setup bumble`")
            }
            try await setUp(directory, progress: progress)
        }
        return BumbleEnvironment(python: python, script: script, virtualEnvironment: directory)
    }

    /// A marker written once `pip install` succeeded.
    static func marker(_ directory: String) -> String { directory + "/.ancs-bumble-\(bumbleVersion)" }

    public static func isInstalled(_ directory: String) -> Bool {
        FileManager.default.fileExists(atPath: marker(directory)) && FileManager.default.isExecutableFile(atPath: venvPython(directory))
    }

    /// Creates the virtual environment with `python3 -m venv` and installs
    /// `bumble==0.0.236` in it (PyPI must be reachable). Each step is given
    /// at most 10 minutes.
    public static func setUp(_ directory: String, python3: String = "python3",
                             progress: @Sendable (String) -> Void = { _ in }) async throws(TransportError) {
        progress("creating a Python virtual environment at \(directory)")
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw TransportError(.permission, "cannot create \(parent): \(error.localizedDescription)")
        }
        try await run(["/usr/bin/env", python3, "-m", "venv", directory], what: "python3 -m venv (Debian: apt-get install python3-venv)")
        progress("installing bumble==\(bumbleVersion) from PyPI")
        try await run([venvPython(directory), "-m", "pip", "install", "--quiet", "bumble==\(bumbleVersion)"], what: "pip install bumble==\(bumbleVersion)")
        _ = FileManager.default.createFile(atPath: marker(directory), contents: Data("bumble \(bumbleVersion)\n".utf8))
    }

    private static func run(_ command: [String], what: String) async throws(TransportError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = FileHandle.standardError
        process.standardError = FileHandle.standardError
        do { try process.run() } catch { throw TransportError(.unavailable, "\(what): \(error.localizedDescription)") }
        let deadline = ContinuousClock.now + .seconds(600)
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                throw TransportError(.timedOut, "\(what): no result after 10 minutes")
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        guard process.terminationStatus == 0 else {
            throw TransportError(.unavailable, "\(what) failed with status \(process.terminationStatus)")
        }
    }
}
