// A whole request: head, decoded body, trailers.

import GatewayIO

/// A complete request as the handler receives it: head, the whole decoded body, trailer fields.
///
/// Handed over only once every byte is in (DESIGN.md section 5: nothing touches the store before).
public struct HTTPRequest: Sendable {
    /// Method, target, version, header fields (as received, hop-by-hop fields included).
    public var head: HTTPRequestHead
    /// The body, decoded (de-chunked); empty when there was none.
    public var body: [UInt8]
    /// Trailer fields of a chunked body (RFC 9112 section 7.1.2); empty otherwise.
    public var trailers: HTTPHeaders
    /// The downstream connection.
    public var connection: HTTPConnectionInfo

    /// A request from parts.
    public init(head: HTTPRequestHead, body: [UInt8] = [], trailers: HTTPHeaders = HTTPHeaders(),
                connection: HTTPConnectionInfo) {
        self.head = head
        self.body = body
        self.trailers = trailers
        self.connection = connection
    }
}
