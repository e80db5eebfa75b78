import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Precise checks for platform features a test may need, so that a skip says exactly what the
/// machine lacks and every other error stays a failure.
public enum PlatformSupport {
    /// Whether this machine can bind a TCP socket on the IPv6 loopback `[::1]` (containers without
    /// IPv6 cannot). Checked with a plain `socket`/`bind`, independent of the code under test.
    public static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in6()
        addr.sin6_family = sa_family_t(AF_INET6)
        addr.sin6_port = 0
        addr.sin6_addr = in6addr_loopback
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        return rc == 0
    }()
}
