import ANCS
import ANCSDemo
import ANCSFormat
import ANCSRuntime
import ArgumentParser
import Foundation

/// `ancs listen`: act as the accessory, printing what the phone announces.
/// Thin on purpose: the stack is chosen in `consumerTransport` and all of
/// Bumble lives in StackBumble.swift.
struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Act as an accessory: connect to a phone's ANCS and print its notifications."
    )

    @Option(help: "The Bluetooth stack: bumble:<transport>.") var stack: String
    @OptionGroup var bumble: BumbleStackOptions
    @Option(help: "The ATT MTU to ask for (23…517).") var mtu: Int = 517
    @Option(help: "Connect to this address rather than the first advertiser soliciting ANCS.") var peer: String?
    @Flag(help: "Connect again after the link is lost.") var reconnect = false
    @Flag(help: "Advertise the ANCS solicitation and wait for the phone to connect, as an accessory does (a real iPhone), instead of scanning.")
    var peripheral = false
    @Option(help: "Exit after this many seconds (0: no limit).") var duration: Double = 0
    @Flag(help: "Print one JSON object per consumer event (as `ancs demo --json`).") var json = false

    func validate() throws {
        guard (23...517).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 517, got \(mtu)") }
        guard duration >= 0 else { throw ValidationError("--duration must be 0 or more seconds") }
    }

    func consumerTransport() async throws -> (transport: any GATTClientTransport, close: @Sendable () -> Void) {
        if let transport = try bumbleTransport(fromStack: stack) {
            let client = try await startBumbleClient(transport: transport, options: bumble, mtu: mtu, peer: peer, reconnect: reconnect, peripheral: peripheral)
            return (client, { client.close() })
        }
        throw CommandFailure("listen: unknown stack '\(stack)'; this build knows bumble:<transport>")
    }

    func run() async throws {
        let (transport, close) = try await consumerTransport()
        let client = ConsumerClient(transport: transport, display: .standard)
        let json = self.json
        let printer = Task {
            for await event in client.events {
                guard case .consumer(let event) = event else { continue }
                if json {
                    printLine(ANCSJSON.consumerEvent(event).rendered)
                } else {
                    printLine("\(event)")
                }
            }
        }
        let limit = duration > 0 ? Task { [duration] in
            try? await Task.sleep(for: .milliseconds(Int(duration * 1000)))
            if !Task.isCancelled { close() }
        } : nil
        defer { limit?.cancel() }
        do {
            try await client.run()
        } catch {
            throw CommandFailure("listen: \(error)")
        }
        _ = await printer.value
    }
}
