import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct ANCSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ancs",
        abstract: "Apple Notification Center Service: consumer, provider and decoder.",
        discussion: """
            Every failure is one `error:` line on stderr (control characters in it \
            escaped) and a non-zero exit status: 1 for bad input or a failed run, \
            64 for a command line that does not parse, 74 when standard output \
            cannot be written (a full disk, a closed descriptor). When the reader \
            of standard output goes away (`ancs demo --json | head -1`), ancs stops \
            at once, quietly, with status 0: the reader has what it asked for.
            """,
        version: ANCSVersion.current,
        subcommands: [DemoCommand.self, DecodeCommand.self, BenchCommand.self, ProvideCommand.self, ListenCommand.self, SetupCommand.self, DoctorCommand.self],
        defaultSubcommand: DemoCommand.self
    )

    /// Runs the subcommand the arguments name. Whatever it throws becomes one
    /// `error:` line on stderr and a non-zero exit; help and the version go to
    /// stdout through the same checked writes as everything else.
    static func main() async {
        // A reader that closes the pipe is an EPIPE from write(2), handled
        // where output is written, not a signal that kills the process mid-line.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if let checked = command as? UsageChecked { try checked.checkUsage() }
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            exitWithError(failure.message, status: failure.status)
        } catch {
            let code = exitCode(for: error).rawValue
            let text = message(for: error)
            if code == 0 {
                // --help, --version: the text is the output.
                if !text.isEmpty { printLine(text) }
                terminate(0)
            }
            // An `ExitCode` thrown on purpose carries no message.
            guard !text.isEmpty else { terminate(code) }
            exitWithError(text, status: code)
        }
    }
}
