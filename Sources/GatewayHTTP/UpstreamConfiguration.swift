// Configuration of one upstream (backend): its endpoints, balancing, health, and connection pool.

import GatewayIO

/// An upstream: one or more endpoints, how requests are spread over them, when an endpoint is taken
/// out, and the behaviour of the keep-alive connection pool. Durations are in seconds.
public struct UpstreamConfiguration: Sendable {
    /// One place the upstream listens.
    public struct Endpoint: Sendable, Hashable {
        /// Where to connect (a DNS name is resolved off the event loops; see `dnsRefresh`).
        public var address: SocketEndpoint
        /// For TLS upstreams: the name sent as SNI and checked against the certificate; nil takes
        /// the upstream's `tls.serverName`.
        public var serverName: String?

        /// An endpoint at `address`.
        public init(_ address: SocketEndpoint, serverName: String? = nil) {
            self.address = address
            self.serverName = serverName
        }
    }

    /// Name for logs and `HTTPAccessRecord.upstream`.
    public var name: String
    /// Where to connect: at least one endpoint.
    public var endpoints: [Endpoint]
    /// The first endpoint's address (setting it makes it the only endpoint).
    public var address: SocketEndpoint {
        get { endpoints[0].address }
        set { endpoints = [Endpoint(newValue)] }
    }
    /// How requests are spread over the endpoints (default round robin).
    public var balance: UpstreamBalance
    /// When an endpoint is taken out after connect errors, and for how long.
    public var ejection: UpstreamEjection
    /// Seconds between resolutions of DNS names while running (0: resolved once, at creation, and
    /// retried only while unresolved). Resolution runs off the event loops.
    public var dnsRefresh: Double
    /// Active health checks (nil: none, endpoints count as healthy).
    public var healthCheck: UpstreamHealthCheck?
    /// `Host` sent when the forwarded request has none (default `host:port` of the first endpoint
    /// for TCP, `localhost` for Unix).
    public var hostHeader: String?
    /// Longest time to establish a connection: 504 `upstream_connect_timeout` (default 5 s).
    public var connectTimeout: Double
    /// Longest wait for the response head after sending, and longest pause between two reads of the
    /// response: 504 `upstream_timeout` (default 60 s).
    public var responseTimeout: Double
    /// How long an idle pooled connection is kept before closing it (default 60 s; keep it below the
    /// upstream's own keep-alive timeout).
    public var idleTimeout: Double
    /// Most idle connections kept per event loop and endpoint (default 32; 0 disables reuse).
    public var maxIdlePerLoop: Int
    /// Limits for response heads.
    public var limits: HTTP1ParserLimits
    /// TLS for `https://` upstreams: the client context (peer verification, CAs) and the name sent
    /// as SNI and checked against the upstream's certificate (unless the endpoint names its own).
    /// nil: plain.
    package var tls: (context: TLSClientContext, serverName: String)?
    /// Told how every exchange ended (on the exchange's event loop: must not block), for metrics;
    /// nil: nothing is reported.
    public var observer: (@Sendable (UpstreamExchangeReport) -> Void)?

    /// A configuration with defaults and one endpoint.
    public init(name: String? = nil, address: SocketEndpoint, hostHeader: String? = nil, connectTimeout: Double = 5,
                responseTimeout: Double = 60, idleTimeout: Double = 60, maxIdlePerLoop: Int = 32,
                limits: HTTP1ParserLimits = HTTP1ParserLimits(maxHeaderBytes: 65536, maxHeaderCount: 200)) {
        self.init(name: name ?? address.description, endpoints: [Endpoint(address)], hostHeader: hostHeader,
                  connectTimeout: connectTimeout, responseTimeout: responseTimeout, idleTimeout: idleTimeout,
                  maxIdlePerLoop: maxIdlePerLoop, limits: limits)
    }

    /// A configuration with defaults and several endpoints (at least one).
    public init(name: String, endpoints: [Endpoint], balance: UpstreamBalance = .roundRobin,
                ejection: UpstreamEjection = UpstreamEjection(), dnsRefresh: Double = 30,
                healthCheck: UpstreamHealthCheck? = nil, hostHeader: String? = nil, connectTimeout: Double = 5,
                responseTimeout: Double = 60, idleTimeout: Double = 60, maxIdlePerLoop: Int = 32,
                limits: HTTP1ParserLimits = HTTP1ParserLimits(maxHeaderBytes: 65536, maxHeaderCount: 200)) {
        precondition(!endpoints.isEmpty, "an upstream needs an endpoint")
        self.name = name
        self.endpoints = endpoints
        self.balance = balance
        self.ejection = ejection
        self.dnsRefresh = dnsRefresh
        self.healthCheck = healthCheck
        self.hostHeader = hostHeader
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.idleTimeout = idleTimeout
        self.maxIdlePerLoop = maxIdlePerLoop
        self.limits = limits
    }
}
