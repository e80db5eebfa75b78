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

    /// Sets the family on `headers` (the fields to forward) for a request that arrived on `connection`.
    func apply(to headers: inout HTTPHeaders, connection: HTTPConnectionInfo) {
        let peer = connection.remoteHost
        let scheme = connection.isSecure ? "https" : "http"
        guard trusted.contains(host: peer) else {
            headers.removeAll(namePrefix: "X-Forwarded-")
            headers.remove("Forwarded")
            headers.remove("X-Real-IP")
            try? headers.add(name: "X-Forwarded-For", value: peer)
            try? headers.add(name: "X-Forwarded-Proto", value: scheme)
            return
        }
        let chain = headers.values("X-Forwarded-For").filter { !$0.isEmpty }
        try? headers.replaceOrAdd(name: "X-Forwarded-For", value: chain.isEmpty ? peer : (chain + [peer]).joined(separator: ", "))
        let claimed = headers.values("X-Forwarded-Proto")
        let proto = claimed.count == 1 ? claimed[0].lowercased() : ""
        try? headers.replaceOrAdd(name: "X-Forwarded-Proto", value: proto == "http" || proto == "https" ? proto : scheme)
    }
}
