/// One downstream listener (`listen[N]`): an address, plain or with TLS.
///
/// YAML: either the address alone (`127.0.0.1:8080`: plain HTTP/1.1, and HTTP/2 with prior knowledge)
/// or a mapping `{address, tls}` (`{address: 0.0.0.0:8443, tls: {certificates: [...]}}`: TLS, with
/// ALPN choosing `h2` or `http/1.1`). A mapping without `tls` is the same as the plain address.
public struct ListenerConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// Where to listen (`address`; see `SocketAddress` for the syntax).
    public var address: SocketAddress
    /// TLS settings (`tls`); nil for a plain listener.
    public var tls: TLSListenerConfiguration?
    /// Whether every connection starts with a PROXY protocol header, v1 or v2 (`proxy_protocol`,
    /// default false), whose source address is then the client's.
    public var proxyProtocol: Bool

    /// Creates a listener: plain when `tls` is nil.
    public init(address: SocketAddress, tls: TLSListenerConfiguration? = nil, proxyProtocol: Bool = false) {
        self.address = address
        self.tls = tls
        self.proxyProtocol = proxyProtocol
    }

    /// A plain listener on `address`.
    public static func plain(_ address: SocketAddress) -> ListenerConfiguration {
        ListenerConfiguration(address: address)
    }

    /// Whether connections to this listener start with a TLS handshake.
    public var isTLS: Bool { tls != nil }

    /// `127.0.0.1:8080`, or `0.0.0.0:8443 (TLS 1.2+, 2 certificates)`.
    public var description: String {
        let proxy = proxyProtocol ? " (PROXY protocol)" : ""
        guard let tls else { return address.description + proxy }
        return "\(address) (\(tls.minVersion)+, \(ConfigText.plural(tls.certificates.count, "certificate")))" + proxy
    }
}
