// Hop-by-hop fields (RFC 9110 section 7.6.1) and what a proxy never forwards: the one list.

/// The header fields the proxy never forwards as received, in either direction, and the
/// connection options a previous hop names in `Connection` (RFC 9110 section 7.6.1).
///
/// `fieldNames` is the one list of the code base: the request and response serializers drop these
/// names whatever a handler put in the fields, and the configuration refuses them wherever a header
/// name must reach the upstream as sent (`bind_headers`, the `headers` family names).
/// GatewayConfig cannot import this module, so `GatewayConfig.HTTPSyntax.hopByHopAndFraming` repeats
/// it; a test (`HopByHopListTests`) keeps the two equal.
public enum HopByHop {
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
    public static let fieldNames: [String] = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "http2-settings",
        "trailer", "proxy-authenticate", "proxy-authorization", "content-length", "expect",
    ]

    /// `fieldNames` as bytes, grouped by length for a quick match per field.
    private static let table = NameTable(fieldNames)

    /// Whether `name` (any case) is one of `fieldNames`.
    @inline(__always) static func isHopByHop(_ name: UnsafeRawBufferPointer) -> Bool {
        table.contains(name)
    }

    /// Removes from `headers` every field named by an option of its `Connection` fields (RFC 9110
    /// section 7.6.1: "the intermediary MUST remove the ... connection options"). Applied to the
    /// fields as received from the previous hop, before anything is added to them, so that a client
    /// can name only its own fields, never one the proxy or its handler sets afterwards. `close` and
    /// `keep-alive` are persistence options, not field names. The `Connection` fields themselves stay
    /// (they are in `fieldNames`, dropped when the message is written). Allocates nothing unless a
    /// `Connection` field names another field.
    static func removeConnectionOptions(_ headers: inout HTTPHeaders) {
        var tokens: [[UInt8]] = []
        connectionTokens(headers, into: &tokens)
        guard !tokens.isEmpty else { return }
        _ = headers.removeSlots { s, slot in isNamed(HTTPHeaders.nameBuffer(s, slot), in: tokens) }
    }

    /// Lower-cased tokens listed in the `Connection` fields of `headers` (RFC 9110 section 7.6.1),
    /// other than `close` and `keep-alive`, appended to `tokens` (nothing is allocated when there is
    /// no such token).
    static func connectionTokens(_ headers: HTTPHeaders, into tokens: inout [[UInt8]]) {
        headers.storage.withUnsafeBytes { s in
            for slot in headers.slots where headers.slotNameIs(s, slot, "connection") {
                HTTP1Syntax.forEachListElement(HTTPHeaders.valueBuffer(s, slot)) { token in
                    if !token.isEmpty && !HTTP1Syntax.equalsLowercaseLiteral(token, "close")
                        && !HTTP1Syntax.equalsLowercaseLiteral(token, "keep-alive") {
                        tokens.append(token.map(HTTP1Syntax.lower))
                    }
                    return true
                }
            }
        }
    }

    /// Whether `name` is one of the lower-cased `tokens`.
    @inline(__always) static func isNamed(_ name: UnsafeRawBufferPointer, in tokens: [[UInt8]]) -> Bool {
        for token in tokens where token.count == name.count {
            if token.withUnsafeBytes({ HTTP1Syntax.equalsCaseInsensitive($0, name) }) { return true }
        }
        return false
    }

    /// Lower-case ASCII names grouped by length: one bit test rejects most field names.
    private struct NameTable: Sendable {
        /// Bit n set when some name is n bytes long (names are shorter than 64 bytes).
        let lengths: UInt64
        /// All names back to back, in `fieldNames` order.
        let bytes: [UInt8]
        /// (start, length) of each name in `bytes`.
        let spans: [(start: Int, count: Int)]

        init(_ names: [String]) {
            var lengths: UInt64 = 0
            var bytes: [UInt8] = []
            var spans: [(start: Int, count: Int)] = []
            for name in names {
                let utf8 = Array(name.utf8)
                precondition(utf8.count < 64 && utf8.allSatisfy { HTTP1Syntax.lower($0) == $0 }, "lower-case names under 64 bytes")
                lengths |= 1 << UInt64(utf8.count)
                spans.append((bytes.count, utf8.count))
                bytes.append(contentsOf: utf8)
            }
            self.lengths = lengths
            self.bytes = bytes
            self.spans = spans
        }

        @inline(__always) func contains(_ name: UnsafeRawBufferPointer) -> Bool {
            guard name.count < 64, lengths & (1 << UInt64(name.count)) != 0 else { return false }
            return bytes.withUnsafeBytes { all in
                for span in spans where span.count == name.count {
                    var i = 0
                    while i < span.count && HTTP1Syntax.lower(name[i]) == all[span.start + i] { i += 1 }
                    if i == span.count { return true }
                }
                return false
            }
        }
    }
}
