// What the server knows about the downstream connection a request arrived on.

import GatewayIO

/// Facts about the downstream connection of a request (for access logs, `X-Forwarded-For`, rate limits).
///
/// Immutable and shared by reference: every request, access record and handler call of a
/// connection holds the same instance (one retain per copy instead of one per string).
public final class HTTPConnectionInfo: Sendable {
    /// Unique (per process) connection number, counting from 1.
    public let id: UInt64
    /// The peer: `1.2.3.4:5678`, `[::1]:5678`, or `unix:` for a Unix socket peer.
    public let remoteAddress: String
    /// The listener it arrived on: `127.0.0.1:8080`, `[::]:8080` or `unix:/path`.
    public let localAddress: String
    /// Whether the connection is TLS.
    public let isSecure: Bool
    /// The protocol spoken on the connection: `"h1"` (HTTP/1.x, RFC 9112) or `"h2"` (HTTP/2, RFC 9113;
    /// h2c with prior knowledge, or h2 after TLS ALPN).
    public let protocolName: String
    /// The negotiated TLS version (`TLSv1.2`, `TLSv1.3`), nil on plain connections.
    public let tlsVersion: String?
    /// The host part of `remoteAddress` (`1.2.3.4`, `::1` without brackets, `unix` for a Unix socket
    /// peer), computed once per connection (e.g. for `X-Forwarded-For` on every request).
    public let remoteHost: String
    /// `EventLoop.index` of the loop the connection lives on: every handler call for its requests
    /// runs on that loop, so a handler can keep per-loop state (caches, counters) without a lock
    /// shared across loops.
    public let loopIndex: Int

    /// Info from parts.
    public init(id: UInt64, remoteAddress: String, localAddress: String, isSecure: Bool = false,
                protocolName: String = "h1", tlsVersion: String? = nil, loopIndex: Int = 0) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.localAddress = localAddress
        self.isSecure = isSecure
        self.protocolName = protocolName
        self.tlsVersion = tlsVersion
        self.loopIndex = loopIndex
        remoteHost = HTTPConnectionInfo.host(of: remoteAddress)
    }

    /// The same connection speaking `protocolName` (`"h1"` or `"h2"`): e.g. once the HTTP/2 preface
    /// or ALPN `h2` decided it.
    package func speaking(_ protocolName: String) -> HTTPConnectionInfo {
        HTTPConnectionInfo(id: id, remoteAddress: remoteAddress, localAddress: localAddress, isSecure: isSecure,
                           protocolName: protocolName, tlsVersion: tlsVersion, loopIndex: loopIndex)
    }

    /// The host part of `host:port`, `[v6]:port` or a Unix socket description.
    /// Scans the UTF-8 bytes (once per connection; `Character` scanning cost 3k instructions here).
    public static func host(of address: String) -> String {
        let bytes = address.utf8
        if bytes.first == 0x5B, let end = bytes.firstIndex(of: 0x5D) {  // "[" ... "]"
            return String(address[bytes.index(after: bytes.startIndex)..<end])
        }
        if let colon = bytes.lastIndex(of: 0x3A), bytes.firstIndex(of: 0x3A) == colon {
            return String(address[..<colon])
        }
        return address
    }
}
