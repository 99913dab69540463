import ArgumentParser
import Foundation

@main
struct ANCSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ancs",
        abstract: "Apple Notification Center Service: consumer, provider and decoder.",
        subcommands: [DemoCommand.self, DecodeCommand.self, BenchCommand.self, ListenCommand.self, DoctorCommand.self],
        defaultSubcommand: DemoCommand.self
    )

    /// Every failure is one line on stderr starting with `error:`, and a non-zero exit.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data("error: \(failure.message)\n".utf8))
            Foundation.exit(failure.status)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)  // --help, --version
            }
            let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            let text = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            FileHandle.standardError.write(Data("error: \(text)\n".utf8))
            Foundation.exit(code.rawValue == 0 ? 1 : code.rawValue)
        }
    }
}

/// A failure the user caused or must act on, with its one-line message.
struct CommandFailure: Error {
    var message: String
    var status: Int32 = 1
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}

/// Writes one line to stdout and flushes, so piped output arrives as it happens.
func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
