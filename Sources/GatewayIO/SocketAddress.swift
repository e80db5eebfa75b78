// Socket addresses for listeners and upstreams: IPv4, IPv6 (getaddrinfo), Unix domain paths.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A resolved socket address (sockaddr_in, sockaddr_in6 or sockaddr_un) ready for bind/connect.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage = sockaddr_storage()
    package var length: socklen_t = 0

    /// Address family (AF_INET, AF_INET6, AF_UNIX).
    package var family: Int32 { Int32(storage.ss_family) }
    package var isUnix: Bool { family == AF_UNIX }

    /// Errors building an address.
    package enum Failure: Error, CustomStringConvertible {
        case resolution(host: String, message: String)
        case pathTooLong(String)

        package var description: String {
            switch self {
            case .resolution(let host, let message): return "cannot resolve \(host): \(message)"
            case .pathTooLong(let path): return "unix socket path too long (max 107 bytes): \(path)"
            }
        }
    }

    /// Resolves `host` (numeric IPv4/IPv6 or a name, blocking getaddrinfo: call at startup only) and `port`.
    /// `passive` asks for a bind address. The first result is used.
    package static func resolve(host: String, port: UInt16, passive: Bool) throws -> SocketAddress {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var result: UnsafeMutablePointer<addrinfo>?
        let h = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(h.isEmpty ? nil : h, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            let message = String(cString: gai_strerror(rc))
            throw Failure.resolution(host: host, message: message)
        }
        defer { freeaddrinfo(result) }
        var address = SocketAddress()
        guard let ai = first.pointee.ai_addr else { throw Failure.resolution(host: host, message: "no address") }
        let len = Int(first.pointee.ai_addrlen)
        withUnsafeMutableBytes(of: &address.storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: ai, count: min(len, dst.count)))
        }
        address.length = socklen_t(min(len, MemoryLayout<sockaddr_storage>.size))
        return address
    }

    /// A numeric IPv4 or IPv6 address (no brackets, no name resolution), or nil when `host` is not
    /// a literal.
    package static func literal(host: String, port: UInt16) -> SocketAddress? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST
        return try? resolveAll(host: host, port: port, hints: hints).first
    }

    /// Every address of `host` (a name or a literal; blocking getaddrinfo: call off the event loops),
    /// in the resolver's order.
    /// - Throws: `Failure.resolution` when nothing resolves.
    package static func resolveAll(host: String, port: UInt16) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        return try resolveAll(host: host, port: port, hints: hints)
    }

    private static func resolveAll(host: String, port: UInt16, hints: addrinfo) throws -> [SocketAddress] {
        var hints = hints
        var result: UnsafeMutablePointer<addrinfo>?
        let h = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let rc = getaddrinfo(h, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw Failure.resolution(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let ai = entry.pointee.ai_addr, entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                var address = SocketAddress()
                let len = Int(entry.pointee.ai_addrlen)
                withUnsafeMutableBytes(of: &address.storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: ai, count: min(len, dst.count)))
                }
                address.length = socklen_t(min(len, MemoryLayout<sockaddr_storage>.size))
                addresses.append(address)
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw Failure.resolution(host: host, message: "no address") }
        return addresses
    }

    /// A Unix domain socket address.
    package static func unix(path: String) throws -> SocketAddress {
        var address = SocketAddress()
        var un = sockaddr_un()
        un.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: un.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { throw Failure.pathTooLong(path) }
        withUnsafeMutableBytes(of: &un.sun_path) { dst in
            dst.copyBytes(from: bytes)
            dst[bytes.count] = 0
        }
        withUnsafeMutableBytes(of: &address.storage) { dst in
            withUnsafeBytes(of: un) { dst.copyMemory(from: $0) }
        }
        address.length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return address
    }

    private static func string(_ cString: [CChar]) -> String {
        String(decoding: cString.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Calls `body` with a `sockaddr` pointer to this address.
    package func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// The TCP port (host order), or nil for Unix sockets.
    package var port: UInt16? {
        switch family {
        case AF_INET:
            return withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.load(as: sockaddr_in.self).sin_port) }
        case AF_INET6:
            return withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.load(as: sockaddr_in6.self).sin6_port) }
        default:
            return nil
        }
    }

    /// `1.2.3.4:80`, `[::1]:80` or `unix:<path>`.
    package var description: String {
        switch family {
        case AF_INET:
            // Written here rather than with inet_ntop, which formats with sprintf: this runs for every
            // accepted connection (its remote address).
            let a = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
            let v = UInt32(bigEndian: a.sin_addr.s_addr)
            var text = [UInt8]()
            text.reserveCapacity(21)
            for shift: UInt32 in [24, 16, 8, 0] {
                DecimalText.append(Int(v >> shift & 0xFF), to: &text)
                text.append(shift == 0 ? 0x3A : 0x2E)  // ":" after the last octet, "." between
            }
            DecimalText.append(Int(UInt16(bigEndian: a.sin_port)), to: &text)
            return String(decoding: text, as: UTF8.self)
        case AF_INET6:
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            var a = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &a.sin6_addr, &buffer, socklen_t(buffer.count))
            return "[\(SocketAddress.string(buffer))]:\(UInt16(bigEndian: a.sin6_port))"
        case AF_UNIX:
            let path: String = withUnsafeBytes(of: storage) { raw in
                let un = raw.load(as: sockaddr_un.self)
                return withUnsafeBytes(of: un.sun_path) { p in
                    let bytes = p.prefix { $0 != 0 }
                    return String(decoding: bytes, as: UTF8.self)
                }
            }
            return "unix:\(path)"
        default:
            return "unknown"
        }
    }
}
