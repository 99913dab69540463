// The shared conformance vectors, checked through the library: every case is
// decoded with the core codec (or the Data Source reassembler), rendered with
// ANCSFormat, and compared to the vector's `expect` as parsed JSON.

import ANCS
import ANCSFormat
import ANCSTestSupport
import Foundation
import Testing

/// Hex as the vectors write it: pairs of digits, no separators.
func hexBytes(_ hex: String) throws -> [UInt8] {
    do {
        return try Hex.bytes(hex)
    } catch {
        throw TestSupportError("\(error) in \"\(hex)\"")
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
        var events: [DataSourceReassembler.Event] = []
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
