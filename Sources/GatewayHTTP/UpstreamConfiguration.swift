// Configuration of one upstream (backend) and its connection pool.

import GatewayIO

/// An upstream and the behaviour of its keep-alive connection pool. Durations are in seconds.
public struct UpstreamConfiguration: Sendable {
    /// Name for logs and `HTTPAccessRecord.upstream`.
    public var name: String
    /// Where to connect.
    public var address: SocketEndpoint
    /// `Host` sent when the forwarded request has none (default `host:port` for TCP, `localhost` for Unix).
    public var hostHeader: String?
    /// Longest time to establish a connection: 504 `upstream_connect_timeout` (default 5 s).
    public var connectTimeout: Double
    /// Longest wait for the response head after sending, and longest pause between two reads of the
    /// response: 504 `upstream_timeout` (default 60 s).
    public var responseTimeout: Double
    /// How long an idle pooled connection is kept before closing it (default 60 s; keep it below the
    /// upstream's own keep-alive timeout).
    public var idleTimeout: Double
    /// Most idle connections kept per event loop (default 32; 0 disables reuse).
    public var maxIdlePerLoop: Int
    /// Limits for response heads.
    public var limits: HTTP1ParserLimits
    /// TLS for `https://` upstreams: the client context (peer verification, CAs) and the name sent
    /// as SNI and checked against the upstream's certificate. nil: plain.
    package var tls: (context: TLSClientContext, serverName: String)?
    /// Told how every exchange ended (on the exchange's event loop: must not block), for metrics;
    /// nil: nothing is reported.
    public var observer: (@Sendable (UpstreamExchangeReport) -> Void)?

    /// A configuration with defaults.
    public init(name: String? = nil, address: SocketEndpoint, hostHeader: String? = nil, connectTimeout: Double = 5,
                responseTimeout: Double = 60, idleTimeout: Double = 60, maxIdlePerLoop: Int = 32,
                limits: HTTP1ParserLimits = HTTP1ParserLimits(maxHeaderBytes: 65536, maxHeaderCount: 200)) {
        self.name = name ?? address.description
        self.address = address
        self.hostHeader = hostHeader
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.idleTimeout = idleTimeout
        self.maxIdlePerLoop = maxIdlePerLoop
        self.limits = limits
    }
}
