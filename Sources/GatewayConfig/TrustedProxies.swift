/// The peers whose forwarding fields the gateway believes (`trusted_proxies`; DESIGN.md section 5):
/// a list of `CIDR` networks, IPv4 and IPv6.
///
/// A request whose TCP peer lies in one of the networks came through a proxy the operator runs: its
/// `X-Forwarded-For` is kept (the peer appended) and its `X-Forwarded-Proto` believed. Any other
/// peer, a Unix socket peer included, is a client like any other. Empty (the default): nobody is
/// believed.
public struct TrustedProxies: Sendable, Hashable, CustomStringConvertible {
    /// The networks, in the order written.
    public let networks: [CIDR]

    /// Trusts the peers in `networks` (default: none).
    public init(_ networks: [CIDR] = []) {
        self.networks = networks
    }

    /// Whether no peer is trusted.
    public var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` lies in one of the networks.
    public func contains(_ address: IPAddress) -> Bool {
        for network in networks where network.contains(address) { return true }
        return false
    }

    /// Whether the peer host `host` (an IP address as text without brackets, as
    /// `HTTPConnectionInfo.remoteHost` gives it) lies in one of the networks. Anything that is not an
    /// address (`unix` for a Unix socket peer) is not trusted. Parses nothing when the list is empty.
    public func contains(host: String) -> Bool {
        guard !networks.isEmpty, let address = IPAddress(host) else { return false }
        return contains(address)
    }

    /// `[10.0.0.0/8, 2001:db8::/32]`.
    public var description: String { "[" + networks.map(\.description).joined(separator: ", ") + "]" }
}
