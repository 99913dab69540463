// swift-tools-version: 6.1
// Benchmarks of swift-ancs (ordo-one package-benchmark): time and heap
// allocations per operation. Run from the repository root with
//   scripts/bench.sh
import PackageDescription

let package = Package(
    name: "swift-ancs-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-ancs", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "ANCSBenchmarks",
            dependencies: [
                .product(name: "ANCS", package: "swift-ancs"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/ANCSBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
