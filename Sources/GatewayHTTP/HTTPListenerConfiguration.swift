// One listener of a server: where it binds and whether it speaks TLS.

import GatewayIO

/// Where a server listens and how: plain (HTTP/1.1, and HTTP/2 with prior knowledge) or TLS
/// (HTTP/1.1 or HTTP/2 chosen by ALPN). DESIGN.md section 5, "Listeners".
public struct HTTPListenerConfiguration: Sendable {
    /// The address to bind.
    public var endpoint: SocketEndpoint
    /// The TLS context of a TLS listener (certificates by SNI, versions, ALPN), nil for plain.
    /// The context can swap its certificates at run time (`TLSServerContext.reload`): new
    /// handshakes use the new ones, established connections keep theirs.
    package var tls: TLSServerContext?
    /// Whether every connection starts with a PROXY protocol header (v1 or v2) whose source address
    /// becomes the connection's remote address (`ProxyProtocolConnection`). Only for listeners that
    /// nothing but the load balancer can reach: the header is believed from every peer.
    public var proxyProtocol = false

    /// A plain listener on `endpoint`.
    public init(_ endpoint: SocketEndpoint) {
        self.endpoint = endpoint
        tls = nil
    }

    /// A listener on `endpoint`, with TLS when `tls` is given.
    package init(_ endpoint: SocketEndpoint, tls: TLSServerContext?) {
        self.endpoint = endpoint
        self.tls = tls
    }

    /// A plain TCP listener (see `SocketEndpoint.tcp`).
    public static func tcp(host: String, port: UInt16) -> HTTPListenerConfiguration {
        HTTPListenerConfiguration(.tcp(host: host, port: port))
    }

    /// A plain Unix socket listener (see `SocketEndpoint.unix`).
    public static func unix(path: String) -> HTTPListenerConfiguration {
        HTTPListenerConfiguration(.unix(path: path))
    }
}
