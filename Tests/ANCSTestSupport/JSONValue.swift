import Foundation

/// A JSON value as Foundation parses it, in a Sendable, comparable form.
/// Numbers compare as numbers (1 == 1.0), never as strings.
public enum JSONValue: Hashable, Sendable, CustomStringConvertible {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    public init(any value: Any) throws {
        switch value {
        case let text as String: self = .string(text)
        case is NSNull: self = .null
        case let items as [Any]: self = .array(try items.map { try JSONValue(any: $0) })
        case let members as [String: Any]: self = .object(try members.mapValues { try JSONValue(any: $0) })
        case let number as NSNumber: self = .number(number.doubleValue)
        case let number as Int: self = .number(Double(number))
        case let number as Double: self = .number(number)
        case let flag as Bool: self = .bool(flag)
        default: throw TestSupportError("unsupported JSON value \(value) of type \(type(of: value))")
        }
    }

    /// Parses one JSON document (an object or an array).
    public init(parsing data: Data) throws {
        try self.init(any: JSONSerialization.jsonObject(with: data))
    }

    public init(parsing text: String) throws {
        try self.init(parsing: Data(text.utf8))
    }

    /// The text of a `.string`, else nil.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var description: String {
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

/// A test's setup went wrong (a file missing, a process that would not start, a timeout).
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
