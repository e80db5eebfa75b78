// What the server's shutdown needs of every downstream connection it owns.

import GatewayIO

/// A downstream connection living on an event loop (HTTP/1.1, HTTP/2, or a TLS handshake not yet
/// finished), as `HTTPServer.shutdown` sees it.
protocol DownstreamConnection: EventLoopResident {
    /// The server the connection belongs to.
    var server: HTTPServerContext { get }
    /// Graceful shutdown: finish what is in flight, accept nothing new, then close.
    func drain()
    /// The shutdown deadline passed: close now.
    func forceClose()
}
