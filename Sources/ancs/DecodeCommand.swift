import ANCS
import ANCSCapture
import ANCSFormat
import ArgumentParser
import Foundation

struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode ANCS bytes into one line of JSON.",
        discussion: """
            Hex may contain spaces, colons, tabs or line breaks between bytes, in \
            either case. Any hex argument may instead be `-`, to read standard \
            input, or `@PATH`, to read a file: there, text after `#` on a line is a \
            comment and blank lines are skipped; for `ds`, each line is one \
            fragment. On success one JSON object is printed on one line; on \
            failure one `error:` line on stderr, naming the argument, or the file \
            and line.
            """,
        subcommands: [NotificationSource.self, ControlPoint.self, DataSource.self]
    )

    @Option(help: "A btsnoop capture (Bumble's --snoop, Android's HCI log, btmon -w): print its ANCS transcript.")
    var btsnoop: String?
    @Flag(help: "With --btsnoop: one JSON object per transcript entry.") var json = false

    func validate() throws {
        if json && btsnoop == nil { throw ValidationError("decode: --json goes with --btsnoop FILE (ns, cp and ds always print JSON)") }
    }

    func run() throws {
        guard let btsnoop else {
            throw usageError("decode: name a subcommand (ns, cp, ds) or --btsnoop FILE; see --help")
        }
        let data: [UInt8]
        do {
            data = try HexArguments.readFile(btsnoop, limit: 1 << 30)
        } catch {
            throw CommandFailure("--btsnoop: \(error.message)")
        }
        let records: [BTSnoopRecord]
        do {
            records = try BTSnoop.parse(data)
        } catch {
            throw CommandFailure("--btsnoop \(btsnoop): \(error)")
        }
        let transcript = TranscriptBuilder.transcript(of: records)
        for entry in transcript.entries {
            printLine(json ? entry.json.rendered : entry.line)
        }
    }

    struct NotificationSource: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ns", abstract: "A Notification Source event (8 bytes).")
        @Argument(help: "The event as hex, or - (stdin) or @PATH (a file).") var hex: [String] = []
        @ParentCommand var decode: DecodeCommand

        func validate() throws { try decode.checkNoCapture(for: Self.configuration.commandName!) }

        func run() throws {
            let bytes = try readPDU(hex, what: "event")
            do {
                printLine(ANCSJSON.notificationSource(try NotificationSourceEvent.decode(bytes)).rendered)
            } catch {
                throw CommandFailure("\(error)")
            }
        }
    }

    struct ControlPoint: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cp", abstract: "A Control Point command.")
        @Argument(help: "The command as hex, or - (stdin) or @PATH (a file).") var hex: [String] = []
        @ParentCommand var decode: DecodeCommand

        func validate() throws { try decode.checkNoCapture(for: Self.configuration.commandName!) }

        func run() throws {
            let bytes = try readPDU(hex, what: "command")
            do {
                printLine(ANCSJSON.controlPoint(try ControlPointCommand.decode(bytes)).rendered)
            } catch {
                throw CommandFailure("\(error) (an NP answers \(error.controlPointErrorCode))")
            }
        }
    }

    struct DataSource: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ds",
            abstract: "A Data Source response, given the Control Point request it answers and its fragments in order."
        )
        @Option(name: .long, help: "The Control Point command (hex, or - or @PATH) that the response answers.") var request: String
        @Argument(help: "The GATT notifications of the response, in order: each hex, or - or @PATH for one per line.")
        var fragments: [String] = []
        @ParentCommand var decode: DecodeCommand

        func validate() throws { try decode.checkNoCapture(for: Self.configuration.commandName!) }

        func run() throws {
            var input = HexArguments()
            let requestBytes = try readPDU([request], what: "--request", input: &input)
            let command: ControlPointCommand
            do {
                command = try ControlPointCommand.decode(requestBytes)
            } catch {
                throw CommandFailure("--request: \(error)")
            }
            guard let expected = DataSourceRequest(command) else {
                throw CommandFailure("--request: Perform Notification Action has no Data Source response")
            }
            var reassembler = DataSourceReassembler()
            reassembler.expect(expected, id: 0)
            var outcome: Result<DataSourceResponse, CommandFailure>?
            var number = 0
            for argument in fragments {
                for piece in try input.pieces(of: argument) {
                    number += 1
                    let label = piece.origin.label("fragment \(number)")
                    let bytes = try parseHex(piece.text, what: label)
                    reassembler.feed(bytes) { event in
                        guard outcome == nil || (try? outcome?.get()) != nil else { return }
                        switch event {
                        case .response(_, let response):
                            outcome = .success(response)
                        case .failed(_, let error):
                            outcome = .failure(CommandFailure("\(label): \(error)"))
                        case .unsolicited:
                            outcome = .failure(CommandFailure("\(label): bytes after the end of the response"))
                        }
                    }
                }
            }
            if outcome == nil {
                reassembler.finish { event in
                    if case .failed(_, let error) = event { outcome = .failure(CommandFailure("\(error)")) }
                }
            }
            switch outcome {
            case .success(let response): printLine(ANCSJSON.dataSource(response).rendered)
            case .failure(let failure): throw failure
            case nil: throw CommandFailure("no response")
            }
        }
    }
}

extension DecodeCommand {
    /// `decode --btsnoop FILE ns …`: one or the other, not both.
    func checkNoCapture(for subcommand: String) throws {
        if let btsnoop {
            throw ValidationError("decode: --btsnoop \(btsnoop) decodes a capture and takes no subcommand; drop `\(subcommand)` or --btsnoop")
        }
    }
}

/// The bytes of one PDU given as hex arguments (each hex, `-` or `@PATH`),
/// in order; `what` names it in errors.
func readPDU(_ arguments: [String], what: String) throws(CommandFailure) -> [UInt8] {
    var input = HexArguments()
    return try readPDU(arguments, what: what, input: &input)
}

func readPDU(_ arguments: [String], what: String, input: inout HexArguments) throws(CommandFailure) -> [UInt8] {
    var bytes: [UInt8] = []
    for (index, argument) in arguments.enumerated() {
        let name = arguments.count > 1 ? "\(what), argument \(index + 1)" : what
        for piece in try input.pieces(of: argument) {
            bytes += try parseHex(piece.text, what: piece.origin.label(name))
        }
    }
    return bytes
}
