/// How a test client reaches the gateway's data listener: HTTP/1.1 or HTTP/2, in plain text or over
/// TLS, so one scenario table runs over every protocol.
enum ClientTransport: Sendable {
    /// HTTP/1.1 over plain TCP.
    case http1
    /// HTTP/1.1 over TLS (ALPN `http/1.1`), verified against the CA file `ca` (server name 127.0.0.1).
    case http1TLS(ca: String)
    /// HTTP/2 over plain TCP with prior knowledge (h2c).
    case h2c
    /// HTTP/2 over TLS (ALPN `h2`), verified against the CA file `ca`.
    case h2TLS(ca: String)

    /// curl arguments selecting the protocol (and the CA).
    var curlArguments: [String] {
        switch self {
        case .http1: return ["--http1.1"]
        case .http1TLS(let ca): return ["--http1.1", "--cacert", ca]
        case .h2c: return ["--http2-prior-knowledge"]
        case .h2TLS(let ca): return ["--http2", "--cacert", ca]
        }
    }

    /// `http` or `https`.
    var scheme: String { tlsCA == nil ? "http" : "https" }

    /// Whether the requests are HTTP/2 streams.
    var isHTTP2: Bool {
        switch self {
        case .h2c, .h2TLS: return true
        case .http1, .http1TLS: return false
        }
    }

    /// The CA file of a TLS transport, nil for plain.
    var tlsCA: String? {
        switch self {
        case .http1, .h2c: return nil
        case .http1TLS(let ca), .h2TLS(let ca): return ca
        }
    }
}
