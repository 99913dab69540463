#if os(Linux)
import CDBus

// Values in and out of libdbus messages, through its iterators. Used only on
// the connection's owner thread.

enum DBusType {
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let unixFD = Int32(UInt8(ascii: "h"))
    static let array = Int32(UInt8(ascii: "a"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
    static let invalid = Int32(0)
}

enum DBusMessageType {
    static let methodCall = Int32(1)
    static let methodReturn = Int32(2)
    static let error = Int32(3)
    static let signal = Int32(4)
}

/// Thrown when a value cannot be put into a message (bad object path,
/// string with NUL, out of memory).
struct DBusMarshalError: Error {
    var message: String
}

enum DBusMarshal {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusMarshalError) {
        var iterator = DBusMessageIter()
        cdbus_message_iter_init_append(message, &iterator)
        for value in values {
            try append(value, to: &iterator)
        }
    }

    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(DBusMarshalError) {
        func basic<T: BitwiseCopyable>(_ type: Int32, _ v: T) throws(DBusMarshalError) {
            var copy = v
            guard cdbus_message_iter_append_basic(&iterator, type, &copy) != 0 else {
                throw DBusMarshalError(message: "cannot append a value of type \(Character(Unicode.Scalar(UInt8(type))))")
            }
        }
        func text(_ type: Int32, _ s: String) throws(DBusMarshalError) {
            if s.utf8.contains(0) { throw DBusMarshalError(message: "string contains NUL: \(s.debugDescription)") }
            if type == DBusType.objectPath, !isObjectPath(s) { throw DBusMarshalError(message: "not an object path: \(s.debugDescription)") }
            let ok = s.withCString { pointer -> Bool in
                var p: UnsafePointer<CChar>? = pointer
                return cdbus_message_iter_append_basic(&iterator, type, &p) != 0
            }
            guard ok else { throw DBusMarshalError(message: "cannot append \(s.debugDescription)") }
        }
        func container(_ type: Int32, _ signature: String?, _ body: (inout DBusMessageIter) throws(DBusMarshalError) -> Void) throws(DBusMarshalError) {
            var sub = DBusMessageIter()
            let opened: Bool
            if let signature {
                opened = signature.withCString { cdbus_message_iter_open_container(&iterator, type, $0, &sub) != 0 }
            } else {
                opened = cdbus_message_iter_open_container(&iterator, type, nil, &sub) != 0
            }
            guard opened else { throw DBusMarshalError(message: "cannot open a container \(signature ?? "")") }
            do {
                try body(&sub)
            } catch {
                cdbus_message_iter_abandon_container(&iterator, &sub)
                throw error
            }
            guard cdbus_message_iter_close_container(&iterator, &sub) != 0 else { throw DBusMarshalError(message: "out of memory") }
        }
        switch value {
        case .byte(let v): try basic(DBusType.byte, v)
        case .boolean(let v): try basic(DBusType.boolean, UInt32(v ? 1 : 0))
        case .int16(let v): try basic(DBusType.int16, v)
        case .uint16(let v): try basic(DBusType.uint16, v)
        case .int32(let v): try basic(DBusType.int32, v)
        case .uint32(let v): try basic(DBusType.uint32, v)
        case .int64(let v): try basic(DBusType.int64, v)
        case .uint64(let v): try basic(DBusType.uint64, v)
        case .double(let v): try basic(DBusType.double, v)
        case .string(let s): try text(DBusType.string, s)
        case .objectPath(let s): try text(DBusType.objectPath, s)
        case .signature(let s): try text(DBusType.signature, s)
        case .bytes(let bytes):
            try container(DBusType.array, "y") { (sub: inout DBusMessageIter) throws(DBusMarshalError) in
                let ok = bytes.withUnsafeBufferPointer { buffer -> Bool in
                    var pointer = buffer.baseAddress ?? UnsafePointer<UInt8>(bitPattern: 1)!
                    return withUnsafeMutablePointer(to: &pointer) {
                        cdbus_message_iter_append_fixed_array(&sub, DBusType.byte, $0, Int32(buffer.count)) != 0
                    }
                }
                if !ok { throw DBusMarshalError(message: "cannot append \(bytes.count) bytes") }
            }
        case .array(let element, let items):
            for item in items where item.signature != element {
                throw DBusMarshalError(message: "array of \(element) holds a \(item.signature)")
            }
            try container(DBusType.array, element) { (sub: inout DBusMessageIter) throws(DBusMarshalError) in
                for item in items { try append(item, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            try container(DBusType.array, "{" + key + valueSignature + "}") { (sub: inout DBusMessageIter) throws(DBusMarshalError) in
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueSignature else {
                        throw DBusMarshalError(message: "dictionary a{\(key)\(valueSignature)} holds {\(entry.key.signature)\(entry.value.signature)}")
                    }
                    var entryIterator = DBusMessageIter()
                    guard cdbus_message_iter_open_container(&sub, DBusType.dictEntry, nil, &entryIterator) != 0 else {
                        throw DBusMarshalError(message: "out of memory")
                    }
                    try append(entry.key, to: &entryIterator)
                    try append(entry.value, to: &entryIterator)
                    cdbus_message_iter_close_container(&sub, &entryIterator)
                }
            }
        case .structure(let members):
            try container(DBusType.structure, nil) { (sub: inout DBusMessageIter) throws(DBusMarshalError) in
                for member in members { try append(member, to: &sub) }
            }
        case .variant(let inner):
            try container(DBusType.variant, inner.signature) { (sub: inout DBusMessageIter) throws(DBusMarshalError) in
                try append(inner, to: &sub)
            }
        }
    }

    static func isObjectPath(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = false
        for b in bytes {
            let slash = b == UInt8(ascii: "/")
            if slash && previousSlash { return false }
            previousSlash = slash
            let ok = slash || (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_")
            if !ok { return false }
        }
        return true
    }

    // MARK: Reading

    static func arguments(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard cdbus_message_iter_init(message, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            guard let value = read(&iterator) else { break }
            values.append(value)
        } while cdbus_message_iter_next(&iterator) != 0
        return values
    }

    static func signature(of iterator: inout DBusMessageIter) -> String {
        guard let pointer = cdbus_message_iter_get_signature(&iterator) else { return "" }
        defer { cdbus_free(pointer) }
        return String(cString: pointer)
    }

    static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        let type = cdbus_message_iter_get_arg_type(&iterator)
        var basic = DBusBasicValue()
        func getBasic() { cdbus_message_iter_get_basic(&iterator, &basic) }
        switch type {
        case DBusType.invalid: return nil
        case DBusType.byte: getBasic(); return .byte(basic.byt)
        case DBusType.boolean: getBasic(); return .boolean(basic.bool_val != 0)
        case DBusType.int16: getBasic(); return .int16(basic.i16)
        case DBusType.uint16: getBasic(); return .uint16(basic.u16)
        case DBusType.int32: getBasic(); return .int32(basic.i32)
        case DBusType.uint32: getBasic(); return .uint32(basic.u32)
        case DBusType.int64: getBasic(); return .int64(Int64(basic.i64))
        case DBusType.uint64: getBasic(); return .uint64(UInt64(basic.u64))
        case DBusType.double: getBasic(); return .double(basic.dbl)
        case DBusType.unixFD: getBasic(); return .int32(basic.fd)
        case DBusType.string, DBusType.objectPath, DBusType.signature:
            getBasic()
            let s = basic.str.map { String(cString: $0) } ?? ""
            return type == DBusType.string ? .string(s) : type == DBusType.objectPath ? .objectPath(s) : .signature(s)
        case DBusType.variant:
            var sub = DBusMessageIter()
            cdbus_message_iter_recurse(&iterator, &sub)
            return read(&sub).map { .variant($0) }
        case DBusType.structure:
            var sub = DBusMessageIter()
            cdbus_message_iter_recurse(&iterator, &sub)
            return .structure(readAll(&sub))
        case DBusType.array:
            let full = signature(of: &iterator)
            let element = String(full.dropFirst())
            var sub = DBusMessageIter()
            cdbus_message_iter_recurse(&iterator, &sub)
            if element == "y" {
                var pointer: UnsafeMutableRawPointer?
                var count: Int32 = 0
                withUnsafeMutablePointer(to: &pointer) { cdbus_message_iter_get_fixed_array(&sub, $0, &count) }
                guard let pointer, count > 0 else { return .bytes([]) }
                return .bytes(Array(UnsafeBufferPointer(start: pointer.assumingMemoryBound(to: UInt8.self), count: Int(count))))
            }
            if element.hasPrefix("{") {
                let inner = Array(element.dropFirst().dropLast())
                let keySignature = String(inner.prefix(1))
                let valueSignature = String(inner.dropFirst())
                var entries: [DBusDictEntry] = []
                while cdbus_message_iter_get_arg_type(&sub) == DBusType.dictEntry {
                    var entryIterator = DBusMessageIter()
                    cdbus_message_iter_recurse(&sub, &entryIterator)
                    let pair = readAll(&entryIterator)
                    if pair.count == 2 { entries.append(DBusDictEntry(pair[0], pair[1])) }
                    cdbus_message_iter_next(&sub)
                }
                return .dictionary(key: keySignature, value: valueSignature, entries)
            }
            return .array(element: element, readAll(&sub))
        default:
            return nil
        }
    }

    static func readAll(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var values: [DBusValue] = []
        while cdbus_message_iter_get_arg_type(&iterator) != DBusType.invalid {
            if let value = read(&iterator) { values.append(value) }
            cdbus_message_iter_next(&iterator)
        }
        return values
    }
}

#endif
