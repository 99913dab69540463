import ArgumentParser
import Foundation
#if os(Linux)
import ANCSBlueZ
#endif

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check this machine's BlueZ for an ANCS accessory: version, main.conf, adapter, LE, power, bonds; with fixes."
    )

    @Option(help: "Adapter to check (hci0); default: every adapter.") var adapter: String?
    @Option(help: "BlueZ's configuration file.") var mainConf: String = "/etc/bluetooth/main.conf"

    func run() async throws {
        #if !os(Linux)
        throw CommandFailure("doctor: checks BlueZ, which runs on Linux only")
        #else
        var findings: [BlueZDoctor.Finding] = [BlueZDoctor.versionFinding(Self.bluetoothdVersion())]
        if let text = try? String(contentsOfFile: mainConf, encoding: .utf8) {
            findings += BlueZDoctor.mainConf(text)
        } else {
            findings.append(.init(level: .warning, text: "\(mainConf) not readable: BlueZ's defaults apply (ControllerMode dual, SecureConnections on)"))
        }
        findings += await BlueZDoctor.live(adapter: adapter)
        for finding in findings {
            let mark = finding.level == .ok ? "ok     " : finding.level == .warning ? "warning" : "PROBLEM"
            printLine("\(mark)  \(finding.text)")
            if let fix = finding.fix { printLine("         fix: \(fix)") }
        }
        if findings.contains(where: { $0.level == .problem }) {
            throw CommandFailure("doctor: \(findings.filter { $0.level == .problem }.count) problem(s) found")
        }
        #endif
    }

    static func bluetoothdVersion() -> String? {
        for path in ["/usr/libexec/bluetooth/bluetoothd", "/usr/lib/bluetooth/bluetoothd", "/usr/sbin/bluetoothd"]
        where FileManager.default.isExecutableFile(atPath: path) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["--version"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { continue }
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        return nil
    }
}
