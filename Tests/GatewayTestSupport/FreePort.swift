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

/// Child servers that cannot bind port 0 and report the port they got (redis-server: `--port 0`
/// turns TCP off) start on a port picked by bind-then-close. Another process may take that port in
/// between; so the start is checked: the child must be listening *and* be the process answering
/// there (`owns`), else it is stopped and the start retried on a new port.
public enum FreePortServer {
    /// Starts `launch(port)` on free ports until `owns(port, child)` holds (at most `attempts` ports).
    /// - Returns: the port and the child.
    /// - Throws: `SetupFailure` with the last child's output when no attempt succeeded.
    public static func start(attempts: Int = 5, _ launch: (UInt16) throws -> ChildProcess,
                             owns: (UInt16, ChildProcess) -> Bool) throws -> (port: UInt16, child: ChildProcess) {
        var output = ""
        for _ in 0..<attempts {
            let port = FreePort.allocate()
            let child = try launch(port)
            if FreePort.waitUntilListening(port), child.isRunning, owns(port, child) { return (port, child) }
            output = child.output
            child.stop(signal: SIGKILL, grace: 1)
        }
        throw SetupFailure("no server of ours listening after \(attempts) ports: \(output)")
    }

    /// Whether the redis-server answering on 127.0.0.1:`port` is `child` (`INFO server` reports its
    /// `process_id`).
    public static func isRedis(_ child: ChildProcess, on port: UInt16) -> Bool {
        guard let info = try? ChildProcess.run("redis-cli", ["-p", String(port), "INFO", "server"]) else { return false }
        return info.output.split(whereSeparator: \.isNewline).contains { $0.trimmingCharacters(in: .whitespaces) == "process_id:\(child.pid)" }
    }
}
