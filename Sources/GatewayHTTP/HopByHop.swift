// What the proxy does with hop-by-hop fields (RFC 9110 section 7.6.1).

import GatewayRules

/// What the proxy does with the fields it never forwards (`GatewayRules.HopByHopFields.names`, the
/// one list of the code base) and with the connection options a previous hop names in `Connection`
/// (RFC 9110 section 7.6.1).
public enum HopByHop {
    /// The fields never forwarded as received (`HopByHopFields.names`).
    public static var fieldNames: [String] { HopByHopFields.names }

    /// `fieldNames` as bytes, grouped by length for a quick match per field.
    private static let table = NameTable(HopByHopFields.names)

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
    package static func removeConnectionOptions(_ headers: inout HTTPHeaders) {
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
