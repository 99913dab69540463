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
            Hex may contain spaces or colons, in either case. On success one JSON \
            object is printed on one line; on failure one `error:` line on stderr.
            """,
        subcommands: [NotificationSource.self, ControlPoint.self, DataSource.self]
    )

    @Option(help: "A btsnoop capture (Bumble's --snoop, Android's HCI log, btmon -w): print its ANCS transcript.")
    var btsnoop: String?
    @Flag(help: "With --btsnoop: one JSON object per transcript entry.") var json = false

    func run() throws {
        guard let btsnoop else {
            throw CommandFailure("decode: name a subcommand (ns, cp, ds) or --btsnoop FILE; see --help")
        }
        guard let data = FileManager.default.contents(atPath: btsnoop) else {
            throw CommandFailure("--btsnoop: cannot read \(btsnoop)")
        }
        let records: [BTSnoopRecord]
        do {
            records = try BTSnoop.parse(Array(data))
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
        @Argument(help: "The event as hex.") var hex: [String] = []

        func run() throws {
            let bytes = try parseHex(hex.joined(separator: " "), what: "event")
            do {
                printLine(ANCSJSON.notificationSource(try NotificationSourceEvent.decode(bytes)).rendered)
            } catch {
                throw CommandFailure("\(error)")
            }
        }
    }

    struct ControlPoint: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cp", abstract: "A Control Point command.")
        @Argument(help: "The command as hex.") var hex: [String] = []

        func run() throws {
            let bytes = try parseHex(hex.joined(separator: " "), what: "command")
            do {
                printLine(ANCSJSON.controlPoint(try ControlPointCommand.decode(bytes)).rendered)
            } catch {
                throw CommandFailure("\(error) (an NP answers ATT error 0x\(String(error.controlPointErrorCode.rawValue, radix: 16, uppercase: true)))")
            }
        }
    }

    struct DataSource: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ds",
            abstract: "A Data Source response, given the Control Point request it answers and its fragments in order."
        )
        @Option(name: .long, help: "The Control Point command (hex) that the response answers.") var request: String
        @Argument(help: "The GATT notifications of the response, as hex, in order.") var fragments: [String] = []

        func run() throws {
            let requestBytes = try parseHex(request, what: "--request")
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
            for (number, text) in fragments.enumerated() {
                let bytes = try parseHex(text, what: "fragment \(number + 1)")
                reassembler.feed(bytes) { event in
                    guard outcome == nil || (try? outcome?.get()) != nil else { return }
                    switch event {
                    case .response(_, let response):
                        outcome = .success(response)
                    case .failed(_, let error):
                        outcome = .failure(CommandFailure("fragment \(number + 1): \(error)"))
                    case .unsolicited:
                        outcome = .failure(CommandFailure("fragment \(number + 1): bytes after the end of the response"))
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

func parseHex(_ text: String, what: String) throws -> [UInt8] {
    do {
        return try HexInput.parse(text)
    } catch {
        throw CommandFailure("\(what): \(error)")
    }
}
