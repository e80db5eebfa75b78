#if canImport(Glibc)
import Glibc
#endif

/// A socket address (IPv4, IPv6 or Unix path) held as raw `sockaddr` bytes, for non-blocking connects.
struct SocketAddress: Sendable, CustomStringConvertible {
    let family: Int32
    private let storage: [UInt8]
    private let text: String

    var description: String { text }

    /// An IPv4 or IPv6 literal (no brackets), or nil when `host` is not a literal.
    init?(literal host: String, port: UInt16) {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            self.init(family: AF_INET, raw: v4, text: "\(host):\(port)")
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            self.init(family: AF_INET6, raw: v6, text: "[\(host)]:\(port)")
            return
        }
        return nil
    }

    /// A Unix socket path; nil when it does not fit `sun_path`.
    init?(unixPath path: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity, !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        self.init(family: AF_UNIX, raw: address, text: path)
    }

    private init<T>(family: Int32, raw: T, text: String) {
        self.family = family
        self.storage = withUnsafeBytes(of: raw) { Array($0) }
        self.text = text
    }

    private init(family: Int32, bytes: [UInt8], text: String) {
        self.family = family
        self.storage = bytes
        self.text = text
    }

    /// Calls `body` with the address as `sockaddr` and its length.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        storage.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// Resolves `host` with getaddrinfo (blocking: call off the connection queue).
    static func resolve(host: String, port: UInt16) -> Result<[SocketAddress], ResolveError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(ResolveError(detail: "resolve \(host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(first) }
        var addresses = [SocketAddress]()
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr, entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                addresses.append(SocketAddress(family: entry.pointee.ai_family, bytes: bytes, text: "\(host):\(port)"))
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(ResolveError(detail: "resolve \(host): no address")) : .success(addresses)
    }

    /// A failed name resolution.
    struct ResolveError: Error { let detail: String }
}
