import ANCSTestSupport
import Foundation
import Testing

/// The soak's resident memory, in a process of its own: `ancs bench
/// --memory-only` plays the demo through the real actors for 100 000
/// notifications and prints the resident set at 1 000, 10 000 and 100 000.
@Suite("Soak: memory stays flat")
struct CLISoakTests {
    @Test("100 000 notifications through the actors: resident memory grows less than 8 MiB after the first 10 000")
    func memoryIsFlat() throws {
        let run = try ANCSExecutable.run(["bench", "--memory-only", "--notifications", "100000"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        // Rows: "| 10003 | 38.2 |"
        var resident: [(notifications: Int, mib: Double)] = []
        for line in run.stdout.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.count == 2, let count = Int(cells[0]), let mib = Double(cells[1]) { resident.append((count, mib)) }
        }
        try #require(resident.count == 3, "\(run.stdout)")
        #expect(resident[2].notifications >= 100_000)
        let growth = resident[2].mib - resident[1].mib
        #expect(growth < 8, "resident memory grew \(growth) MiB from \(resident[1].notifications) to \(resident[2].notifications) notifications")
    }
}
