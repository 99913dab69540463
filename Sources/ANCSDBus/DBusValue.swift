#if os(Linux)
/// One D-Bus value with its type: basic types, arrays
/// (byte arrays kept as bytes), dictionaries, structs and variants.
///
/// An empty array or dictionary still has a type, so containers carry their
/// element signatures.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`.
    case bytes([UInt8])
    /// `a<element>` for any element but a byte or a dict entry.
    case array(element: String, [DBusValue])
    /// `a{<key><value>}`.
    case dictionary(key: String, value: String, [DBusDictEntry])
    /// `(...)`.
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    // MARK: Building

    /// `a{sv}` from a Swift dictionary (keys sorted, so messages are reproducible).
    public static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", values.keys.sorted().map { DBusDictEntry(.string($0), .variant(values[$0]!)) })
    }

    /// `as`.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map { .string($0) })
    }

    // MARK: Reading (variants are looked through)

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let value), .objectPath(let value), .signature(let value): value
        default: nil
        }
    }

    public var bool: Bool? {
        if case .boolean(let value) = unwrapped { return value }
        return nil
    }

    /// Any integer type, widened.
    public var integer: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): v <= UInt64(Int.max) ? Int(v) : nil
        default: nil
        }
    }

    public var bytes: [UInt8]? {
        switch unwrapped {
        case .bytes(let value): return value
        case .array(element: "y", let items): return items.compactMap { if case .byte(let b) = $0 { b } else { nil } }
        default: return nil
        }
    }

    /// The items of an array (a byte array as `.byte` items).
    public var items: [DBusValue]? {
        switch unwrapped {
        case .array(_, let items): items
        case .bytes(let bytes): bytes.map { .byte($0) }
        default: nil
        }
    }

    /// `as` / `ao` as strings.
    public var strings: [String]? { items?.compactMap(\.string) }

    /// A dictionary with string-like keys (`a{sv}`, `a{oa{...}}`).
    public var dictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            if let key = entry.key.string { result[key] = entry.value }
        }
        return result
    }
}

/// One entry of a D-Bus dictionary.
public struct DBusDictEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// What `org.freedesktop.DBus.ObjectManager.GetManagedObjects` and
/// `InterfacesAdded` carry: interfaces by name, each with its properties.
public typealias DBusInterfaces = [String: [String: DBusValue]]

extension DBusValue {
    /// `a{sa{sv}}` as interfaces and their properties.
    public var interfaces: DBusInterfaces? {
        guard let outer = dictionary else { return nil }
        var result: DBusInterfaces = [:]
        for (name, properties) in outer {
            result[name] = properties.dictionary ?? [:]
        }
        return result
    }

    /// `a{oa{sa{sv}}}` as objects by path.
    public var managedObjects: [String: DBusInterfaces]? {
        guard let outer = dictionary else { return nil }
        var result: [String: DBusInterfaces] = [:]
        for (path, interfaces) in outer {
            result[path] = interfaces.interfaces ?? [:]
        }
        return result
    }
}

/// A D-Bus error reply (or a failure of the connection, named like one).
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static func timedOut(_ what: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "\(what): no reply in time")
    }
    public static let disconnected = DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the D-Bus connection is closed")
    public static let cancelled = DBusError(name: "org.freedesktop.DBus.Error.Cancelled", message: "the call was cancelled")
}

#endif
