/// How a test client reaches the gateway's data listener: HTTP/1.1 in plain text or over TLS (and,
/// once the gateway speaks it, HTTP/2), so one scenario table runs over every protocol.
enum ClientTransport: Sendable {
    /// HTTP/1.1 over plain TCP.
    case http1
    /// HTTP/1.1 over TLS, verified against the CA file `ca` (server name 127.0.0.1).
    case http1TLS(ca: String)

    /// curl arguments selecting the protocol (and the CA).
    var curlArguments: [String] {
        switch self {
        case .http1: return ["--http1.1"]
        case .http1TLS(let ca): return ["--http1.1", "--cacert", ca]
        }
    }

    /// `http` or `https`.
    var scheme: String {
        switch self {
        case .http1: return "http"
        case .http1TLS: return "https"
        }
    }

    /// The CA file of a TLS transport, nil for plain.
    var tlsCA: String? {
        switch self {
        case .http1: return nil
        case .http1TLS(let ca): return ca
        }
    }
}
