// What graceful shutdown needs from a downstream connection, whatever its protocol.

import GatewayIO

/// A downstream connection of an `HTTPServer` (HTTP/1.1 or HTTP/2) living on its event loop.
protocol HTTPServerConnection: EventLoopResident {
    /// The server it belongs to.
    var context: HTTPServerContext { get }
    /// Graceful shutdown: finish what is in progress, accept nothing new (HTTP/1.1: `Connection: close`;
    /// HTTP/2: GOAWAY, RFC 9113 section 6.8), then close.
    func drain()
    /// The shutdown grace period is over: close now.
    func forceClose()
}
