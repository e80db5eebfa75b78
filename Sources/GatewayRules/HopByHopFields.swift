// Hop-by-hop fields (RFC 9110 section 7.6.1) and what a proxy never forwards: the one list.

/// The header fields the proxy never forwards as received, in either direction: the one list of
/// the code base. The proxy core drops these names whatever a handler put in the fields
/// (`GatewayHTTP.HopByHop`), and the configuration refuses them wherever a header name must reach
/// the upstream as sent (`bind_headers`, the `headers` family names).
public enum HopByHopFields {
    /// Lower-case names of the fields never forwarded as received:
    /// - connection-specific fields (RFC 9110 section 7.6.1, RFC 9113 section 8.2.2): `connection`,
    ///   `keep-alive`, `proxy-connection`, `te` (the proxy relays no response trailers, so even
    ///   `TE: trailers` would be a false promise), `transfer-encoding`, `upgrade` (nothing is tunnelled)
    ///   and `http2-settings` (RFC 7540 section 3.2.1: connection-specific by definition, so dropped
    ///   even when `Connection` does not list it);
    /// - `trailer` (bodies are re-framed with a Content-Length, so announced trailers never follow);
    /// - `proxy-authenticate`, `proxy-authorization` (RFC 9110 sections 11.7.1 and 11.7.2: addressed to
    ///   the proxy, never the origin's business);
    /// - `content-length` (every message is re-framed here, RFC 9112 section 6) and `expect` (the
    ///   proxy answers `100-continue` itself, RFC 9110 section 10.1.1).
    public static let names: [String] = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "http2-settings",
        "trailer", "proxy-authenticate", "proxy-authorization", "content-length", "expect",
    ]
}
