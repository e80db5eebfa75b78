// The PROXY protocol header a load balancer sends before the client's bytes (versions 1 and 2).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A PROXY protocol header (HAProxy's "The PROXY protocol", versions 1 and 2): the address of the
/// client a load balancer accepted, sent by the balancer as the first bytes of the connection.
///
/// `parse(_:)` is strict and reads a **prefix** of the connection's bytes; it never needs bytes
/// beyond the header, so the caller can read exactly the header's length and leave the rest (a TLS
/// ClientHello, an HTTP request) in the socket.
///
/// Version 1 (text): `PROXY TCP4 <src> <dst> <sport> <dport>\r\n`, `PROXY TCP6 ...`, or
/// `PROXY UNKNOWN[anything]\r\n`; at most 107 bytes with the CRLF; single spaces; addresses of the
/// stated family (IPv4 dotted quad, IPv6 text); ports 0-65535 in decimal without leading zeros;
/// printable ASCII only. Version 2 (binary): the 12-byte signature, version 2, command `LOCAL` (0) or
/// `PROXY` (1), family and transport (`AF_INET`/`AF_INET6`/`AF_UNIX`/`UNSPEC` over `STREAM` or
/// `UNSPEC`; `DGRAM` is refused), a 16-bit length, the address block, then TLVs (type, 16-bit length,
/// value), each of which must fit exactly in the length: they are skipped (not interpreted, CRC32C not
/// checked). `LOCAL` (the balancer's own health checks), `UNKNOWN`, `UNSPEC` and `AF_UNIX` carry no
/// client address: the connection keeps its TCP peer.
public struct ProxyProtocolHeader: Sendable, Equatable {
    /// 1 (text) or 2 (binary).
    public var version: Int
    /// The client's address as `1.2.3.4:5678` or `[2001:db8::1]:5678` (the format of
    /// `HTTPConnectionInfo.remoteAddress`); nil when the header carries none (LOCAL, UNKNOWN, UNSPEC,
    /// AF_UNIX): the TCP peer stays the client.
    public var source: String?
    /// The address the client connected to, same format; nil with `source`.
    public var destination: String?

    /// What a prefix of the connection's bytes holds.
    public enum ParseResult: Sendable, Equatable {
        /// A valid start of a header: more bytes are needed.
        case incomplete
        /// A complete header of `length` bytes (the connection's data starts after it).
        case complete(ProxyProtocolHeader, length: Int)
        /// Not a valid header: close the connection. The reason is for logs.
        case invalid(String)
    }

    /// The longest version 1 header, CRLF included.
    public static let maximumV1Length = 107
    /// The version 2 signature.
    public static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    private static let v1Prefix = Array("PROXY ".utf8)

    /// Parses the start of a connection. Never reads past the header.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        guard let first = bytes.first else { return .incomplete }
        if first == UInt8(ascii: "P") { return parseV1(bytes) }
        if first == 0x0D { return parseV2(bytes) }
        return .invalid("not a PROXY protocol header")
    }

    /// `parse` over an array.
    public static func parse(_ bytes: [UInt8]) -> ParseResult {
        bytes.withUnsafeBytes { parse($0) }
    }

    // MARK: version 1

    private static func parseV1(_ b: UnsafeRawBufferPointer) -> ParseResult {
        let prefix = min(b.count, v1Prefix.count)
        for i in 0..<prefix where b[i] != v1Prefix[i] { return .invalid("not a PROXY protocol header") }
        var end: Int?
        for i in 0..<min(b.count, maximumV1Length) {
            let c = b[i]
            if c == 0x0D {
                guard i + 1 < b.count else { return .incomplete }
                guard b[i + 1] == 0x0A else { return .invalid("v1: CR not followed by LF") }
                end = i
                break
            }
            guard c >= 0x20 && c < 0x7F else { return .invalid("v1: byte \(c) in the header line") }
        }
        guard let end else {
            return b.count >= maximumV1Length ? .invalid("v1: no CRLF within \(maximumV1Length) bytes") : .incomplete
        }
        let line = Array(b[v1Prefix.count..<end])
        let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard let proto = fields.first else { return .invalid("v1: no protocol") }
        let length = end + 2
        if proto == "UNKNOWN" {
            return .complete(ProxyProtocolHeader(version: 1, source: nil, destination: nil), length: length)
        }
        guard proto == "TCP4" || proto == "TCP6" else { return .invalid("v1: protocol \(proto) is not TCP4, TCP6 or UNKNOWN") }
        guard fields.count == 5 else { return .invalid("v1: expected PROXY \(proto) <src> <dst> <sport> <dport>") }
        let family = proto == "TCP4" ? AF_INET : AF_INET6
        guard let src = address(fields[1], family: family), let dst = address(fields[2], family: family) else {
            return .invalid("v1: an address is not \(proto == "TCP4" ? "IPv4" : "IPv6")")
        }
        guard let sport = port(fields[3]), let dport = port(fields[4]) else { return .invalid("v1: a port is not 0-65535") }
        return .complete(ProxyProtocolHeader(version: 1, source: join(src, sport, family), destination: join(dst, dport, family)),
                         length: length)
    }

    /// The canonical text of `text` when it is an address of `family`.
    private static func address(_ text: String, family: Int32) -> String? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var storage = in6_addr()
        let ok = text.withCString { inet_pton(family, $0, &storage) } == 1
        guard ok else { return nil }
        return ntop(family, &storage)
    }

    private static func ntop(_ family: Int32, _ raw: UnsafeRawPointer) -> String? {
        var out = [CChar](repeating: 0, count: 64)
        guard inet_ntop(family, raw, &out, socklen_t(out.count)) != nil else { return nil }
        let text = out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: text, as: UTF8.self)
    }

    /// 0-65535, decimal, no sign, no leading zero (except `0` itself).
    private static func port(_ text: String) -> UInt16? {
        let u = Array(text.utf8)
        guard !u.isEmpty, u.count <= 5, u.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), u.count == 1 || u[0] != 0x30 else { return nil }
        guard let v = Int(text), v <= 65535 else { return nil }
        return UInt16(v)
    }

    private static func join(_ host: String, _ port: UInt16, _ family: Int32) -> String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    // MARK: version 2

    private static func parseV2(_ b: UnsafeRawBufferPointer) -> ParseResult {
        let signature = min(b.count, v2Signature.count)
        for i in 0..<signature where b[i] != v2Signature[i] { return .invalid("not a PROXY protocol header") }
        guard b.count >= 16 else { return .incomplete }
        let versionCommand = b[12]
        guard versionCommand >> 4 == 2 else { return .invalid("v2: version \(versionCommand >> 4)") }
        let command = versionCommand & 0x0F
        guard command <= 1 else { return .invalid("v2: command \(command)") }
        let family = b[13] >> 4
        let transport = b[13] & 0x0F
        let length = Int(b[14]) << 8 | Int(b[15])
        let total = 16 + length
        guard family <= 3 else { return .invalid("v2: address family \(family)") }
        guard transport <= 2 else { return .invalid("v2: transport \(transport)") }
        guard b.count >= total else { return .incomplete }
        if command == 0 {
            // LOCAL: the balancer speaking for itself (health checks); the address block is ignored.
            return .complete(ProxyProtocolHeader(version: 2, source: nil, destination: nil), length: total)
        }
        guard transport != 2 else { return .invalid("v2: datagram transport on a stream listener") }
        let addressBytes: Int
        switch family {
        case 1: addressBytes = 12
        case 2: addressBytes = 36
        case 3: addressBytes = 216
        default: addressBytes = 0
        }
        guard (family == 0) == (transport == 0) else { return .invalid("v2: family \(family) with transport \(transport)") }
        guard length >= addressBytes else { return .invalid("v2: \(length) bytes cannot hold the address block (\(addressBytes))") }
        // TLVs: each must fit exactly.
        var offset = 16 + addressBytes
        while offset < total {
            guard total - offset >= 3 else { return .invalid("v2: truncated TLV") }
            let tlvLength = Int(b[offset + 1]) << 8 | Int(b[offset + 2])
            guard offset + 3 + tlvLength <= total else { return .invalid("v2: TLV of \(tlvLength) bytes overruns the header") }
            offset += 3 + tlvLength
        }
        var header = ProxyProtocolHeader(version: 2, source: nil, destination: nil)
        switch family {
        case 1:
            var src = in_addr(), dst = in_addr()
            withUnsafeMutableBytes(of: &src) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[16..<20])) }
            withUnsafeMutableBytes(of: &dst) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[20..<24])) }
            let sport = UInt16(b[24]) << 8 | UInt16(b[25])
            let dport = UInt16(b[26]) << 8 | UInt16(b[27])
            guard let s = ntop(AF_INET, &src), let d = ntop(AF_INET, &dst) else { return .invalid("v2: unreadable address") }
            header.source = join(s, sport, AF_INET)
            header.destination = join(d, dport, AF_INET)
        case 2:
            var src = in6_addr(), dst = in6_addr()
            withUnsafeMutableBytes(of: &src) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[16..<32])) }
            withUnsafeMutableBytes(of: &dst) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[32..<48])) }
            let sport = UInt16(b[48]) << 8 | UInt16(b[49])
            let dport = UInt16(b[50]) << 8 | UInt16(b[51])
            guard let s = ntop(AF_INET6, &src), let d = ntop(AF_INET6, &dst) else { return .invalid("v2: unreadable address") }
            header.source = join(s, sport, AF_INET6)
            header.destination = join(d, dport, AF_INET6)
        default:
            break  // UNSPEC, AF_UNIX: no client address
        }
        return .complete(header, length: total)
    }
}
