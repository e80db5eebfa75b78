/// One named upstream (`upstreams.NAME`): where to forward and how patiently.
///
/// YAML: either the URL alone (`legacy: http://127.0.0.1:8081`) or a mapping
/// `{url, connect_timeout, response_timeout, max_idle_connections, tls}` (`tls` for `https://` only).
public struct UpstreamConfiguration: Sendable, Hashable {
    /// The key under `upstreams` (letters, digits, `_`, `-`; at most 64 characters).
    public var name: String
    /// Where the upstream listens.
    public var endpoint: UpstreamEndpoint
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

    /// Creates an upstream; timeouts and pool size default as documented. `tls` is kept for an
    /// `.https` endpoint (nil there means the defaults, see `UpstreamTLSConfiguration`) and dropped
    /// for any other endpoint, so that `tls != nil` always means "connect with TLS".
    public init(name: String, endpoint: UpstreamEndpoint,
                connectTimeout: Duration = defaultConnectTimeout,
                responseTimeout: Duration = defaultResponseTimeout,
                maxIdleConnections: Int = defaultMaxIdleConnections,
                tls: UpstreamTLSConfiguration? = nil) {
        self.name = name
        self.endpoint = endpoint
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
