// ds-throughput: the standard Data Source workload through
// DataSourceReassembler at each MTU, every value read as bytes (with
// --strings, materialized as a String);
// throughput (MB/s of response bytes, median of 5 samples) next to the
// reference figures, and heap allocations per notification and per value.
//
//   swift run --package-path Benchmarks -c release ds-throughput [--samples N] [--passes N] [--mtu M] [--strings]
//   ds-throughput --mtu M --profile PASSES    the checksum pass and the passes, for valgrind --tool=callgrind
//
// Before timing, one pass is checked against the manifest's checksum; every
// timed pass is checked for the number of values and value bytes.

import ANCS
import DataSourceWorkload
import MallocCounter

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reference figures (BENCHMARKS.md, "Reference figures"): same workload, median of 5, one core.
let references: [(name: String, megabytesPerSecond: Double)] = [("Nordic C", 465), ("Bumble", 33)]
let aimRatio = 2.0

var samples = 5
var passesPerSample = 0  // 0: as many as fill about 0.2 s
var onlyMTU: Int?
var profilePasses = 0  // > 0: only run that many passes (for callgrind), no report
let strings = CommandLine.arguments.contains("--strings")  // read every value as a String, not as bytes
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--samples": samples = max(1, Int(arguments.popFirst() ?? "") ?? samples)
    case "--passes": passesPerSample = max(1, Int(arguments.popFirst() ?? "") ?? 1)
    case "--mtu": onlyMTU = Int(arguments.popFirst() ?? "")
    case "--profile": profilePasses = max(1, Int(arguments.popFirst() ?? "") ?? 1)
    case "--strings": break
    default:
        print("usage: ds-throughput [--samples N] [--passes N] [--mtu 23|185|517] [--profile PASSES] [--strings]")
        exit(2)
    }
}

func nanoseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
}

func format(_ value: Double, _ decimals: Int) -> String {
    var factor = 1.0
    for _ in 0..<decimals { factor *= 10 }
    let rounded = (value * factor).rounded() / factor
    var text = "\(rounded)"
    if decimals == 0, text.hasSuffix(".0") { text.removeLast(2) }
    return text
}

/// Nanoseconds for `passes` passes over the workload with one long-lived reassembler.
func timePasses(_ workload: DataSourceWorkload, _ passes: Int) -> Double {
    var reassembler = DataSourceReassembler()
    var tally = Tally(strings: strings)
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<passes {
        workload.run(&reassembler) { tally.add($0) }
    }
    let elapsed = clock.now - start
    tally.check(against: workload, passes: passes)
    return nanoseconds(elapsed)
}

struct Timing {
    var megabytesPerSecond: Double
    var nanosecondsPerResponse: Double
}

func measure(_ workload: DataSourceWorkload, samples: Int, passesPerSample: Int) -> Timing {
    _ = timePasses(workload, 3)  // warm up
    var passes = passesPerSample
    if passes == 0 {
        let once = timePasses(workload, 5) / 5
        passes = max(1, Int(200_000_000 / once))
    }
    var perPass: [Double] = []
    for _ in 0..<samples { perPass.append(timePasses(workload, passes) / Double(passes)) }
    perPass.sort()
    let median = perPass.count % 2 == 1 ? perPass[perPass.count / 2] : (perPass[perPass.count / 2 - 1] + perPass[perPass.count / 2]) / 2
    return Timing(megabytesPerSecond: Double(workload.responseBytes) / median * 1e3,
                  nanosecondsPerResponse: median / Double(workload.responseCount))
}

struct Allocations {
    var total = 0
    /// Notifications that completed no response.
    var plainFragments = 0
    /// The most allocations seen while feeding one such notification.
    var plainFragmentMax = 0
    /// Notifications whose allocations differ from two per response completed
    /// in them (one when its values are all empty).
    var unexplained = 0
}

/// Where each response ends: the allocations a notification may cause are,
/// per response it completes, its attribute array and the one buffer of all
/// its values (none when every value is empty).
func expectedAllocations(_ workload: DataSourceWorkload) -> [Int] {
    var expected = [Int](repeating: 0, count: workload.fragmentCount)
    var position = 0
    for number in 0..<workload.responseCount {
        let last = workload.responseEnds[number]
        let end = last == 0 ? 0 : workload.fragmentEnds[last - 1]
        position += 5
        var valueBytes = 0
        while position < end {
            let length = Int(workload.bytes[position + 1]) | Int(workload.bytes[position + 2]) << 8
            valueBytes += length
            position += 3 + length
        }
        if last > 0 { expected[last - 1] += valueBytes > 0 ? 2 : 1 }
    }
    return expected
}

func countAllocations(_ workload: DataSourceWorkload) -> Allocations? {
    guard malloc_counter_available() != 0 else { return nil }
    let expected = expectedAllocations(workload)
    var perFragment = [Int](repeating: 0, count: workload.fragmentCount)
    var reassembler = DataSourceReassembler()
    var tally = Tally(strings: strings)
    workload.run(&reassembler) { tally.add($0) }  // first pass: buffers reach their working size
    var before: UInt64 = 0
    let fragmentDone = { (fragment: Int) in
        let now = malloc_counter_value()
        perFragment[fragment] = Int(now - before)
        before = now
    }
    before = malloc_counter_value()
    workload.run(&reassembler, fragmentDone: fragmentDone) { tally.add($0) }
    tally.check(against: workload, passes: 2)
    var result = Allocations()
    result.total = perFragment.reduce(0, +)
    for fragment in 0..<workload.fragmentCount {
        if expected[fragment] == 0 {
            result.plainFragments += 1
            result.plainFragmentMax = max(result.plainFragmentMax, perFragment[fragment])
        }
        if perFragment[fragment] != expected[fragment] { result.unexplained += 1 }
    }
    return result
}

var workloads: [DataSourceWorkload] = []
for mtu in DataSourceWorkload.mtus where onlyMTU == nil || onlyMTU == mtu {
    do {
        workloads.append(try DataSourceWorkload(mtu: mtu))
    } catch {
        print("error: \(error)")
        exit(1)
    }
}
guard let first = workloads.first else {
    print("error: no workload for MTU \(onlyMTU ?? 0); the workload has MTU \(DataSourceWorkload.mtus)")
    exit(2)
}
if profilePasses > 0 {
    // The decoded values are checked against the manifest's checksum here too
    // (a pass of its own per MTU: the same cost in every run, so it cancels
    // out of the difference of two --profile counts).
    for workload in workloads {
        workload.verify()
        _ = timePasses(workload, profilePasses)
    }
    exit(0)
}
print("Standard Data Source workload: \(first.responseCount) responses, \(first.responseBytes) response bytes, \(first.valueCount) values (\(first.heapValueCount) longer than \(DataSourceWorkload.inlineValueCapacity) bytes), checksum 0x\(String(first.checksum, radix: 16))")
print("Every value read \(strings ? "as a String" : "as bytes"); checksum verified per MTU before and after timing; median of \(samples) samples.")
print("")

var header = "| MTU | notifications | MB/s | ns/response |"
var rule = "|---:|---:|---:|---:|"
for reference in references {
    header += " vs \(reference.name) (\(format(reference.megabytesPerSecond, 0)) MB/s) |"
    rule += "---:|"
}
print(header)
print(rule)
var timings: [Timing] = []
for workload in workloads {
    workload.verify()
    let timing = measure(workload, samples: samples, passesPerSample: passesPerSample)
    workload.verify()
    timings.append(timing)
    var row = "| \(workload.mtu) | \(workload.fragmentCount) | \(format(timing.megabytesPerSecond, 0)) | \(format(timing.nanosecondsPerResponse, 0)) |"
    for reference in references { row += " \(format(timing.megabytesPerSecond / reference.megabytesPerSecond, 2))× |" }
    print(row)
}
print("")

if malloc_counter_available() != 0 {
    print("Heap allocations, steady state (second pass of one reassembler):")
    print("")
    print("| MTU | per pass | per notification | per value | per response | other notifications: max | unexplained |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for workload in workloads {
        guard let allocations = countAllocations(workload) else { break }
        let perValue = Double(allocations.total) / Double(workload.valueCount)
        print("| \(workload.mtu) | \(allocations.total) | \(format(Double(allocations.total) / Double(workload.fragmentCount), 3)) | \(format(perValue, 3)) | \(format(Double(allocations.total) / Double(workload.responseCount), 2)) | \(allocations.plainFragmentMax) (\(allocations.plainFragments) notifications) | \(allocations.unexplained) |")
    }
    print("")
    print("per response: its attribute array and one buffer holding all its values (values are parts of it).")
    print("other notifications: those completing no response.")
    print("unexplained: notifications whose allocations differ from two per response completed in them (one when all its values are empty).")
} else {
    print("(allocation counts: Linux with glibc only; see the package-benchmark tables)")
}

let worst = timings.map(\.megabytesPerSecond).min() ?? 0
let aim = aimRatio * references[0].megabytesPerSecond
print("")
print("Aim: ≥ \(format(aim, 0)) MB/s (\(format(aimRatio, 0))× \(references[0].name)) at every MTU: \(worst >= aim ? "met" : "NOT met") (slowest \(format(worst, 0)) MB/s).")
