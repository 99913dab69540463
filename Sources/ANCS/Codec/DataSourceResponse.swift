// Data Source responses (spec: "Data Source"): encoded by the NP, fragmented
// to ATT MTU − 3 bytes per GATT notification, reassembled by the NC with
// `DataSourceReassembler`.

/// An attribute tuple of either response: its AttributeID and its value.
/// The two kinds share one lookup and one merge (their code is the same).
protocol AttributeTuple {
    associatedtype ID: RawRepresentable where ID.RawValue == UInt8
    var id: ID { get }
    var value: AttributeValue { get }
    init(rawID: UInt8, value: AttributeValue)
}

extension Array where Element: AttributeTuple {
    /// The first value for `id`, if there is one.
    func value(for id: Element.ID) -> AttributeValue? {
        for attribute in self where attribute.id.rawValue == id.rawValue { return attribute.value }
        return nil
    }

    /// Takes each fetched attribute: in place of the one with its id, else after the others.
    @inline(never)
    mutating func merge(_ fetched: [Element]) {
        // A first fetch (the model's notification, a new cache entry) whose
        // IDs are distinct, as the display's are: the fetched list itself,
        // shared, where appending one by one allocated three times. A
        // repeated ID found in it starts over one by one (one loop for both).
        var shared = isEmpty
        if shared { self = fetched }
        var index = 0
        while index < fetched.count {
            let at = firstIndex(where: { $0.id.rawValue == fetched[index].id.rawValue })
            if shared {
                if at != index {
                    shared = false
                    self = []
                    index = 0
                    continue
                }
            } else if let at {
                self[at] = fetched[index]
            } else {
                append(fetched[index])
            }
            index &+= 1
        }
    }
}

extension [[UInt8]] {
    /// Whether one of these byte strings is exactly the value's bytes
    /// (AppIdentifiers: `hiddenApps`),
    /// without copying the value.
    @inline(never)
    func contains(_ value: AttributeValue) -> Bool {
        var index = 0
        while index < count {
            if AttributeValue(bytes: self[index]) == value { return true }
            index &+= 1
        }
        return false
    }
}

/// One attribute tuple of a Get Notification Attributes response.
public struct NotificationAttribute: AttributeTuple, Hashable, Sendable, CustomStringConvertible {
    public var id: NotificationAttributeID
    public var value: AttributeValue
    public init(_ id: NotificationAttributeID, _ value: AttributeValue) {
        self.id = id
        self.value = value
    }
    init(rawID: UInt8, value: AttributeValue) { self.init(NotificationAttributeID(rawValue: rawID), value) }
    public var description: String { "\(id)=\(value.count) bytes" }
}

/// One attribute tuple of a Get App Attributes response.
public struct AppAttribute: AttributeTuple, Hashable, Sendable {
    public var id: AppAttributeID
    public var value: AttributeValue
    public init(_ id: AppAttributeID, _ value: AttributeValue) {
        self.id = id
        self.value = value
    }
    init(rawID: UInt8, value: AttributeValue) { self.init(AppAttributeID(rawValue: rawID), value) }
}

/// Get Notification Attributes response (CommandID 0).
public struct NotificationAttributesResponse: Hashable, Sendable {
    public var notificationUID: NotificationUID
    public var attributes: [NotificationAttribute]

    public init(notificationUID: NotificationUID, attributes: [NotificationAttribute]) {
        self.notificationUID = notificationUID
        self.attributes = attributes
    }

    /// The first value for `id`, if the response has it.
    public subscript(id: NotificationAttributeID) -> AttributeValue? { attributes.value(for: id) }
}

/// Get App Attributes response (CommandID 1). The AppIdentifier is kept as
/// its bytes, as in `GetAppAttributes`; equality is byte equality.
public struct AppAttributesResponse: Hashable, Sendable {
    /// The AppIdentifier's bytes, without the NUL terminator.
    public var appIdentifierBytes: [UInt8]
    public var attributes: [AppAttribute]

    /// The AppIdentifier as text (invalid UTF-8 shown as U+FFFD); setting it
    /// sets its UTF-8 bytes.
    public var appIdentifier: String {
        get { String(decoding: appIdentifierBytes, as: UTF8.self) }
        set { appIdentifierBytes = Array(newValue.utf8) }
    }

    public init(appIdentifier: String, attributes: [AppAttribute]) {
        self.appIdentifierBytes = Array(appIdentifier.utf8)
        self.attributes = attributes
    }

    public init(appIdentifierBytes: [UInt8], attributes: [AppAttribute]) {
        self.appIdentifierBytes = appIdentifierBytes
        self.attributes = attributes
    }

    public subscript(id: AppAttributeID) -> AttributeValue? { attributes.value(for: id) }
}

/// A complete Data Source response.
public enum DataSourceResponse: Hashable, Sendable {
    case notificationAttributes(NotificationAttributesResponse)
    case appAttributes(AppAttributesResponse)

    /// The ATT MTU range BLE allows; `fragments(mtu:)` clamps to it.
    public static let mtuRange = 23...517

    /// The whole response as the NP sends it, before fragmentation. A value
    /// longer than 65 535 bytes (the Length field) is cut to that length.
    public func encode() -> [UInt8] {
        var bytes: [UInt8] = []
        switch self {
        case .notificationAttributes(let response):
            var size = 5
            for attribute in response.attributes { size += 3 + min(attribute.value.count, 0xFFFF) }
            bytes.reserveCapacity(size)
            bytes.append(CommandID.getNotificationAttributes.rawValue)
            appendUInt32LE(response.notificationUID.rawValue, to: &bytes)
            for attribute in response.attributes { appendTuple(attribute.id.rawValue, attribute.value, to: &bytes) }
        case .appAttributes(let response):
            bytes.append(CommandID.getAppAttributes.rawValue)
            bytes.append(contentsOf: response.appIdentifierBytes)
            bytes.append(0)
            for attribute in response.attributes { appendTuple(attribute.id.rawValue, attribute.value, to: &bytes) }
        }
        return bytes
    }

    /// The GATT notifications that carry the response at this ATT MTU: MTU − 3
    /// bytes each, the last one shorter.
    public func fragments(mtu: Int) -> [[UInt8]] {
        DataSourceResponse.fragment(encode(), mtu: mtu)
    }

    /// Splits bytes into Data Source notifications for an ATT MTU (clamped to 23…517).
    public static func fragment(_ bytes: [UInt8], mtu: Int) -> [[UInt8]] {
        let size = min(max(mtu, mtuRange.lowerBound), mtuRange.upperBound) - 3
        var fragments: [[UInt8]] = []
        fragments.reserveCapacity((bytes.count + size - 1) / size)
        var start = 0
        while start < bytes.count {
            let end = min(start + size, bytes.count)
            fragments.append(Array(bytes[start..<end]))
            start = end
        }
        return fragments
    }
}

private func appendTuple(_ id: UInt8, _ value: AttributeValue, to bytes: inout [UInt8]) {
    value.withBytes { raw in
        let length = min(raw.count, 0xFFFF)
        bytes.append(id)
        appendUInt16LE(UInt16(length), to: &bytes)
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: raw[0..<length]))
    }
}
