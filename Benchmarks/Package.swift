// swift-tools-version: 6.1
// Benchmarks of swift-ancs: time and heap allocations per operation
// (ordo-one package-benchmark), plus `ds-throughput`, a standalone
// throughput and allocation report for the standard Data Source workload.
// Run everything from the repository root with `scripts/bench.sh`.
//
// Layout, one folder per benchmark suite (package-benchmark discovers the
// executable targets under Benchmarks/ that use BenchmarkPlugin):
//   Benchmarks/ProtocolCore   codec and reassembler (Notification Source,
//                             Control Point, Data Source workload)
//   Benchmarks/Engines        consumer and provider engines
//   Sources/DataSourceWorkload  loads the standard workload, shared by all
//   Sources/ds-throughput       `swift run -c release ds-throughput`
// A new suite is a folder under Benchmarks/ plus a `benchmarkSuite(...)` line.
import PackageDescription

func benchmarkSuite(_ name: String, dependencies: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: [
            .product(name: "ANCS", package: "swift-ancs"),
            .product(name: "Benchmark", package: "benchmark"),
        ] + dependencies,
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}

let package = Package(
    name: "swift-ancs-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-ancs", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        benchmarkSuite("ProtocolCore", dependencies: ["DataSourceWorkload"]),
        benchmarkSuite("Engines"),

        .target(name: "DataSourceWorkload", dependencies: [.product(name: "ANCS", package: "swift-ancs")]),
        // Counts malloc calls in ds-throughput (glibc only; elsewhere a no-op).
        .target(name: "MallocCounter"),
        .executableTarget(
            name: "ds-throughput",
            dependencies: ["DataSourceWorkload", "MallocCounter", .product(name: "ANCS", package: "swift-ancs")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
