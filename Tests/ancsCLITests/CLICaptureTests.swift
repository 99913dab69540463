// `ancs decode --btsnoop` on the capture formats docs/DECODE.md lists.

import ANCSTestSupport
import Foundation
import Testing

@Suite("ancs decode --btsnoop: btmon's monitor format")
struct CLICaptureTests {
    static func capture(_ name: String) -> String {
        PackagePaths.path("Tests/ANCSCaptureTests/Fixtures/\(name)")
    }

    @Test("a btmon capture (datalink 2001) decodes like the same traffic in H4, with its second controller apart")
    func btmonCapture() throws {
        let monitor = try ANCSExecutable.run(["decode", "--btsnoop", Self.capture("listen-nc-monitor.btsnoop")])
        let h4 = try ANCSExecutable.run(["decode", "--btsnoop", Self.capture("listen-nc.btsnoop")])
        #expect(monitor.status == 0, "stderr: \(monitor.stderr)")
        #expect(monitor.stderr.isEmpty)
        let lines = monitor.stdout.split(separator: "\n")
        let hci1 = lines.filter { $0.contains("[4097]") }
        #expect(lines.filter { !$0.contains("[4097]") } == h4.stdout.split(separator: "\n"))
        #expect(hci1.count == 4 && hci1.first?.hasSuffix("connected to F1:F1:F1:F1:F1:F1 as central") == true, "\(hci1)")
        #expect(lines.contains { $0.contains("Notification Source: Added") })
        #expect(lines.contains { $0.contains("Team stand-up") })

        let json = try ANCSExecutable.run(["decode", "--btsnoop", Self.capture("listen-nc-monitor.btsnoop"), "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.split(separator: "\n").count == lines.count)
    }
}
