// The TLS protocol versions the gateway speaks.

/// A TLS protocol version the gateway may negotiate: TLS 1.2 (RFC 5246) or TLS 1.3 (RFC 8446).
/// Nothing older is ever enabled (RFC 8996 deprecates TLS 1.0 and 1.1).
package enum TLSVersion: String, Sendable, Hashable, Comparable, CaseIterable {
    /// TLS 1.2, RFC 5246. The configuration spells it `"1.2"`.
    case tls12 = "1.2"
    /// TLS 1.3, RFC 8446. The configuration spells it `"1.3"`.
    case tls13 = "1.3"

    /// The OpenSSL protocol constant (`TLS1_2_VERSION` 0x0303, `TLS1_3_VERSION` 0x0304) that
    /// `SSL_CTX_set_min_proto_version(3)` / `SSL_CTX_set_max_proto_version(3)` take.
    package var openSSLValue: Int32 {
        switch self {
        case .tls12: return 0x0303
        case .tls13: return 0x0304
        }
    }

    /// Orders TLS 1.2 before TLS 1.3.
    package static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.openSSLValue < rhs.openSSLValue }
}
