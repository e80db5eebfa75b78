import Foundation

/// An IPv4 or IPv6 address as a number, for network membership (`CIDR`, `TrustedProxies`).
///
/// Read from text with `init?(_:)`: a dotted quad (`192.0.2.1`: four decimal octets, no leading
/// zeros) or an IPv6 address in RFC 4291 section 2.2 text form without brackets or zone identifier
/// (`2001:db8::1`). An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, RFC 4291 section 2.5.5.2: how a
/// dual-stack `[::]` listener reports IPv4 peers) is read as the IPv4 address it maps, so IPv4
/// networks match such peers.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        /// 32-bit addresses.
        case ipv4
        /// 128-bit addresses.
        case ipv6
    }

    /// IPv4 or IPv6.
    public let family: Family
    /// Bits 127...64 of an IPv6 address; 0 for IPv4.
    let high: UInt64
    /// Bits 63...0 of an IPv6 address; an IPv4 address in the low 32 bits.
    let low: UInt64

    /// Bits in an address of this family (32 or 128).
    public var bitWidth: Int { family == .ipv4 ? 32 : 128 }

    init(family: Family, high: UInt64, low: UInt64) {
        self.family = family
        self.high = high
        self.low = low
    }

    /// The address written in `text`, or nil when `text` is not an IPv4 or IPv6 address as described
    /// on the type. Allocates nothing for native strings (the C library's `inet_pton` reads the text).
    public init?(_ text: String) {
        var text = text
        let parsed: IPAddress? = text.withUTF8 { utf8 in
            guard !utf8.isEmpty, utf8.count <= 45 else { return nil }  // INET6_ADDRSTRLEN - 1
            var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)  // 48 bytes, NUL-terminated copy
            return withUnsafeMutableBytes(of: &buffer) { raw -> IPAddress? in
                raw.copyMemory(from: UnsafeRawBufferPointer(utf8))
                raw[utf8.count] = 0
                let cString = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
                if utf8.contains(UInt8(ascii: ":")) {
                    var v6 = in6_addr()
                    guard inet_pton(AF_INET6, cString, &v6) == 1 else { return nil }
                    return withUnsafeBytes(of: &v6) { IPAddress(ipv6Bytes: $0) }
                }
                var v4 = in_addr()
                guard inet_pton(AF_INET, cString, &v4) == 1 else { return nil }
                return IPAddress(family: .ipv4, high: 0, low: UInt64(UInt32(bigEndian: v4.s_addr)))
            }
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// From 16 bytes in network order; IPv4-mapped addresses become IPv4.
    private init(ipv6Bytes b: UnsafeRawBufferPointer) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        for i in 0..<8 { high = high << 8 | UInt64(b[i]) }
        for i in 8..<16 { low = low << 8 | UInt64(b[i]) }
        if high == 0 && low >> 32 == 0xFFFF {
            self.init(family: .ipv4, high: 0, low: low & 0xFFFF_FFFF)
        } else {
            self.init(family: .ipv6, high: high, low: low)
        }
    }

    /// `192.0.2.1` or the RFC 5952 form of an IPv6 address (`2001:db8::1`).
    public var description: String {
        switch family {
        case .ipv4:
            return "\(low >> 24 & 0xFF).\(low >> 16 & 0xFF).\(low >> 8 & 0xFF).\(low & 0xFF)"
        case .ipv6:
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { b in
                for i in 0..<8 { b[i] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * i)) }
                for i in 0..<8 { b[8 + i] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * i)) }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            guard inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count)) != nil else { return "?" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
