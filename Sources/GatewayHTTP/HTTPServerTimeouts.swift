// Downstream timeouts.

import GatewayIO

/// Downstream timeouts, in seconds. Each fires up to `EventLoopGroup.timerResolution` late.
public struct HTTPServerTimeouts: Sendable, Hashable {
    /// From the first byte of a request (or from accept, for the first request) until its header
    /// section is complete. Expiry with bytes received: 408 `header_timeout` and close; with nothing
    /// received on a fresh connection: silent close. Default 10 s.
    public var headerRead: Double
    /// From the end of a request's header section until its body is complete (the last Content-Length
    /// byte, or the chunked body's last chunk and trailer section): one deadline for the whole body,
    /// never restarted by the bytes that arrive. Expiry: 408 `body_timeout` and close. Default 30 s.
    public var bodyRead: Double
    /// Keep-alive: how long an idle connection waits for its next request before a silent close. Default 60 s.
    public var idle: Double
    /// Longest time the client may take to accept bytes we have queued (no write progress): close. Default 60 s.
    public var write: Double
    /// After answering with `Connection: close`, how long unread input is drained (so the response is
    /// not destroyed by a TCP reset) before the socket is closed. Default 2 s.
    public var linger: Double
    /// From accept until the TLS handshake is complete, on TLS listeners: close (counted as a failed
    /// handshake). Default 10 s.
    public var tlsHandshake: Double

    /// Timeouts with the given values.
    public init(headerRead: Double = 10, bodyRead: Double = 30, idle: Double = 60, write: Double = 60, linger: Double = 2,
                tlsHandshake: Double = 10) {
        self.tlsHandshake = tlsHandshake
        self.headerRead = headerRead
        self.bodyRead = bodyRead
        self.idle = idle
        self.write = write
        self.linger = linger
    }
}
