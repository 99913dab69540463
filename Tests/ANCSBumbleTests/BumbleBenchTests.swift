import ANCS
@testable import ANCSBumble
import ANCSRuntime
import ANCSTestSupport
import Foundation
import Testing

/// `ancs provide`, `ancs listen --stack bumble` and scripted Bumble peers as
/// separate processes on one virtual link, as on a test bench.
struct Bench {
    let link: VirtualLink
    let ancs: String
    let python: String

    init() async throws {
        link = try await VirtualLink()
        ancs = try #require(ANCSExecutable.url).path
        python = try #require(BumbleTestEnvironment.python)
    }

    /// `ancs <arguments>`, stdout and stderr collected.
    func run(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(ancs, arguments, environment: ["ANCS_BUMBLE_PYTHON": python], captureErrors: true)
    }

    /// The scripted pairing peer (Interop/pairing_peer.py) on the second controller.
    func peer(_ arguments: [String]) throws -> ChildProcess {
        let script = PackagePaths.path("Tests/ANCSBumbleTests/Interop/pairing_peer.py")
        return try ChildProcess(python, ["-u", "-B", script, "--transport", link.transports.1] + arguments)
    }

    func stop() { link.stop() }

    /// The JSON objects a process printed, one a line.
    static func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// The number in `disconnected after S s`, or nil when the peer said something else.
    static func secondsToDisconnection(_ text: String) -> Double? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("disconnected after ") }) else { return nil }
        return Double(line.split(separator: " ")[2])
    }
}

@Suite("Bumble test bench: ancs provide and listen as processes",
       .enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing),
       .enabled(if: ANCSExecutable.url != nil, "\(ANCSExecutable.missing)"),
       .serialized, .timeLimit(.minutes(3)))
struct BumbleBenchTests {
    /// A port of the pair drawn is taken (another test's link, another
    /// program): the link starts on another pair. The host says why it could
    /// not on stdout, where the retry once failed to look (CI saw "address
    /// already in use" fail a run).
    @Test func aTakenPortIsSkipped() async throws {
        let taken = try ListeningSocket()
        let link = try await VirtualLink(first: (taken.port, taken.port + 1))
        defer { link.stop() }
        #expect(!link.transports.0.hasSuffix(":\(taken.port)"))
    }

    /// The virtual link serves one pair after another, however the last one
    /// ended: an accessory that closed, one killed, a phone killed.
    @Test func theLinkServesSessionAfterSession() async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        func phone() async throws -> (BumbleServerTransport, Task<Void, any Error>) {
            let server = try await BumbleServerTransport.start(BumbleHostOptions(transport: link.transports.0), environment: environment)
            let provider = ProviderServer(transport: server)
            try await prepareDemo(provider)
            return (server, Task { try await provider.run() })
        }
        func accessory(_ round: String) async throws -> BumbleClientTransport {
            let client = try await BumbleClientTransport.start(
                BumbleHostOptions(transport: link.transports.1, mtu: 23, scanTimeout: 15), environment: environment)
            let log = EventLog<GATTClientEvent>()
            Task { do { for try await event in client.events { log.append(event) } } catch {} }
            let info = try await log.wait(timeout: .seconds(25), "\(round): the accessory's link-up") { events in
                events.compactMap { if case .linkUp(let info) = $0 { info } else { nil } }.first
            }
            #expect(info.isEncrypted, "\(round)")
            return client
        }
        let (first, firstRun) = try await phone()
        let closed = try await accessory("first session")
        closed.close()
        let killed = try await accessory("after an accessory closed")
        kill(killed.hostProcessIdentifier, SIGKILL)
        let third = try await accessory("after an accessory was killed")
        kill(first.hostProcessIdentifier, SIGKILL)
        _ = try? await withTimeout(.seconds(10), "the killed phone's run") { try await firstRun.value }
        third.close()
        let (second, secondRun) = try await phone()
        let last = try await accessory("after the phone was killed")
        last.close()
        second.close()
        _ = try? await withTimeout(.seconds(10), "the second phone's run") { try await secondRun.value }
    }

    /// A connection that fails ends `ancs listen` with an `error:` line and a
    /// non-zero status; while it scans and connects it says so on stderr.
    @Test func listenFailsWithAnErrorLine() async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let phone = try bench.peer(["--role", "phone", "--refuse", "all", "--hold", "10"])
        defer { phone.stop() }
        let listen = try bench.run(["listen", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "40"])
        let status = await listen.waitForExit(timeout: .seconds(50))
        let errors = listen.errorText
        #expect(status != nil && status != 0, "status \(String(describing: status)); stderr:\n\(errors)")
        #expect(errors.contains("bumble: scanning for an advertiser soliciting ANCS"), "\(errors)")
        #expect(errors.contains("bumble: connecting to F3:F3:F3:F3:F3:F3"), "\(errors)")
        let errorLines = errors.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(errorLines.count == 1, "\(errors)")
        #expect(errorLines.first?.hasPrefix("error: listen: connection failed: pairing with F3:F3:F3:F3:F3:F3 failed") == true, "\(errors)")
        #expect(listen.text.isEmpty, "stdout: \(listen.text)")
    }

    /// An accessory that rejects pairing: the provider reports the failure
    /// and ends the link at once instead of leaving it up.
    @Test func aFailedPairingEndsTheLink() async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "40"])
        defer { provide.stop() }
        #expect(await provide.waitFor("\"event\":\"ready\"", timeout: .seconds(30)), "\(provide.errorText)")
        let accessory = try bench.peer(["--role", "accessory", "--refuse", "all", "--hold", "5"])
        _ = await accessory.waitForExit(timeout: .seconds(40))
        #expect(accessory.text.contains("pairing-failed"), "\(accessory.text)")
        let seconds = Bench.secondsToDisconnection(accessory.text)
        #expect(seconds != nil && seconds! < 1.0, "the link must end at once: \(accessory.text)")
        #expect(await provide.waitFor("\"event\":\"pairingFailed\"", timeout: .seconds(5)), "\(provide.text)")
        #expect(Bench.objects(provide.text).contains { $0["event"] as? String == "pairingFailed" && ($0["reason"] as? String)?.hasPrefix("0x") == true })
    }

    /// Pairing as an iPhone: numeric comparison with MITM protection by
    /// default, so an accessory whose agent refuses Just Works still pairs,
    /// both sides showing the same code; `--pairing just-works` pairs Just Works.
    @Test(arguments: [
        (pairing: nil as String?, refuse: "just-works", expected: "paired numeric"),
        (pairing: "just-works", refuse: "none", expected: "paired just-works"),
        (pairing: "just-works", refuse: "just-works", expected: "pairing-failed"),
    ])
    func pairsLikeAnIPhone(pairing: String?, refuse: String, expected: String) async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        var arguments = ["provide", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "40"]
        if let pairing { arguments += ["--pairing", pairing] }
        let provide = try bench.run(arguments)
        defer { provide.stop() }
        #expect(await provide.waitFor("\"event\":\"ready\"", timeout: .seconds(30)), "\(provide.errorText)")
        let accessory = try bench.peer(["--role", "accessory", "--refuse", refuse, "--hold", "1"])
        _ = await accessory.waitForExit(timeout: .seconds(40))
        #expect(accessory.text.contains(expected), "\(accessory.text)")
        if expected == "paired numeric" {
            let shown = accessory.text.split(separator: "\n").first { $0.hasPrefix("pairing-code ") }.map { String($0.dropFirst(13)) }
            #expect(await provide.waitFor("\"event\":\"paired\"", timeout: .seconds(5)))
            let events = Bench.objects(provide.text)
            let printed = events.first { $0["event"] as? String == "pairingCode" }?["code"] as? String
            #expect(shown != nil && shown?.count == 6 && printed == shown, "accessory \(String(describing: shown)), provider \(String(describing: printed))")
            #expect(events.contains { $0["event"] as? String == "paired" && $0["method"] as? String == "numericComparison" })
        }
        if expected == "paired just-works" {
            #expect(await provide.waitFor("\"method\":\"justWorks\"", timeout: .seconds(5)), "\(provide.text)")
        }
    }

    /// `--ask-pairing`: the provider asks whether the codes match and pairs
    /// only when told yes.
    @Test(arguments: [("yes", "paired numeric"), ("no", "pairing-failed")])
    func askPairingWaitsForTheAnswer(answer: String, expected: String) async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "40", "--ask-pairing"])
        defer { provide.stop() }
        #expect(await provide.waitFor("\"event\":\"ready\"", timeout: .seconds(30)), "\(provide.errorText)")
        let accessory = try bench.peer(["--role", "accessory", "--refuse", "none", "--hold", "1"])
        #expect(await provide.waitFor("\"ask\":true", timeout: .seconds(30)), "\(provide.text)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(!accessory.text.contains("paired"), "nothing is decided before the answer: \(accessory.text)")
        provide.send(answer)
        _ = await accessory.waitForExit(timeout: .seconds(40))
        #expect(accessory.text.contains(expected), "\(accessory.text)")
        let asked = Bench.objects(provide.text).first { $0["event"] as? String == "pairingCode" }?["code"] as? String
        let shown = accessory.text.split(separator: "\n").first { $0.hasPrefix("pairing-code ") }.map { String($0.dropFirst(13)) }
        #expect(asked != nil && asked == shown, "provider \(String(describing: asked)), accessory \(String(describing: shown))")
    }

    /// `ancs provide --json` shows what it sends: each notification's title
    /// and message as the scenario adds it and as its attributes go out.
    @Test func provideJSONShowsTitlesAndMessages() async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "40"])
        defer { provide.stop() }
        #expect(await provide.waitFor("\"event\":\"ready\"", timeout: .seconds(30)), "\(provide.errorText)")
        let listen = try bench.run(["listen", "--stack", "bumble:\(bench.link.transports.1)", "--json", "--duration", "30"])
        defer { listen.stop() }
        #expect(await provide.waitFor("\"title\":\"Alice\"", timeout: .seconds(40)), "\(provide.text)")
        let events = Bench.objects(provide.text)
        let waiting = events.filter { $0["event"] as? String == "notification" && $0["change"] as? String == "waiting" }
        #expect(waiting.compactMap { $0["title"] as? String }.sorted() == ["Pick up bike", "Team stand-up"], "\(provide.text)")
        #expect(waiting.contains { $0["message"] as? String == "Repair shop closes at 18:00" }, "\(provide.text)")
        #expect(events.contains { $0["event"] as? String == "notificationAttributesSent" && $0["title"] as? String == "Team stand-up" },
                "\(provide.text)")
        #expect(events.contains { $0["event"] as? String == "notification" && $0["change"] as? String == "added" && $0["title"] as? String == "Alice" },
                "\(provide.text)")
    }

    /// A `--snoop` capture can be decoded while the provider still runs.
    @Test func aCaptureDecodesWhileTheProviderRuns() async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-np-\(UUID().uuidString).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--json", "--duration", "60", "--snoop", capture])
        defer { provide.stop() }
        #expect(await provide.waitFor("\"event\":\"ready\"", timeout: .seconds(30)), "\(provide.errorText)")
        let listen = try bench.run(["listen", "--stack", "bumble:\(bench.link.transports.1)", "--json", "--duration", "50"])
        defer { listen.stop() }
        #expect(await listen.waitFor("Pick up bike", timeout: .seconds(40)), "\(listen.errorText)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(provide.process.isRunning)
        let decoded = try ANCSExecutable.run(["decode", "--btsnoop", capture])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout.contains("encrypted"), "\(decoded.stdout)")
        #expect(decoded.stdout.contains("Notification Source: Added"), "\(decoded.stdout)")
        #expect(decoded.stdout.contains("Pick up bike"), "\(decoded.stdout)")
    }

    /// `--duration` ending while the provider scans (`--central`, no
    /// accessory) with `--snoop`: a clean exit, no error from the capture.
    @Test func durationEndsCleanlyWhileScanning() async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-central-\(UUID().uuidString).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--central", "--duration", "2", "--snoop", capture])
        let status = await provide.waitForExit(timeout: .seconds(40))
        #expect(status == 0, "\(provide.errorText)")
        #expect(!provide.errorText.contains("Error"), "\(provide.errorText)")
        #expect(!provide.errorText.contains("Traceback"), "\(provide.errorText)")
        let decoded = try ANCSExecutable.run(["decode", "--btsnoop", capture])
        #expect(decoded.status == 0, "\(decoded.stderr)")
    }

    /// SIGTERM (as systemd or a test bench stops it) and SIGINT end the
    /// provider as --duration does: the stack closed, status 0.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalEndsProvideCleanly(_ signal: Int32) async throws {
        let bench = try await Bench()
        defer { bench.stop() }
        let provide = try bench.run(["provide", "--stack", "bumble:\(bench.link.transports.0)", "--central"])
        #expect(await provide.waitFor("provide: ready", timeout: .seconds(40)), "\(provide.errorText)")
        kill(provide.process.processIdentifier, signal)
        let status = await provide.waitForExit(timeout: .seconds(20))
        #expect(status == 0, "\(provide.errorText)")
        #expect(provide.process.terminationReason == .exit, "killed by signal \(provide.process.terminationStatus)")
        #expect(!provide.errorText.contains("Traceback"), "\(provide.errorText)")
    }

    /// As central the provider asks for the ATT MTU after connecting, as an
    /// iPhone does, even when the accessory asks for none; `--mtu 23` keeps 23.
    @Test(arguments: [(nil as Int?, 517), (185, 185), (23, 23)])
    func theCentralExchangesTheMTU(providerMTU: Int?, expected: Int) async throws {
        let link = try await VirtualLink()
        defer { link.stop() }
        let environment = try BumbleTestEnvironment.environment()
        let server = try await BumbleServerTransport.start(
            BumbleHostOptions(transport: link.transports.0, mtu: providerMTU, central: true), environment: environment)
        let provider = ProviderServer(transport: server)
        let providerRun = Task { try await provider.run() }
        let client = try await BumbleClientTransport.start(
            BumbleHostOptions(transport: link.transports.1, mtu: 23, peripheral: true), environment: environment)
        let log = EventLog<GATTClientEvent>()
        let reader = Task { for try await event in client.events { log.append(event) } }
        let first = try await log.wait(timeout: .seconds(30), "link-up") { events in
            events.compactMap { if case .linkUp(let info) = $0 { info } else { nil } }.first
        }
        try await Task.sleep(for: .seconds(1))
        let mtus = [first.mtu] + log.all.compactMap { if case .mtuChanged(let mtu) = $0 { mtu } else { nil } }
        #expect(mtus.last == expected, "\(mtus)")
        client.close()
        server.close()
        _ = try? await withTimeout(.seconds(10), "client events") { try await reader.value }
        _ = try? await withTimeout(.seconds(10), "provider run") { try await providerRun.value }
    }
}

@Suite("Bumble host files and environment")
struct BumbleHostFilesTests {
    /// The host runs without leaving Python bytecode beside it, in the
    /// sources or in the built resources, and none is shipped.
    @Test(.enabled(if: BumbleTestEnvironment.isAvailable, BumbleTestEnvironment.missing))
    func noBytecodeBesideTheHost() async throws {
        let environment = try BumbleTestEnvironment.environment()
        await #expect(throws: TransportError.self) {
            _ = try await BumbleServerTransport.start(BumbleHostOptions(transport: "nonsense:1", startTimeout: .seconds(20)), environment: environment)
        }
        let sources = PackagePaths.path("Sources/ANCSBumble/Host")
        let resources = URL(fileURLWithPath: environment.script).deletingLastPathComponent().path
        for directory in [sources, resources] {
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(!names.contains { $0.contains("__pycache__") || $0.hasSuffix(".pyc") }, "\(directory): \(names)")
        }
    }

    /// The tests find the environment `ancs setup bumble` makes.
    @Test func testsFindTheSetupEnvironment() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-home-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let setUp = BumbleEnvironment.defaultVirtualEnvironment(environment: ["HOME": home.path])
        #expect(setUp.hasPrefix(home.path))
        #expect(BumbleTestEnvironment.locate(environment: ["HOME": home.path]) != setUp + "/bin/python")
        try FileManager.default.createDirectory(atPath: setUp + "/bin", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: setUp + "/bin/python", contents: Data("#!/bin/sh\n".utf8),
                                               attributes: [.posixPermissions: 0o755]))
        #expect(FileManager.default.createFile(atPath: BumbleEnvironment.marker(setUp), contents: Data()))
        #expect(BumbleTestEnvironment.locate(environment: ["HOME": home.path]) == setUp + "/bin/python")
        #expect(BumbleTestEnvironment.locate(environment: ["HOME": home.path, "ANCS_BUMBLE_PYTHON": "/opt/python"]) == "/opt/python")
    }
}

/// A TCP socket listening on 127.0.0.1 on a port the system chose.
final class ListeningSocket {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw TransportError(.unavailable, "cannot listen on 127.0.0.1") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
