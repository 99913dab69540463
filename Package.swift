// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-ancs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ANCS", targets: ["ANCS"]),
        .library(name: "ANCSRuntime", targets: ["ANCSRuntime"]),
        .library(name: "ANCSSimulation", targets: ["ANCSSimulation"]),
        .executable(name: "ancs", targets: ["ancs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
    ],
    targets: [
        // The protocol core: no Foundation, no I/O, Embedded-compilable.
        .target(name: "ANCS"),
        // One JSON rendering of core values, shared by the CLI and the tests.
        .target(name: "ANCSFormat", dependencies: ["ANCS"]),
        // The async runtime: the actors, the transport protocols.
        .target(name: "ANCSRuntime", dependencies: ["ANCS", .product(name: "Logging", package: "swift-log")]),
        // Links without a radio: the simulated BLE link, the loopback link,
        // the manual clock, and the contract every transport must pass.
        .target(name: "ANCSSimulation", dependencies: ["ANCS", "ANCSRuntime"]),
        // The demo's phone, its notifications and what the accessory shows.
        .target(name: "ANCSDemo", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation"]),
        // BlueZ over D-Bus (Linux).
        // libdbus-1, loaded at run time (no headers or -dev package to build).
        .target(name: "CDBus", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "ANCSBlueZ", dependencies: ["ANCS", "ANCSRuntime", "CDBus"]),
        // Bumble (Python, any OS, USB/UART dongles and virtual controllers)
        // through a host process speaking a line protocol (Host/PROTOCOL.md).
        .target(name: "ANCSBumble", dependencies: ["ANCS", "ANCSFormat", "ANCSRuntime"], resources: [.copy("Host/ancs_bumble_host.py"), .copy("Host/PROTOCOL.md")]),
        // Captures: btsnoop files, HCI ACL and L2CAP reassembly, ATT, the
        // ANCS handles and an ANCS transcript (`ancs decode --btsnoop`).
        .target(name: "ANCSCapture", dependencies: ["ANCS", "ANCSFormat"]),
        .executableTarget(
            name: "ancs",
            dependencies: [
                "ANCS", "ANCSFormat", "ANCSRuntime", "ANCSSimulation", "ANCSDemo", "ANCSBlueZ", "ANCSBumble", "ANCSCapture",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Examples/: small programs that use the library as an application would.
        .executableTarget(name: "PrintNotifications", dependencies: ["ANCSRuntime", "ANCSBlueZ"], path: "Examples/PrintNotifications"),
        .testTarget(name: "ANCSTests", dependencies: ["ANCS", "ANCSFormat"]),
        .testTarget(name: "ANCSRuntimeTests", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation", "ANCSDemo", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ANCSBlueZTests", dependencies: ["ANCS", "ANCSRuntime", "ANCSBlueZ", "ANCSFormat"]),
        .testTarget(name: "ANCSBumbleTests", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation", "ANCSBumble", "ANCSDemo"],
                    exclude: ["Interop", "Scenarios"]),
        .testTarget(name: "ANCSCaptureTests", dependencies: ["ANCS", "ANCSCapture", "ANCSFormat"], exclude: ["make_monitor_fixture.py"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "ancsCLITests", dependencies: ["ANCS"]),
    ],
    swiftLanguageModes: [.v6]
)
