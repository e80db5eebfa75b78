/// Downstream timeouts (`timeouts`); upstream ones live on each upstream.
public struct TimeoutsConfiguration: Sendable, Hashable {
    /// Longest time to receive a complete request head (default 10s, 100ms...5m); then 408.
    public var header: Duration
    /// Longest time to receive a complete request body, from the end of the request head to the end of
    /// the body, however the bytes trickle in (default 30s, 100ms...1h); then 408.
    public var body: Duration
    /// Longest idle time of a keep-alive connection between requests (default 60s, 1s...1h).
    public var idle: Duration
    /// Longest time for the TLS handshake on a TLS listener, from accept to the end of the handshake
    /// (`tls_handshake`; default 10s, 100ms...5m); then the connection is closed without an answer.
    /// Unused without TLS listeners (check-config warns when it is set anyway).
    public var tlsHandshake: Duration
    /// On SIGTERM: how long in-flight requests may finish after the listeners close (default 30s, 0...10m).
    public var drain: Duration

    /// Creates the timeouts; each defaults as documented.
    public init(header: Duration = .seconds(10), body: Duration = .seconds(30), idle: Duration = .seconds(60), drain: Duration = .seconds(30),
                tlsHandshake: Duration = defaultTLSHandshake) {
        self.header = header
        self.body = body
        self.idle = idle
        self.drain = drain
        self.tlsHandshake = tlsHandshake
    }

    /// Default `tls_handshake`.
    public static let defaultTLSHandshake: Duration = .seconds(10)
}
