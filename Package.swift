// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-ancs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ANCS", targets: ["ANCS"]),
        .library(name: "ANCSRuntime", targets: ["ANCSRuntime"]),
        .executable(name: "ancs", targets: ["ancs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The protocol core: no Foundation, no I/O, Embedded-compilable.
        .target(name: "ANCS"),
        // One JSON rendering of core values, shared by the CLI and the tests.
        .target(name: "ANCSFormat", dependencies: ["ANCS"]),
        // Async runtime, transports and the simulated link.
        .target(name: "ANCSRuntime", dependencies: ["ANCS", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "ancs",
            dependencies: [
                "ANCS", "ANCSFormat", "ANCSRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ANCSTests", dependencies: ["ANCS", "ANCSFormat"]),
        .testTarget(name: "ANCSRuntimeTests", dependencies: ["ANCS", "ANCSRuntime", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ancsCLITests", dependencies: ["ANCS"]),
    ],
    swiftLanguageModes: [.v6]
)
