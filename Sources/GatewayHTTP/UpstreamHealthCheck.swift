// Active health checks of an upstream's endpoints.

/// Active health checks (`upstreams.NAME.health_check`): every `interval` seconds each endpoint gets
/// `GET path` on a connection of its own (HTTP/1.1, `Connection: close`, TLS for https upstreams),
/// driven on an event loop without blocking it. A `2xx` answer within `timeout` passes; anything else
/// (refused, reset, timeout, another status) fails. An endpoint is marked down after
/// `unhealthyThreshold` failures in a row and up again after `healthyThreshold` passes in a row;
/// a down endpoint takes no requests (unless no endpoint is available: see `UpstreamBalance`).
public struct UpstreamHealthCheck: Sendable, Hashable {
    /// Origin-form target checked (default `/healthz`).
    public var path: String
    /// Seconds between two checks of an endpoint (default 5).
    public var interval: Double
    /// Seconds a check may take, connect included (default 2).
    public var timeout: Double
    /// Passes in a row that mark a down endpoint up (default 2).
    public var healthyThreshold: Int
    /// Failures in a row that mark an up endpoint down (default 3).
    public var unhealthyThreshold: Int
    /// `Host` of the check request (default: the upstream's host header).
    public var host: String?

    /// A check of `path` (defaults as documented).
    public init(path: String = "/healthz", interval: Double = 5, timeout: Double = 2, healthyThreshold: Int = 2,
                unhealthyThreshold: Int = 3, host: String? = nil) {
        self.path = path
        self.interval = interval
        self.timeout = timeout
        self.healthyThreshold = max(1, healthyThreshold)
        self.unhealthyThreshold = max(1, unhealthyThreshold)
        self.host = host
    }
}
