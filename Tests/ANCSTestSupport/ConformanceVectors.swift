import Foundation
import Testing

/// One case of the conformance vectors: its input, and the JSON
/// expected or the error substring.
public struct ConformanceCase: Sendable, CustomTestStringConvertible {
    public enum Outcome: Sendable {
        case expect(JSONValue)
        case error(String)
    }

    public enum Section: String, Sendable, CaseIterable {
        case notificationSource, controlPoint, dataSource
    }

    public var section: Section
    public var name: String
    /// The PDU (Notification Source, Control Point) as hex; empty for Data Source cases.
    public var hex: String
    /// Data Source only: the Control Point request as hex.
    public var request: String?
    /// Data Source only: the fragments as hex.
    public var fragments: [String]
    public var outcome: Outcome

    public var testDescription: String { name }
}

/// `Tests/Vectors/conformance.json`, loaded once.
public struct ConformanceVectors: Sendable {
    public var notificationSource: [ConformanceCase] = []
    public var controlPoint: [ConformanceCase] = []
    public var dataSource: [ConformanceCase] = []
    /// Why loading failed, if it did; a test reports it.
    public var loadError: String?

    public var sections: [[ConformanceCase]] { [notificationSource, controlPoint, dataSource] }

    public static let shared: ConformanceVectors = {
        let url = PackagePaths.conformanceVectors
        do {
            return try load(from: url)
        } catch {
            var vectors = ConformanceVectors()
            vectors.loadError = "cannot load \(url.path): \(error)"
            return vectors
        }
    }()

    public static func load(from url: URL) throws -> ConformanceVectors {
        guard case .object(let root) = try JSONValue(parsing: Data(contentsOf: url)) else {
            throw TestSupportError("the vectors file is not a JSON object")
        }
        func cases(_ section: ConformanceCase.Section) throws -> [ConformanceCase] {
            guard case .array(let items)? = root[section.rawValue] else {
                throw TestSupportError("no \"\(section.rawValue)\" array")
            }
            return try items.enumerated().map { index, item in
                guard case .object(let fields) = item else {
                    throw TestSupportError("\(section.rawValue)[\(index)] is not an object")
                }
                let name = fields["name"]?.string ?? "\(section.rawValue)[\(index)]"
                let outcome: ConformanceCase.Outcome
                if let expect = fields["expect"] {
                    outcome = .expect(expect)
                } else if let error = fields["error"]?.string {
                    outcome = .error(error)
                } else {
                    throw TestSupportError("\(section.rawValue) case \"\(name)\" has neither expect nor error")
                }
                var fragments: [String] = []
                if case .array(let list)? = fields["fragments"] {
                    fragments = try list.map {
                        guard let text = $0.string else { throw TestSupportError("\(name): a fragment is not a string") }
                        return text
                    }
                }
                if section == .dataSource && (fields["request"]?.string == nil || fragments.isEmpty) {
                    throw TestSupportError("\(name): a Data Source case needs a request and fragments")
                }
                return ConformanceCase(
                    section: section, name: name, hex: fields["hex"]?.string ?? "", request: fields["request"]?.string,
                    fragments: fragments, outcome: outcome
                )
            }
        }
        return ConformanceVectors(
            notificationSource: try cases(.notificationSource),
            controlPoint: try cases(.controlPoint),
            dataSource: try cases(.dataSource)
        )
    }
}
