import Foundation
import GatewayRules

/// Strict readings of hosts, ports and file paths shared by listener, upstream and store addresses.
enum NetworkSyntax {
    /// Canonical dotted-quad form of a strict IPv4 literal (four decimal octets 0-255, no leading zeros),
    /// or nil.
    static func ipv4(_ text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        for part in parts {
            guard let n = ScalarSyntax.integer(String(part)), part.first != "+", part.first != "-", (0...255).contains(n) else { return nil }
        }
        return text
    }

    /// Canonical (RFC 5952) form of an IPv6 literal without brackets, or nil. Uses the C library's
    /// `inet_pton` / `inet_ntop`; zone identifiers (`%eth0`) are refused.
    static func ipv6(_ text: String) -> String? {
        guard !text.contains("%"), text.contains(":") else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `text` is a DNS host name (RFC 1123: labels of letters, digits and `-`, 1-63 bytes, not
    /// starting or ending with `-`; at most 253 bytes) that is not all digits and dots.
    static func isHostName(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                  label.utf8.allSatisfy({ URISyntax.isUnreserved($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: "~") })
            else { return false }
        }
        return !text.allSatisfy { $0 == "." || ($0.isASCII && $0.isNumber) }
    }

    /// A port number 0-65535 written in decimal, or nil.
    static func port(_ text: Substring) -> UInt16? {
        guard let n = ScalarSyntax.integer(String(text)), text.first != "+", text.first != "-", (0...65535).contains(n) else { return nil }
        return UInt16(n)
    }

    /// Splits `host:port` / `[v6]:port` into host text (brackets removed) and port text; nil when the
    /// shape is wrong. `bracketed` tells whether the host was in brackets.
    static func splitHostPort(_ text: Substring) -> (host: Substring, port: Substring?, bracketed: Bool)? {
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
    static func resolvePath(_ path: String, baseDirectory: String) -> String {
        let joined = path.hasPrefix("/") ? path : baseDirectory + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast(); continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Longest Unix socket path that fits `sockaddr_un.sun_path` with its terminating NUL (Linux).
    static let maximumUnixPathBytes = 107
}
