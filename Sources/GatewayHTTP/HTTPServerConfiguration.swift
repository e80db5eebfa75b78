// Server configuration.

import GatewayIO
import GatewayRules

/// Everything an `HTTPServer` needs besides its handler and event loops.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen (at least one), plain or TLS.
    public var listeners: [HTTPListenerConfiguration]
    /// listen(2) backlog (default 4096; the kernel caps it at `net.core.somaxconn`).
    public var backlog: Int
    /// Most connections one loop accepts per readiness event of a listener (default 64).
    public var acceptBatch: Int
    /// Parser limits for request heads, chunk lines and trailers.
    public var limits: HTTP1ParserLimits
    /// Normal-form rules for request-targets (the same rule `check-config` applies to route paths).
    public var targetPolicy: RequestTargetPolicy
    /// Downstream timeouts.
    public var timeouts: HTTPServerTimeouts
    /// Requests served on one connection before it is closed (0 = unlimited, the default).
    public var maxRequestsPerConnection: Int
    /// Queued downstream bytes above which the proxy stops reading the upstream response (and stops
    /// answering pipelined requests) until the client catches up (default 256 KiB).
    public var writeHighWatermark: Int
    /// Permission bits for Unix socket listeners, e.g. `0o660` (nil = leave the umask default).
    public var unixSocketPermissions: UInt16?
    /// Most downstream connections open at once across all listeners (0 = unlimited). At the limit
    /// the listeners stop accepting (new connections wait in the kernel's accept backlog, as with
    /// HAProxy's `maxconn`) and resume once connections close.
    public var maxConnections: Int
    /// HTTP/2 SETTINGS, abuse budgets and buffering (h2c with prior knowledge on plain listeners).
    public var http2: HTTP2Settings
    /// Seconds the listeners keep accepting after `HTTPServer.shutdown` starts (default 0: they close
    /// at once), capped by the grace period. For a handover (a new process bound to the same
    /// addresses with `SO_REUSEPORT`): the old one first steers new connections to the new one, then
    /// accepts what was already on its way (queued, or mid-handshake) and serves each such connection
    /// one request with `Connection: close`, and only then closes, so that no connection is reset.
    public var handoverSettle: Double = 0

    /// A configuration with defaults suitable for a public-facing reverse proxy.
    public init(listeners: [HTTPListenerConfiguration], backlog: Int = 4096, acceptBatch: Int = 64,
                limits: HTTP1ParserLimits = HTTP1ParserLimits(), targetPolicy: RequestTargetPolicy = RequestTargetPolicy(),
                timeouts: HTTPServerTimeouts = HTTPServerTimeouts(), maxRequestsPerConnection: Int = 0,
                writeHighWatermark: Int = 256 * 1024, unixSocketPermissions: UInt16? = nil, maxConnections: Int = 0,
                http2: HTTP2Settings = HTTP2Settings()) {
        self.listeners = listeners
        self.backlog = backlog
        self.acceptBatch = acceptBatch
        self.limits = limits
        self.targetPolicy = targetPolicy
        self.timeouts = timeouts
        self.maxRequestsPerConnection = maxRequestsPerConnection
        self.writeHighWatermark = writeHighWatermark
        self.unixSocketPermissions = unixSocketPermissions
        self.maxConnections = maxConnections
        self.http2 = http2
    }
}
