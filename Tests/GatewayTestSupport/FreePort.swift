import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Finds a free TCP port on 127.0.0.1 by binding port 0 and reading the port the kernel chose.
public enum FreePort {
    /// A port that was free a moment ago (the socket is closed before returning).
    public static func allocate() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket() failed")
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(bound == 0, "bind() failed")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Waits until something accepts TCP connections on 127.0.0.1:`port` (or the deadline passes).
    /// - Returns: true when a connection succeeded.
    @discardableResult
    public static func waitUntilListening(_ port: UInt16, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if rc == 0 { return true }
            usleep(20_000)
        }
        return false
    }
}

/// A loopback TCP port that nothing can answer on: a socket bound to 127.0.0.1 port 0 that never
/// listens, held open as long as this value lives. Connecting to it is refused at once, and no other
/// process can take the port meanwhile (unlike a port picked by bind-then-close, which a child server
/// started by another test may take a moment later).
public final class ReservedPort: @unchecked Sendable {  // immutable after init
    /// The port (127.0.0.1).
    public let port: UInt16
    private let fd: Int32

    /// - Throws: `SetupFailure` when the socket cannot be made.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SetupFailure("socket() failed: errno \(errno)") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard bound == 0, named == 0 else {
            close(fd)
            throw SetupFailure("bind/getsockname on 127.0.0.1:0 failed: errno \(errno)")
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
    }

    deinit { close(fd) }
}
