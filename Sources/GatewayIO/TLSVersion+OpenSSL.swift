// OpenSSL's constants for the TLS versions the gateway speaks.

import GatewayRules

extension TLSVersion {
    /// The OpenSSL protocol constant (`TLS1_2_VERSION` 0x0303, `TLS1_3_VERSION` 0x0304) that
    /// `SSL_CTX_set_min_proto_version(3)` / `SSL_CTX_set_max_proto_version(3)` take.
    package var openSSLValue: Int32 {
        switch self {
        case .tls12: return 0x0303
        case .tls13: return 0x0304
        }
    }
}
