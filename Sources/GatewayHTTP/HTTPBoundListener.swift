// A listener after binding.

import GatewayIO

/// A listener after binding: what was asked and what the kernel gave.
public struct HTTPBoundListener: Sendable {
    /// The configured address.
    public let requested: SocketEndpoint
    /// The bound address as text: `127.0.0.1:54321`, `[::1]:54321` or `unix:/path`.
    public let address: String
    /// The bound TCP port (the real one when 0 was asked), nil for Unix sockets.
    public let port: UInt16?
}
