// Prints an iPhone's notifications as they arrive, on Linux with BlueZ.
// Run it, pair from the iPhone's Bluetooth settings, allow notifications:
//   swift run PrintNotifications
// Without BlueZ (no system D-Bus, no bluetoothd) it prints one error line and exits 1.
import Foundation

#if os(Linux)
import ANCSBlueZ
import ANCSRuntime
import NotificationPrinter

do {
    let phone = try await BlueZConsumerTransport.start(
        options: .init(name: "Notification printer"),
        status: { print("·", $0.message) },
        prompt: { request in print("pairing with \(request.device): accepted"); return true })

    try await ConsumerClient.withRunning(transport: phone, configuration: .displaying(.standard)) { client in
        await NotificationPrinter.printEvents(of: client)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
#else
FileHandle.standardError.write(Data("error: BlueZ runs on Linux only; try PrintNotificationsBumble with a USB dongle\n".utf8))
exit(1)
#endif
