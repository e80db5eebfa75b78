/// An IP network in CIDR notation: an address and a prefix length (`10.0.0.0/8`, `2001:db8::/32`;
/// RFC 4632 section 3.1 for IPv4, RFC 4291 section 2.3 for IPv6).
///
/// Written `address/length` with a length from 0 to 32 (IPv4) or 128 (IPv6), or a bare address for
/// that one host (`/32`, `/128`). The address must be the network's first address: `10.0.0.1/8`
/// is refused (did you mean `10.0.0.0/8`?), so what is written is what is trusted. IPv6 is written
/// without brackets or zone identifier. An IPv4-mapped IPv6 network (`::ffff:10.0.0.0/104`) is the
/// IPv4 network it maps (`10.0.0.0/8`). An IPv4 network contains IPv4 addresses only (IPv4-mapped
/// peers included, see `IPAddress`), an IPv6 network IPv6 addresses only.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    /// The network's first address.
    public let address: IPAddress
    /// Leading bits that every member shares with `address` (0...32 or 0...128).
    public let prefixLength: Int
    /// The prefix as a mask over `IPAddress.high` and `.low`.
    private let maskHigh: UInt64
    private let maskLow: UInt64

    /// The network `text` denotes, or nil when it is not CIDR notation as described on the type.
    public init?(_ text: String) {
        guard case .success(let network) = CIDR.parse(text) else { return nil }
        self = network
    }

    private init(address: IPAddress, prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
        (maskHigh, maskLow) = CIDR.mask(family: address.family, prefixLength: prefixLength)
    }

    /// Whether `candidate` lies in this network (same family, same first `prefixLength` bits).
    @inline(__always) public func contains(_ candidate: IPAddress) -> Bool {
        candidate.family == address.family
            && candidate.high & maskHigh == address.high && candidate.low & maskLow == address.low
    }

    /// `10.0.0.0/8`, `2001:db8::/32`.
    public var description: String { "\(address)/\(prefixLength)" }

    /// Reads CIDR notation, saying what is wrong when it is not.
    static func parse(_ text: String) -> Result<CIDR, ConfigSyntaxError> {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let addressText = String(parts[0])
        if addressText.hasPrefix("[") {
            return .failure(ConfigSyntaxError("write IPv6 networks without brackets, like 2001:db8::/32, got \(ConfigText.quoted(text))"))
        }
        if addressText.contains("%") {
            return .failure(ConfigSyntaxError("zone identifiers (%eth0) are not allowed in networks, got \(ConfigText.quoted(text))"))
        }
        guard let parsed = IPAddress(addressText) else {
            return .failure(ConfigSyntaxError("expected an IP network like 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32, got \(ConfigText.quoted(text))"))
        }
        let writtenAsIPv6 = addressText.contains(":")
        let writtenWidth = writtenAsIPv6 ? 128 : 32
        var length = writtenWidth
        if parts.count == 2 {
            guard let n = ScalarSyntax.integer(String(parts[1])), parts[1].first != "+", parts[1].first != "-",
                  (0...writtenWidth).contains(n) else {
                return .failure(ConfigSyntaxError("the prefix length in \(ConfigText.quoted(text)) must be a number from 0 to \(writtenWidth)"))
            }
            length = n
        }
        if writtenAsIPv6 && parsed.family == .ipv4 {
            // ::ffff:a.b.c.d/n: the IPv4 network a.b.c.d/(n - 96).
            guard length >= 96 else {
                return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) mixes IPv4-mapped addresses with others: write the IPv4 network itself, like 10.0.0.0/8"))
            }
            length -= 96
        }
        let (high, low) = mask(family: parsed.family, prefixLength: length)
        let network = IPAddress(family: parsed.family, high: parsed.high & high, low: parsed.low & low)
        if network != parsed {
            return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) has bits set after the first \(length): did you mean \(network)/\(length)?"))
        }
        return .success(CIDR(address: network, prefixLength: length))
    }

    /// The mask of the first `prefixLength` bits of an address of `family`, over (high, low).
    private static func mask(family: IPAddress.Family, prefixLength n: Int) -> (UInt64, UInt64) {
        func leading(_ bits: Int) -> UInt64 { bits <= 0 ? 0 : bits >= 64 ? .max : ~(UInt64.max >> UInt64(bits)) }
        switch family {
        case .ipv4: return (0, leading(n) >> 32)  // the low 32 bits
        case .ipv6: return (leading(n), leading(n - 64))
        }
    }
}
