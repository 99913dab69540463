#if os(Linux)
import CDBus
import Foundation
import Synchronization

/// A signal as received.
public struct DBusSignal: Hashable, Sendable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
}

/// Which signals a subscription wants; nil fields match anything. The same
/// rule is sent to the bus (`AddMatch`) and checked here, since one
/// connection carries every subscription.
public struct DBusMatchRule: Hashable, Sendable {
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?
    /// Matches the path itself and everything under it.
    public var pathNamespace: String?
    /// The first argument, when it is a string.
    public var arg0: String?

    public init(sender: String? = nil, interface: String? = nil, member: String? = nil,
                path: String? = nil, pathNamespace: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule in the bus's syntax.
    public var text: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let path { parts.append("path='\(path)'") }
        if let pathNamespace, pathNamespace != "/" { parts.append("path_namespace='\(pathNamespace)'") }
        if let arg0 { parts.append("arg0='\(arg0)'") }
        return parts.joined(separator: ",")
    }

    /// Whether a signal matches; a well-known sender name is left to the bus,
    /// which resolved it, since signals carry the sender's unique name.
    func matches(_ signal: DBusSignal) -> Bool {
        if let sender, sender.hasPrefix(":"), sender != signal.sender { return false }
        if let interface, interface != signal.interface { return false }
        if let member, member != signal.member { return false }
        if let path, path != signal.path { return false }
        if let pathNamespace, pathNamespace != "/",
           signal.path != pathNamespace, !signal.path.hasPrefix(pathNamespace + "/") { return false }
        if let arg0, signal.arguments.first?.string != arg0 { return false }
        return true
    }
}

/// A method call to an object this connection exports. Answer it once with
/// `reply` or `fail`, from any thread, now or later.
public struct DBusIncomingCall: Sendable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
    let respond: @Sendable (Result<[DBusValue], DBusError>) -> Void

    public func reply(_ values: [DBusValue] = []) { respond(.success(values)) }
    public func fail(_ name: String, _ message: String) { respond(.failure(DBusError(name: name, message: message))) }
}

/// A connection to a message bus, owned by one thread: every libdbus call
/// happens there. Other threads hand it work through a queue and a wake-up
/// pipe; replies and signals come back through continuations and streams.
///
/// - Method calls have a timeout and end exactly once (reply, error,
///   timeout, cancellation, or the connection closing).
/// - Each subscription is one stream of the signals matching any of its
///   rules, in the order the bus delivered them.
/// - Exported objects get their method calls on the owner thread.
/// - When the bus goes away every pending call fails with
///   `DBusError.disconnected` and every subscription's stream finishes.
public final class DBusConnection: @unchecked Sendable {
    public enum Bus: Sendable {
        case system
        case session
        /// A bus address such as `unix:path=/run/dbus/system_bus_socket`.
        case address(String)
    }

    /// The connection's unique name on the bus (":1.42").
    public let uniqueName: String

    private let raw: OpaquePointer
    private let owner = Owner()
    private let inbox = Mutex<Inbox>(Inbox())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let nextToken = Atomic<UInt64>(1)

    private struct Inbox {
        var work: [@Sendable (DBusConnection) -> Void] = []
        var closed = false
        var stopRequested = false
    }

    /// Owner-thread state; touched only from the loop.
    private final class Owner {
        struct Pending {
            var serial: UInt32
            var deadline: ContinuousClock.Instant
            var what: String
            var complete: @Sendable (Result<[DBusValue], DBusError>) -> Void
        }
        var pending: [UInt64: Pending] = [:]
        var tokenBySerial: [UInt32: UInt64] = [:]
        var subscriptions: [UInt64: (rules: [DBusMatchRule], sink: AsyncStream<DBusSignal>.Continuation)] = [:]
        var exports: [String: @Sendable (DBusIncomingCall) -> Void] = [:]
    }

    /// Connects and registers on the bus (blocking, a few milliseconds).
    public init(_ bus: Bus) throws(DBusError) {
        // libdbus is the system's, loaded now: a build needs no D-Bus headers.
        var reason = [CChar](repeating: 0, count: 512)
        guard cdbus_load(&reason, reason.count) == 1 else {
            let text = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw DBusError(name: "org.freedesktop.DBus.Error.NotSupported", message: text)
        }
        var error = CDBus.DBusError()
        cdbus_error_init(&error)
        let connection: OpaquePointer?
        switch bus {
        case .system: connection = cdbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session: connection = cdbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            connection = cdbus_connection_open_private(address, &error)
            if let connection, cdbus_bus_register(connection, &error) == 0 {
                cdbus_connection_close(connection)
                cdbus_connection_unref(connection)
                throw Self.take(&error, "registering on \(address)")
            }
        }
        guard let connection else {
            let what: String
            switch bus {
            case .system: what = "the system bus"
            case .session: what = "the session bus"
            case .address(let address): what = address
            }
            throw Self.take(&error, "connecting to \(what)")
        }
        cdbus_connection_set_exit_on_disconnect(connection, 0)
        raw = connection
        uniqueName = cdbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            cdbus_connection_close(connection)
            cdbus_connection_unref(connection)
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "pipe: \(String(cString: strerror(errno)))")
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, O_NONBLOCK)
        let thread = Thread { [self] in loop() }
        thread.name = "dbus"
        thread.start()
    }

    private static func take(_ error: inout CDBus.DBusError, _ context: String) -> DBusError {
        defer { cdbus_error_free(&error) }
        let name = error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        let message = error.message.map { String(cString: $0) } ?? ""
        return DBusError(name: name, message: "\(context): \(message)")
    }

    /// Whether the bus connection is still open.
    public var isOpen: Bool { inbox.withLock { !$0.closed } }

    /// Closes the connection: pending calls fail, subscriptions finish.
    public func close() {
        inbox.withLock { $0.stopRequested = true }
        wake()
    }

    // MARK: - Work for the owner thread

    private func submit(_ work: @escaping @Sendable (DBusConnection) -> Void) -> Bool {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.closed else { return false }
            inbox.work.append(work)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: - Method calls

    /// Calls a method and returns its reply's arguments.
    public func call(
        destination: String?, path: String, interface: String?, member: String,
        _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        let token = nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
        let what = "\(interface.map { $0 + "." } ?? "")\(member) on \(path)"
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) in
                let once = Once(continuation)
                let accepted = submit { connection in
                    connection.startCall(token: token, destination: destination, path: path, interface: interface,
                                         member: member, arguments: arguments, timeout: timeout, what: what) { once.resume($0) }
                }
                if !accepted { once.resume(.failure(.disconnected)) }
            }
        } onCancel: {
            _ = submit { connection in connection.finishCall(token, .failure(.cancelled)) }
        }
        return try result.get()
    }

    /// `org.freedesktop.DBus.Properties.Set`.
    public func setProperty(destination: String, path: String, interface: String, _ name: String, _ value: DBusValue,
                            timeout: Duration = .seconds(25)) async throws(DBusError) {
        _ = try await call(destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Set",
                           [.string(interface), .string(name), .variant(value)], timeout: timeout)
    }

    /// `org.freedesktop.DBus.Properties.GetAll`.
    public func properties(destination: String, path: String, interface: String,
                           timeout: Duration = .seconds(25)) async throws(DBusError) -> [String: DBusValue] {
        let reply = try await call(destination: destination, path: path, interface: "org.freedesktop.DBus.Properties",
                                   member: "GetAll", [.string(interface)], timeout: timeout)
        return reply.first?.dictionary ?? [:]
    }

    private final class Once: @unchecked Sendable {
        private let lock = Mutex<CheckedContinuation<Result<[DBusValue], DBusError>, Never>?>(nil)
        init(_ continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) {
            lock.withLock { $0 = continuation }
        }
        func resume(_ result: Result<[DBusValue], DBusError>) {
            let continuation = lock.withLock { value in
                defer { value = nil }
                return value
            }
            continuation?.resume(returning: result)
        }
    }

    private func startCall(token: UInt64, destination: String?, path: String, interface: String?, member: String,
                           arguments: [DBusValue], timeout: Duration, what: String,
                           complete: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        guard DBusMarshal.isObjectPath(path) else {
            complete(.failure(DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(what): not an object path")))
            return
        }
        guard let message = cdbus_message_new_method_call(destination, path, interface, member) else {
            complete(.failure(DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: what)))
            return
        }
        defer { cdbus_message_unref(message) }
        do {
            try DBusMarshal.append(arguments, to: message)
        } catch {
            complete(.failure(DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(what): \(error.message)")))
            return
        }
        var serial: UInt32 = 0
        guard cdbus_connection_send(raw, message, &serial) != 0 else {
            complete(.failure(DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: what)))
            return
        }
        owner.pending[token] = Owner.Pending(serial: serial, deadline: .now + timeout, what: what, complete: complete)
        owner.tokenBySerial[serial] = token
    }

    private func finishCall(_ token: UInt64, _ result: Result<[DBusValue], DBusError>) {
        guard let pending = owner.pending.removeValue(forKey: token) else { return }
        owner.tokenBySerial[pending.serial] = nil
        pending.complete(result)
    }

    // MARK: - Signals

    /// A stream of the signals matching any of `rules`, once the bus has
    /// accepted every rule. Finishes when the connection closes or the
    /// stream is dropped.
    public func signals(_ rules: [DBusMatchRule]) async throws(DBusError) -> AsyncStream<DBusSignal> {
        let token = nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, sink) = AsyncStream<DBusSignal>.makeStream(bufferingPolicy: .unbounded)
        // Registered before the rules reach the bus, so nothing that matches is missed.
        guard submit({ connection in connection.owner.subscriptions[token] = (rules, sink) }) else {
            sink.finish()
            throw .disconnected
        }
        sink.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.submit { connection in connection.owner.subscriptions[token] = nil }
            for rule in rules {
                Task { _ = try? await self.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                interface: "org.freedesktop.DBus", member: "RemoveMatch", [.string(rule.text)]) }
            }
        }
        for rule in rules {
            _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                               interface: "org.freedesktop.DBus", member: "AddMatch", [.string(rule.text)])
        }
        return stream
    }

    /// Emits a signal.
    public func emit(path: String, interface: String, member: String, _ arguments: [DBusValue] = []) {
        _ = submit { connection in
            guard let message = cdbus_message_new_signal(path, interface, member) else { return }
            defer { cdbus_message_unref(message) }
            guard (try? DBusMarshal.append(arguments, to: message)) != nil else { return }
            cdbus_connection_send(connection.raw, message, nil)
        }
    }

    // MARK: - Exported objects

    /// Serves method calls to `path`; `handler` runs on the owner thread and
    /// must not block (answer later through the call if it must wait).
    public func export(_ path: String, _ handler: @escaping @Sendable (DBusIncomingCall) -> Void) {
        _ = submit { connection in connection.owner.exports[path] = handler }
    }

    public func unexport(_ path: String) {
        _ = submit { connection in connection.owner.exports[path] = nil }
    }

    /// Asks the bus for a well-known name; false if someone else owns it.
    public func requestName(_ name: String) async throws(DBusError) -> Bool {
        // DBUS_NAME_FLAG_DO_NOT_QUEUE = 4; reply 1 = primary owner.
        let reply = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", member: "RequestName", [.string(name), .uint32(4)])
        return reply.first?.integer == 1
    }

    // MARK: - The loop

    private func loop() {
        var descriptor: Int32 = -1
        cdbus_connection_get_unix_fd(raw, &descriptor)
        while true {
            let (work, stop) = inbox.withLock { inbox -> ([@Sendable (DBusConnection) -> Void], Bool) in
                defer { inbox.work.removeAll() }
                return (inbox.work, inbox.stopRequested)
            }
            for item in work { item(self) }
            if stop { break }
            cdbus_connection_flush(raw)
            drainIncoming()
            if cdbus_connection_get_is_connected(raw) == 0 { break }
            expireCalls()

            var timeoutMS: Int32 = 1000
            let now = ContinuousClock.now
            for pending in owner.pending.values {
                let left = now.duration(to: pending.deadline)
                let ms = max(0, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
                timeoutMS = min(timeoutMS, ms)
            }
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, timeoutMS)
            if fds[0].revents != 0 { cdbus_connection_read_write(raw, 0) }
            if fds[1].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: 256)
                while read(wakeRead, &buffer, buffer.count) > 0 {}
            }
        }
        shutDown()
    }

    private func drainIncoming() {
        while cdbus_connection_get_dispatch_status(raw) == DBUS_DISPATCH_DATA_REMAINS {
            guard let message = cdbus_connection_pop_message(raw) else { break }
            handle(message)
            cdbus_message_unref(message)
        }
    }

    private func expireCalls() {
        let now = ContinuousClock.now
        for (token, pending) in owner.pending where pending.deadline <= now {
            finishCall(token, .failure(.timedOut(pending.what)))
        }
    }

    private func handle(_ message: OpaquePointer) {
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        switch cdbus_message_get_type(message) {
        case DBusMessageType.methodReturn, DBusMessageType.error:
            guard let token = owner.tokenBySerial[cdbus_message_get_reply_serial(message)] else { return }
            let arguments = DBusMarshal.arguments(of: message)
            if cdbus_message_get_type(message) == DBusMessageType.error {
                let name = text(cdbus_message_get_error_name(message))
                finishCall(token, .failure(DBusError(name: name, message: arguments.first?.string ?? "")))
            } else {
                finishCall(token, .success(arguments))
            }
        case DBusMessageType.signal:
            let signal = DBusSignal(sender: text(cdbus_message_get_sender(message)), path: text(cdbus_message_get_path(message)),
                                    interface: text(cdbus_message_get_interface(message)), member: text(cdbus_message_get_member(message)),
                                    arguments: DBusMarshal.arguments(of: message))
            for (_, subscription) in owner.subscriptions.sorted(by: { $0.key < $1.key })
            where subscription.rules.contains(where: { $0.matches(signal) }) {
                subscription.sink.yield(signal)
            }
        case DBusMessageType.methodCall:
            let path = text(cdbus_message_get_path(message))
            let noReply = cdbus_message_get_no_reply(message) != 0
            cdbus_message_ref(message)
            let box = MessageBox(message)
            let call = DBusIncomingCall(
                sender: text(cdbus_message_get_sender(message)), path: path,
                interface: text(cdbus_message_get_interface(message)), member: text(cdbus_message_get_member(message)),
                arguments: DBusMarshal.arguments(of: message),
                respond: { [weak self] result in
                    guard let self else { return }
                    let accepted = self.submit { connection in
                        guard let message = box.take() else { return }
                        defer { cdbus_message_unref(message) }
                        if !noReply { connection.sendReply(to: message, result) }
                    }
                    if !accepted, let message = box.take() { cdbus_message_unref(message) }
                })
            if let handler = owner.exports[path] {
                handler(call)
            } else {
                call.fail("org.freedesktop.DBus.Error.UnknownObject", "no object at \(path)")
            }
        default:
            break
        }
    }

    private func sendReply(to call: OpaquePointer, _ result: Result<[DBusValue], DBusError>) {
        let reply: OpaquePointer?
        switch result {
        case .success(let values):
            reply = cdbus_message_new_method_return(call)
            if let reply, (try? DBusMarshal.append(values, to: reply)) == nil {
                cdbus_message_unref(reply)
                sendReply(to: call, .failure(DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "reply could not be encoded")))
                return
            }
        case .failure(let error):
            reply = cdbus_message_new_error(call, error.name, error.message)
        }
        guard let reply else { return }
        cdbus_connection_send(raw, reply, nil)
        cdbus_message_unref(reply)
    }

    private func shutDown() {
        let leftover = inbox.withLock { inbox -> [@Sendable (DBusConnection) -> Void] in
            inbox.closed = true
            defer { inbox.work.removeAll() }
            return inbox.work
        }
        for item in leftover { item(self) }
        for token in Array(owner.pending.keys) { finishCall(token, .failure(.disconnected)) }
        for (_, subscription) in owner.subscriptions { subscription.sink.finish() }
        owner.subscriptions.removeAll()
        owner.exports.removeAll()
        cdbus_connection_close(raw)
        cdbus_connection_unref(raw)
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }
}

/// A retained message handed to exactly one reply.
private final class MessageBox: Sendable {
    private let address: Mutex<UInt?>
    init(_ message: OpaquePointer) { address = Mutex(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))) }
    func take() -> OpaquePointer? {
        let value = address.withLock { value in
            defer { value = nil }
            return value
        }
        return value.flatMap { OpaquePointer(bitPattern: $0) }
    }
}

#endif
