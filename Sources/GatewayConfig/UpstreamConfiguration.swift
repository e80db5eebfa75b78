import GatewayRules

/// One named upstream (`upstreams.NAME`): where to forward and how patiently.
///
/// YAML: either the URL alone (`legacy: http://127.0.0.1:8081`) or a mapping
/// `{url | endpoints, balance, ejection, dns_refresh, health_check, connect_timeout, response_timeout,
/// max_idle_connections, tls}` (`tls` for `https://` only).
public struct UpstreamConfiguration: Sendable, Hashable {
    /// How requests are spread over several endpoints (`balance`).
    public enum Balance: String, Sendable, Hashable, CaseIterable {
        /// Each in turn (the default).
        case roundRobin = "round_robin"
        /// The one with the fewest requests in progress.
        case leastRequest = "least_request"
    }

    /// Passive ejection after consecutive connect errors (`ejection`).
    public struct Ejection: Sendable, Hashable {
        /// Connect errors in a row that eject an endpoint (`consecutive_errors`, default 5, 0..1000; 0: never).
        public var consecutiveErrors: Int
        /// First ejection time (`base_time`, default 10s); doubled by each ejection in a row.
        public var baseTime: Duration
        /// Longest ejection time (`max_time`, default 5m, at least `base_time`).
        public var maxTime: Duration

        /// A policy (defaults as documented).
        public init(consecutiveErrors: Int = 5, baseTime: Duration = .seconds(10), maxTime: Duration = .seconds(300)) {
            self.consecutiveErrors = consecutiveErrors
            self.baseTime = baseTime
            self.maxTime = maxTime
        }
    }

    /// Active health checks (`health_check`).
    public struct HealthCheck: Sendable, Hashable {
        /// Origin-form path requested with GET (`path`, default `/healthz`, normal form).
        public var path: String
        /// Between two checks of an endpoint (`interval`, default 5s, 100ms..1h).
        public var interval: Duration
        /// One check, connect included (`timeout`, default 2s, 10ms..1m, at most `interval`).
        public var timeout: Duration
        /// Passes in a row that bring a down endpoint back (`healthy_threshold`, default 2, 1..100).
        public var healthyThreshold: Int
        /// Failures in a row that take an endpoint down (`unhealthy_threshold`, default 3, 1..100).
        public var unhealthyThreshold: Int

        /// A check (defaults as documented).
        public init(path: String = "/healthz", interval: Duration = .seconds(5), timeout: Duration = .seconds(2),
                    healthyThreshold: Int = 2, unhealthyThreshold: Int = 3) {
            self.path = path
            self.interval = interval
            self.timeout = timeout
            self.healthyThreshold = healthyThreshold
            self.unhealthyThreshold = unhealthyThreshold
        }
    }

    /// The key under `upstreams` (letters, digits, `_`, `-`; at most 64 characters).
    public var name: String
    /// Where the upstream listens: the first of `endpoints`.
    public var endpoint: UpstreamEndpoint
    /// Every endpoint (`url` alone, or the `endpoints` list; 1..64, one scheme, no duplicates).
    public var endpoints: [UpstreamEndpoint]
    /// How requests are spread over the endpoints (default round robin).
    public var balance: Balance
    /// Passive ejection (defaults as `Ejection`).
    public var ejection: Ejection
    /// How often DNS names are resolved again while running (`dns_refresh`, default 30s, 0 or
    /// 1s..1h; 0: only while unresolved).
    public var dnsRefresh: Duration
    /// Active health checks, nil when not configured.
    public var healthCheck: HealthCheck?
    /// Longest wait for a TCP / Unix connection to be established (default 2s, 1ms...1m).
    public var connectTimeout: Duration
    /// Longest wait from the end of the forwarded request to the upstream's response head
    /// (default 30s, 1ms...1h).
    public var responseTimeout: Duration
    /// Keep-alive connections kept open to this upstream when idle (default 64, 0...4096; 0 closes
    /// every connection after its response).
    public var maxIdleConnections: Int
    /// TLS settings: non-nil exactly when `endpoint` is `.https` (the defaults when `tls` was not
    /// written: system trust store, the URL host as server name, verification on); nil otherwise.
    public var tls: UpstreamTLSConfiguration?

    /// Default `connect_timeout`.
    public static let defaultConnectTimeout: Duration = .seconds(2)
    /// Default `response_timeout`.
    public static let defaultResponseTimeout: Duration = .seconds(30)
    /// Default `max_idle_connections`.
    public static let defaultMaxIdleConnections = 64
    /// Default `dns_refresh`.
    public static let defaultDNSRefresh: Duration = .seconds(30)

    /// The DNS names among the endpoints (host names, not IP literals or Unix paths), in order, each once.
    public var hostNames: [String] {
        var names: [String] = []
        for e in endpoints {
            guard let host = e.host, NetworkSyntax.ipv4(host) == nil, NetworkSyntax.ipv6(host) == nil, !names.contains(host) else { continue }
            names.append(host)
        }
        return names
    }

    /// Creates an upstream; timeouts and pool size default as documented. `tls` is kept for an
    /// `.https` endpoint (nil there means the defaults, see `UpstreamTLSConfiguration`) and dropped
    /// for any other endpoint, so that `tls != nil` always means "connect with TLS".
    public init(name: String, endpoint: UpstreamEndpoint,
                connectTimeout: Duration = defaultConnectTimeout,
                responseTimeout: Duration = defaultResponseTimeout,
                maxIdleConnections: Int = defaultMaxIdleConnections,
                tls: UpstreamTLSConfiguration? = nil,
                endpoints: [UpstreamEndpoint]? = nil, balance: Balance = .roundRobin, ejection: Ejection = Ejection(),
                dnsRefresh: Duration = defaultDNSRefresh, healthCheck: HealthCheck? = nil) {
        self.name = name
        self.endpoint = endpoint
        self.endpoints = endpoints ?? [endpoint]
        self.balance = balance
        self.ejection = ejection
        self.dnsRefresh = dnsRefresh
        self.healthCheck = healthCheck
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.maxIdleConnections = maxIdleConnections
        if case .https(let host, _) = endpoint {
            self.tls = tls ?? UpstreamTLSConfiguration(serverName: host)
        } else {
            self.tls = nil
        }
    }
}
