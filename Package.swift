// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-ancs",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ANCS", targets: ["ANCS"]),
        .library(name: "ANCSRuntime", targets: ["ANCSRuntime"]),
        .library(name: "ANCSSimulation", targets: ["ANCSSimulation"]),
        .library(name: "ANCSFormat", targets: ["ANCSFormat"]),
        .library(name: "ANCSCapture", targets: ["ANCSCapture"]),
        .library(name: "ANCSBumble", targets: ["ANCSBumble"]),
        // Linux only (empty modules elsewhere): BlueZ, D-Bus, desktop notifications.
        .library(name: "ANCSBlueZ", targets: ["ANCSBlueZ"]),
        .library(name: "ANCSDBus", targets: ["ANCSDBus"]),
        .library(name: "ANCSDesktop", targets: ["ANCSDesktop"]),
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
        // The demo's phone, its notifications and what the accessory shows;
        // the scenarios `ancs provide` plays (read from YAML or JSON).
        .target(name: "ANCSDemo", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation", .product(name: "Yams", package: "Yams")]),
        // What a terminal shows of a notification (`ancs demo`, `ancs listen`).
        .target(name: "ANCSTerminal", dependencies: ["ANCS", "ANCSRuntime"]),
        // Linux only: the sources below are `#if os(Linux)`, and what uses
        // them depends on them only on Linux.
        // libdbus-1, loaded at run time (no headers or -dev package to build).
        .target(name: "CDBus", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // Linux process settings `ancs` applies at start-up, before any
        // thread exists (no transparent huge pages), from a C constructor.
        .target(name: "CLinux"),
        // A general D-Bus client: calls, signals, exported objects, names.
        .target(name: "ANCSDBus", dependencies: ["CDBus"]),
        // The BlueZ transport (bluetoothd on the system bus), its pairing
        // agent and advertisement, and the doctor's checks of BlueZ.
        .target(name: "ANCSBlueZ", dependencies: ["ANCS", "ANCSRuntime", "ANCSDBus"]),
        // Notifications on the desktop (org.freedesktop.Notifications on the session bus).
        .target(name: "ANCSDesktop", dependencies: ["ANCS", "ANCSDBus"]),
        // Bumble (Python, any OS, USB/UART dongles and virtual controllers)
        // through a host process speaking a line protocol (Host/PROTOCOL.md).
        .target(name: "ANCSBumble", dependencies: ["ANCS", "ANCSFormat", "ANCSRuntime"], resources: [.copy("Host/ancs_bumble_host.py"), .copy("Host/ancs_host"), .copy("Host/PROTOCOL.md")]),
        // Captures: btsnoop files, HCI ACL and L2CAP reassembly, ATT, the
        // ANCS handles and an ANCS transcript (`ancs decode --btsnoop`).
        .target(name: "ANCSCapture", dependencies: ["ANCS", "ANCSFormat"]),
        .executableTarget(
            name: "ancs",
            dependencies: [
                "ANCS", "ANCSFormat", "ANCSRuntime", "ANCSSimulation", "ANCSDemo", "ANCSTerminal", "ANCSBumble", "ANCSCapture",
                .target(name: "ANCSBlueZ", condition: .when(platforms: [.linux])),
                .target(name: "ANCSDesktop", condition: .when(platforms: [.linux])),
                .target(name: "CLinux", condition: .when(platforms: [.linux])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the tests share: the conformance vectors, the package's paths,
        // running the built `ancs`.
        .target(name: "ANCSTestSupport", path: "Tests/ANCSTestSupport"),
        .testTarget(name: "ANCSTests", dependencies: ["ANCS", "ANCSFormat", "ANCSTestSupport"]),
        .testTarget(name: "ANCSRuntimeTests", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation", "ANCSDemo", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ANCSBlueZTests", dependencies: [
            "ANCS", "ANCSRuntime", "ANCSFormat",
            .target(name: "ANCSDBus", condition: .when(platforms: [.linux])),
            .target(name: "ANCSBlueZ", condition: .when(platforms: [.linux])),
            .target(name: "ANCSDesktop", condition: .when(platforms: [.linux])),
        ]),
        .testTarget(name: "ANCSBumbleTests", dependencies: ["ANCS", "ANCSRuntime", "ANCSSimulation", "ANCSBumble", "ANCSDemo", "ANCSTestSupport"],
                    exclude: ["Interop", "Scenarios"]),
        .testTarget(name: "ANCSCaptureTests", dependencies: ["ANCS", "ANCSCapture", "ANCSFormat"], exclude: ["make_monitor_fixture.py"],
                    resources: [.copy("Fixtures")]),
        .testTarget(name: "ancsCLITests", dependencies: ["ANCS", "ANCSTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
