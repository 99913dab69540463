// swift-tools-version: 6.1
// The examples: a package of their own that depends on swift-ancs as any
// other package would (by path here; by URL in yours), so they use the
// public products only.
import PackageDescription

let package = Package(
    name: "swift-ancs-examples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-ancs", path: ".."),
    ],
    targets: [
        // The accessory's logic: a line for each notification a ConsumerClient shows.
        .target(name: "NotificationPrinter", dependencies: [.product(name: "ANCSRuntime", package: "swift-ancs")]),
        // A real iPhone over BlueZ (Linux).
        .executableTarget(name: "PrintNotifications", dependencies: [
            "NotificationPrinter",
            .product(name: "ANCSRuntime", package: "swift-ancs"),
            .product(name: "ANCSBlueZ", package: "swift-ancs", condition: .when(platforms: [.linux])),
        ]),
        // A real iPhone over a Bumble host (a USB or UART dongle, any OS).
        .executableTarget(name: "PrintNotificationsBumble", dependencies: [
            "NotificationPrinter",
            .product(name: "ANCSRuntime", package: "swift-ancs"),
            .product(name: "ANCSBumble", package: "swift-ancs"),
        ]),
        // The accessory's logic against a simulated iPhone: no radio, no phone.
        .testTarget(name: "NotificationPrinterTests", dependencies: [
            "NotificationPrinter",
            .product(name: "ANCS", package: "swift-ancs"),
            .product(name: "ANCSRuntime", package: "swift-ancs"),
            .product(name: "ANCSSimulation", package: "swift-ancs"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
