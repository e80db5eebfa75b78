#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Strict readings of hosts, ports and socket paths, shared by every address grammar: listeners and
/// upstreams (`GatewayConfig`) and Redis URLs (`RedisURL`, for the configuration and `attestctl`).
public enum NetworkSyntax {
    /// Canonical dotted-quad form of a strict IPv4 literal (four decimal octets 0-255, no sign, no
    /// leading zeros), or nil.
    public static func ipv4(_ text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        for part in parts {
            guard let n = decimal(part), n <= 255 else { return nil }
        }
        return text
    }

    /// Canonical (RFC 5952) form of an IPv6 literal without brackets, or nil. Uses the C library's
    /// `inet_pton` / `inet_ntop`; zone identifiers (`%eth0`) are refused.
    public static func ipv6(_ text: String) -> String? {
        guard !text.contains("%"), text.contains(":") else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `text` is a DNS host name (RFC 1123 section 2.1: labels of letters, digits and `-`,
    /// 1-63 bytes, not starting or ending with `-`; at most 253 bytes) that is not all digits and dots.
    public static func isHostName(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                  label.utf8.allSatisfy({ URISyntax.isUnreserved($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: "~") })
            else { return false }
        }
        return !text.allSatisfy { $0 == "." || ($0.isASCII && $0.isNumber) }
    }

    /// A port number 0-65535 written in decimal (no sign, no leading zeros), or nil.
    public static func port(_ text: Substring) -> UInt16? {
        guard let n = decimal(text), n <= 65535 else { return nil }
        return UInt16(n)
    }

    /// A non-negative decimal integer: digits only, no sign, no leading zeros except `0` itself, at
    /// most 18 digits; nil otherwise.
    public static func decimal<S: StringProtocol>(_ text: S) -> Int? {
        let bytes = text.utf8
        guard let first = bytes.first, bytes.count <= 18, !(first == UInt8(ascii: "0") && bytes.count > 1) else { return nil }
        var value = 0
        for b in bytes {
            guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(b - UInt8(ascii: "0"))
        }
        return value
    }

    /// Splits `host:port` / `[v6]:port` into host text (brackets removed) and port text; nil when the
    /// shape is wrong. `bracketed` tells whether the host was in brackets.
    public static func splitHostPort(_ text: Substring) -> (host: Substring, port: Substring?, bracketed: Bool)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, nil, true) }
            guard rest.hasPrefix(":") else { return nil }
            return (host, rest.dropFirst(), true)
        }
        let colons = text.filter { $0 == ":" }.count
        if colons == 0 { return (text, nil, false) }
        if colons > 1 { return nil }  // an IPv6 literal without brackets, or junk
        let colon = text.firstIndex(of: ":")!  // counted above: exactly one
        return (text[..<colon], text[text.index(after: colon)...], false)
    }

    /// `path` made absolute against `baseDirectory` (when relative) and normalized lexically
    /// (`.`, `..` and repeated `/` removed; symbolic links are not resolved).
    public static func resolvePath(_ path: String, baseDirectory: String) -> String {
        let joined = path.hasPrefix("/") ? path : baseDirectory + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast(); continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Longest Unix socket path that fits `sockaddr_un.sun_path` with its terminating NUL (Linux), in bytes.
    public static let maximumUnixPathBytes = 107
}
