// Prints an iPhone's notifications as they arrive, through a Bumble host on
// a Bluetooth dongle (any OS; `ancs setup bumble` prepares Python and Bumble).
// The accessory advertises; pair from the iPhone's Bluetooth settings:
//   swift run PrintNotificationsBumble usb:0
// The bond is kept in printer-keys.json, so the phone reconnects without pairing.
import ANCSBumble
import ANCSRuntime
import Foundation
import NotificationPrinter

let arguments = CommandLine.arguments.dropFirst()
guard let transport = arguments.first else {
    FileHandle.standardError.write(Data("usage: PrintNotificationsBumble <bumble transport, e.g. usb:0>\n".utf8))
    exit(64)
}

do {
    // peripheral: advertise and let the phone connect, as an accessory does.
    let phone = try await BumbleClientTransport.start(
        BumbleHostOptions(transport: transport, name: "Notification printer", keys: "printer-keys.json", peripheral: true),
        progress: { print("·", $0) })
    defer { phone.close() }

    try await ConsumerClient.withRunning(transport: phone, configuration: .displaying(.standard)) { client in
        await NotificationPrinter.printEvents(of: client)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
