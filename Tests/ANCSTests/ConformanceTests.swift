// The shared conformance vectors, checked through the library: every case is
// decoded with the core codec (or the Data Source reassembler), rendered with
// ANCSFormat, and compared to the vector's `expect` as parsed JSON.

import ANCS
import ANCSFormat
import Foundation
import Testing

// MARK: - Vectors

/// A JSON value as parsed by Foundation, in a Sendable, comparable form.
/// Numbers compare as numbers (1 == 1.0), never as strings.
enum JSONValue: Hashable, Sendable, CustomStringConvertible {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(any value: Any) throws {
        switch value {
        case let text as String:
            self = .string(text)
        case is NSNull:
            self = .null
        case let items as [Any]:
            self = .array(try items.map { try JSONValue(any: $0) })
        case let members as [String: Any]:
            self = .object(try members.mapValues { try JSONValue(any: $0) })
        case let number as NSNumber:
            self = .number(number.doubleValue)
        case let number as Int:
            self = .number(Double(number))
        case let number as Double:
            self = .number(number)
        case let flag as Bool:
            self = .bool(flag)
        default:
            throw VectorError("unsupported JSON value \(value) of type \(type(of: value))")
        }
    }

    /// Parses one JSON document (an object or an array).
    init(parsing data: Data) throws {
        try self.init(any: JSONSerialization.jsonObject(with: data))
    }

    init(parsing text: String) throws {
        try self.init(parsing: Data(text.utf8))
    }

    var description: String {
        switch self {
        case .object(let members):
            "{" + members.keys.sorted().map { "\"\($0)\":\(members[$0]!)" }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
        case .string(let text): "\"\(text)\""
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? "\(Int64(value))" : "\(value)"
        case .bool(let flag): "\(flag)"
        case .null: "null"
        }
    }
}

struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One conformance case: its input bytes, and the JSON expected or the error substring.
struct ConformanceCase: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable {
        case expect(JSONValue)
        case error(String)
    }

    var section: String
    var name: String
    /// The PDU (Notification Source, Control Point) as hex.
    var hex: String
    /// Data Source only: the Control Point request and the fragments, as hex.
    var request: String?
    var fragments: [String]
    var outcome: Outcome

    var testDescription: String { name }
}

struct ConformanceVectors: Sendable {
    var notificationSource: [ConformanceCase] = []
    var controlPoint: [ConformanceCase] = []
    var dataSource: [ConformanceCase] = []
    /// Why loading failed, if it did; reported by the count test.
    var loadError: String?

    /// `<package root>/../shared/vectors/conformance.json`, the root found from this file.
    static var url: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // ANCSTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // package root
            .deletingLastPathComponent()
            .appendingPathComponent("shared/vectors/conformance.json")
    }

    static let shared: ConformanceVectors = {
        do {
            return try load(from: url)
        } catch {
            var vectors = ConformanceVectors()
            vectors.loadError = "cannot load \(url.path): \(error)"
            return vectors
        }
    }()

    static func load(from url: URL) throws -> ConformanceVectors {
        guard case .object(let root) = try JSONValue(parsing: Data(contentsOf: url)) else {
            throw VectorError("the vectors file is not a JSON object")
        }
        func cases(_ section: String) throws -> [ConformanceCase] {
            guard case .array(let items)? = root[section] else { throw VectorError("no \"\(section)\" array") }
            return try items.enumerated().map { index, item in
                guard case .object(let fields) = item else { throw VectorError("\(section)[\(index)] is not an object") }
                func string(_ key: String) -> String? {
                    if case .string(let text)? = fields[key] { return text }
                    return nil
                }
                let name = string("name") ?? "\(section)[\(index)]"
                let outcome: ConformanceCase.Outcome
                if let expect = fields["expect"] {
                    outcome = .expect(expect)
                } else if let error = string("error") {
                    outcome = .error(error)
                } else {
                    throw VectorError("\(section) case \"\(name)\" has neither expect nor error")
                }
                var fragments: [String] = []
                if case .array(let list)? = fields["fragments"] {
                    fragments = try list.map {
                        guard case .string(let text) = $0 else { throw VectorError("\(name): a fragment is not a string") }
                        return text
                    }
                }
                return ConformanceCase(
                    section: section, name: name, hex: string("hex") ?? "", request: string("request"),
                    fragments: fragments, outcome: outcome
                )
            }
        }
        return ConformanceVectors(
            notificationSource: try cases("notificationSource"),
            controlPoint: try cases("controlPoint"),
            dataSource: try cases("dataSource")
        )
    }
}

/// Hex as the vectors write it: pairs of digits, no separators.
func hexBytes(_ hex: String) throws -> [UInt8] {
    do {
        return try Hex.bytes(hex)
    } catch {
        throw VectorError("\(error) in \"\(hex)\"")
    }
}

// MARK: - Tests

@Suite("Conformance vectors through the library")
struct ConformanceTests {
    static let vectors = ConformanceVectors.shared

    @Test("the vectors file loads and every section has cases")
    func vectorsLoaded() throws {
        let vectors = Self.vectors
        #expect(vectors.loadError == nil, "\(vectors.loadError ?? "")")
        #expect(vectors.notificationSource.count > 0)
        #expect(vectors.controlPoint.count > 0)
        #expect(vectors.dataSource.count > 0)
        // Each section exercises both outcomes.
        for section in [vectors.notificationSource, vectors.controlPoint, vectors.dataSource] {
            #expect(section.contains { if case .expect = $0.outcome { true } else { false } })
            #expect(section.contains { if case .error = $0.outcome { true } else { false } })
        }
    }

    @Test("Notification Source", arguments: ConformanceTests.vectors.notificationSource)
    func notificationSource(_ vector: ConformanceCase) throws {
        let input = try hexBytes(vector.hex)
        let result = Result<NotificationSourceEvent, DecodingError> { () throws(DecodingError) in try NotificationSourceEvent.decode(input) }
        try check(vector, result) { event in
            // A valid event also encodes back to the same 8 bytes.
            #expect(event.encode() == input, "\(vector.name): encode(decode(x)) != x")
            return ANCSJSON.notificationSource(event).rendered
        }
    }

    @Test("Control Point", arguments: ConformanceTests.vectors.controlPoint)
    func controlPoint(_ vector: ConformanceCase) throws {
        let input = try hexBytes(vector.hex)
        let result = Result<ControlPointCommand, DecodingError> { () throws(DecodingError) in try ControlPointCommand.decode(input) }
        try check(vector, result) { command in
            #expect((try? command.encode()) == input, "\(vector.name): encode(decode(x)) != x")
            return ANCSJSON.controlPoint(command).rendered
        }
    }

    @Test("Data Source", arguments: ConformanceTests.vectors.dataSource)
    func dataSource(_ vector: ConformanceCase) throws {
        let requestHex = try #require(vector.request, "Data Source case \"\(vector.name)\" has no request")
        let command = try ControlPointCommand.decode(try hexBytes(requestHex))
        let request = try #require(DataSourceRequest(command), "the request of \"\(vector.name)\" has no Data Source response")
        #expect(!vector.fragments.isEmpty)

        var reassembler = DataSourceReassembler()
        reassembler.expect(request, id: 7)
        var events: [ReassemblyEvent] = []
        for fragment in vector.fragments {
            reassembler.feed(try hexBytes(fragment)) { events.append($0) }
        }
        reassembler.finish { events.append($0) }

        var responses: [DataSourceResponse] = []
        var errors: [DecodingError] = []
        for event in events {
            switch event {
            case .response(let id, let response):
                #expect(id == 7)
                responses.append(response)
            case .failed(let id, let error):
                #expect(id == 7)
                errors.append(error)
            case .unsolicited(let error):
                errors.append(error)
            }
        }
        // The request ends exactly once, with a response or an error.
        #expect(responses.count + errors.count == 1, "\(vector.name): events \(events)")
        let result: Result<DataSourceResponse, DecodingError>
        if let response = responses.first, errors.isEmpty {
            result = .success(response)
        } else {
            result = .failure(try #require(errors.first))
        }
        try check(vector, result) { response in
            // The response encodes back to the concatenated fragments.
            let wire = try vector.fragments.flatMap { try hexBytes($0) }
            #expect(response.encode() == wire, "\(vector.name): the response does not re-encode to its fragments")
            return ANCSJSON.dataSource(response).rendered
        }
    }

    /// Compares a decoding outcome with the vector: rendered JSON equal to
    /// `expect`, or an error whose description contains the `error` text.
    private func check<Value>(
        _ vector: ConformanceCase,
        _ result: Result<Value, DecodingError>,
        render: (Value) throws -> String
    ) throws {
        switch (vector.outcome, result) {
        case (.expect(let expected), .success(let value)):
            let rendered = try render(value)
            #expect(!rendered.contains("\n"), "rendered JSON is not one line")
            let actual = try JSONValue(parsing: rendered)
            #expect(actual == expected, "\(vector.name)\n  rendered: \(rendered)\n  expected: \(expected)")
        case (.expect, .failure(let error)):
            Issue.record("\(vector.name): expected a value, decoding failed: \(error)")
        case (.error(let substring), .failure(let error)):
            #expect(error.description.contains(substring), "\(vector.name): \"\(error)\" does not contain \"\(substring)\"")
            #expect(error.description.hasPrefix("offset \(error.offset): "))
        case (.error(let substring), .success(let value)):
            Issue.record("\(vector.name): expected an error containing \"\(substring)\", decoded \(value)")
        }
    }
}
