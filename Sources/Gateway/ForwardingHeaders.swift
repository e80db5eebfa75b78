import GatewayConfig
import GatewayHTTP

/// The forwarding family of the request forwarded upstream: what the upstream learns about the
/// client and the scheme (DESIGN.md section 5). One rule for the whole family, decided by whether the
/// TCP peer is a trusted proxy (`trusted_proxies`):
///
/// - **Any other peer** (the default: nobody is trusted): every client-sent `Forwarded` (RFC 7239),
///   `X-Real-IP` and `X-Forwarded-*` field (`-For`, `-Proto`, `-Host`, `-Port`, `-Prefix`, ...; any
///   case, every copy) is removed, then `X-Forwarded-For: <peer>` and `X-Forwarded-Proto: https`
///   (TLS connection, `HTTPConnectionInfo.isSecure`) or `http` are set. The upstream never sees a
///   forwarding claim the gateway did not make.
/// - **A trusted peer**: its family fields are believed and pass as sent, except that
///   `X-Forwarded-For` gets the peer appended (`<its value>, <peer>`; just the peer when it sent
///   none) and `X-Forwarded-Proto` keeps its value only when it sent exactly one field reading
///   `http` or `https` (any case; forwarded lower case), otherwise the gateway's own scheme.
///
/// Runs after the fields the client named in `Connection` were removed (`HTTPForward.init`), so a
/// client cannot remove what this sets. The untrusted path allocates nothing beyond the two fields
/// it adds.
struct ForwardingHeaders: Sendable {
    /// Peers whose forwarding fields are believed.
    let trusted: TrustedProxies

    /// The client's address as the gateway derives it (what `endpoints.rate_limit` keys on and what
    /// the access log may show): the TCP peer (after any PROXY protocol header, see
    /// `HTTPConnectionInfo.remoteHost`) unless that peer is a trusted proxy; then the **rightmost
    /// untrusted hop** of `X-Forwarded-For` (every copy, in order, read from the right: each entry a
    /// trusted proxy appended is skipped; the first address no trusted network holds is the client).
    /// When every hop is trusted, the leftmost one. An entry that is not an IP address (`unknown`,
    /// garbage) ends the walk: the hop to its right, the last one a trusted proxy vouched for, is
    /// taken. Entries may carry a port (`192.0.2.1:443`, `[2001:db8::1]:443`), which is dropped.
    /// Addresses come back in canonical text (`2001:db8::1`, IPv4-mapped IPv6 as IPv4).
    func clientAddress(headers: HTTPHeaders, connection: HTTPConnectionInfo) -> String {
        let peer = connection.remoteHost
        guard trusted.contains(host: peer) else { return peer }
        var client = peer
        for value in headers.values("X-Forwarded-For").reversed() {
            for item in value.split(separator: ",").reversed() {
                guard let address = ForwardingHeaders.hopAddress(item) else { return client }
                client = address.description
                if !trusted.contains(address) { return client }
            }
        }
        return client
    }

    /// One `X-Forwarded-For` entry as an address: `addr`, `v4:port`, `[v6]` or `[v6]:port`, with
    /// optional spaces around; nil for anything else.
    static func hopAddress(_ item: Substring) -> IPAddress? {
        var text = item.drop(while: { $0 == " " || $0 == "\t" })
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        func isPort(_ p: Substring) -> Bool { !p.isEmpty && p.count <= 5 && p.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return nil }
            text = text[text.index(after: text.startIndex)..<close]
        } else if let colon = text.firstIndex(of: ":"), text.lastIndex(of: ":") == colon {
            guard isPort(text[text.index(after: colon)...]) else { return nil }
            text = text[..<colon]
        }
        return IPAddress(String(text))
    }

    /// Whether `name` is of the forwarding family: `Forwarded`, `X-Real-IP` or `X-Forwarded-*`
    /// (ASCII case-insensitive).
    static func isForwardingField(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 9: return startsWith(name, "forwarded") || startsWith(name, "x-real-ip")
        case 12...: return startsWith(name, "x-forwarded-")
        default: return false
        }
    }

    @inline(__always)
    private static func startsWith(_ name: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        HeaderFamily.hasPrefix(name, UnsafeRawBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
    }

    /// Sets the family on `headers` (the fields to forward) for a request that arrived on `connection`.
    func apply(to headers: inout HTTPHeaders, connection: HTTPConnectionInfo) {
        let peer = connection.remoteHost
        let scheme = connection.isSecure ? "https" : "http"
        guard !trusted.isEmpty && trusted.contains(host: peer) else {
            // One pass over the fields; the two added ones are the gateway's own text (the peer's
            // address as the socket reported it, a scheme literal): nothing to validate.
            headers.removeFields(whereName: ForwardingHeaders.isForwardingField)
            headers.appendTrusted(name: "X-Forwarded-For", value: peer)
            headers.appendTrusted(name: "X-Forwarded-Proto", value: scheme)
            return
        }
        let chain = headers.values("X-Forwarded-For").filter { !$0.isEmpty }
        try? headers.replaceOrAdd(name: "X-Forwarded-For", value: chain.isEmpty ? peer : (chain + [peer]).joined(separator: ", "))
        let claimed = headers.values("X-Forwarded-Proto")
        let proto = claimed.count == 1 ? claimed[0].lowercased() : ""
        try? headers.replaceOrAdd(name: "X-Forwarded-Proto", value: proto == "http" || proto == "https" ? proto : scheme)
    }
}
