/// A JSON value that keeps object keys in the order they were given, so the
/// CLI's output reads in the order of the wire format.
public indirect enum JSON: Hashable, Sendable {
    case object([(String, JSON)])
    case array([JSON])
    case string(String)
    case integer(Int)
    case double(Double)
    case bool(Bool)
    case null

    public static func == (lhs: JSON, rhs: JSON) -> Bool { lhs.rendered == rhs.rendered }
    public func hash(into hasher: inout Hasher) { hasher.combine(rendered) }

    /// Compact, one line.
    public var rendered: String {
        var out = ""
        render(into: &out)
        return out
    }

    public func render(into out: inout String) {
        switch self {
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                JSON.escape(key, into: &out)
                out += ":"
                value.render(into: &out)
            }
            out += "}"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.render(into: &out)
            }
            out += "]"
        case .string(let text): JSON.escape(text, into: &out)
        case .integer(let value): out += "\(value)"
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        }
    }

    static func escape(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
