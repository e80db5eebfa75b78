// The outcome of one downstream TLS handshake, for counters and logs.

/// What happened to the TLS handshake of one accepted connection, reported to
/// `HTTPHandler.tlsHandshakeFinished(_:)` (on the connection's event loop) so the embedding
/// application can count handshakes and failures and log failures at a bounded rate.
public struct TLSHandshakeReport: Sendable {
    /// The peer (`1.2.3.4:5678`, `[::1]:5678`).
    public var remoteAddress: String
    /// The listener (`0.0.0.0:8443`).
    public var localAddress: String
    /// The negotiated version (`TLSv1.2`, `TLSv1.3`) when the handshake succeeded.
    public var version: String?
    /// The ALPN protocol chosen (`h2`, `http/1.1`), nil when the client offered none we speak.
    public var alpn: String?
    /// Whether the session was resumed (ticket or session cache).
    public var resumed: Bool
    /// Why it failed (OpenSSL's reason, `timeout`, `closed` when the peer went away, `draining`),
    /// nil on success.
    public var failure: String?
    /// `EventLoop.index` of the loop the connection lives on (the hook runs on it).
    public var loopIndex: Int

    /// Whether the handshake completed.
    public var succeeded: Bool { failure == nil }
}
