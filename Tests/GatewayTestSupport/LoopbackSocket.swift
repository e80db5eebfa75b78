import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client socket to 127.0.0.1, for tests that need a raw connection the test holds
/// itself (a client that never speaks, one that reads slowly).
public enum LoopbackSocket {
    /// Connects to 127.0.0.1:`port` (optionally with a small receive buffer, in bytes) and returns
    /// the descriptor, which the caller closes.
    /// - Throws: `ChildProcessError.notReady` when the connect fails.
    public static func connect(port: UInt16, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let error = errno
            close(fd)
            throw ChildProcessError.notReady("connect failed: \(error)")
        }
        return fd
    }
}
