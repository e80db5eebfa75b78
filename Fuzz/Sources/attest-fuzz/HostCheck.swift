#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An independent statement of the `Host` value grammar, `uri-host [ ":" port ]` (RFC 9110 section
/// 7.2, RFC 3986 section 3.2.2), written without looking at `HTTPHostSyntax`: the port split off at
/// the last `:` after any `]`, IPv6 literals judged by the C library's `inet_pton`, reg-names by a
/// character set.
enum HostCheck {
    static let regName = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=".utf8))
    static let hex = Set(Array("0123456789ABCDEFabcdef".utf8))

    /// Whether an accepted Host value may be accepted.
    static func isValid(_ value: [UInt8]) -> Bool {
        var host = value[...]
        let lastBracket = value.lastIndex(of: UInt8(ascii: "]")) ?? -1
        if let colon = value.lastIndex(of: UInt8(ascii: ":")), colon > lastBracket {
            let port = value[(colon + 1)...]
            guard (1...5).contains(port.count), port.allSatisfy({ (0x30...0x39).contains($0) }),
                  let n = Int(String(decoding: port, as: UTF8.self)), n <= 65535 else { return false }
            host = value[..<colon]
        }
        if host.first == UInt8(ascii: "[") {
            guard host.count > 2, host.last == UInt8(ascii: "]") else { return false }
            let inner = Array(host.dropFirst().dropLast())
            if inner[0] == UInt8(ascii: "v") || inner[0] == UInt8(ascii: "V") {
                guard let dot = inner.firstIndex(of: UInt8(ascii: ".")), dot > 1, dot < inner.count - 1 else { return false }
                return inner[1..<dot].allSatisfy { hex.contains($0) }
                    && inner[(dot + 1)...].allSatisfy { regName.contains($0) || $0 == UInt8(ascii: ":") }
            }
            guard inner.allSatisfy({ hex.contains($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return false }
            var address = in6_addr()
            return String(decoding: inner, as: UTF8.self).withCString { inet_pton(AF_INET6, $0, &address) } == 1
        }
        guard !host.isEmpty else { return false }
        var i = host.startIndex
        while i < host.endIndex {
            if host[i] == UInt8(ascii: "%") {
                guard i + 2 < host.endIndex, hex.contains(host[i + 1]), hex.contains(host[i + 2]) else { return false }
                i += 3
            } else {
                guard regName.contains(host[i]) else { return false }
                i += 1
            }
        }
        return true
    }
}
