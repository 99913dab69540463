#if os(Linux)
import ANCS
import ANCSDBus
import ANCSRuntime
import Foundation

/// One `ancs listen` per adapter: an abstract Unix socket named after the
/// adapter's address, held for the life of the process (the kernel frees it
/// when the process ends, however it ends).
final class AdapterLock: @unchecked Sendable {
    private let descriptor: Int32

    struct Failure: Error { var message: String }

    init(_ adapterAddress: String) throws(Failure) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("swift-ancs/listen/\(adapterAddress)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer[0] = 0  // abstract namespace
            for (i, byte) in name.prefix(buffer.count - 1).enumerated() { buffer[i + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + min(name.count, 106))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else {
            let busy = errno == EADDRINUSE
            Glibc.close(fd)
            throw Failure(message: busy
                ? "another ancs listen is already using the adapter \(adapterAddress); stop it first (one consumer per adapter)"
                : "cannot take the adapter lock: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    deinit { Glibc.close(descriptor) }
}
#endif
