// What a TLS listener is built from (the `listen[].tls` block of the configuration).

import GatewayRules

/// Settings of a TLS listener (DESIGN.md section 5, "Listeners"): certificates chosen by SNI, the
/// lowest protocol version, ALPN preference, session resumption.
///
/// A value; `TLSServerContext` validates it (files included) and builds the OpenSSL contexts. The
/// TLS 1.2 cipher suites (Mozilla "intermediate": ECDHE with AES-GCM or ChaCha20-Poly1305), the
/// TLS 1.3 suites (OpenSSL's defaults), the key-exchange groups (X25519, P-256), no renegotiation
/// and no compression are fixed, not settings.
package struct TLSServerSettings: Sendable, Hashable {
    /// One certificate chain and its private key.
    package struct Certificate: Sendable, Hashable {
        /// PEM file: the leaf certificate first, then the intermediates in issuing order.
        package var chainPath: String
        /// PEM file: the leaf's private key (P-256 ECDSA, or RSA of at least 2048 bits), unencrypted.
        package var keyPath: String

        /// A chain file and its key file.
        package init(chainPath: String, keyPath: String) {
            self.chainPath = chainPath
            self.keyPath = keyPath
        }
    }

    /// The certificates, chosen per handshake by the client's server name (RFC 6066 section 3, SNI)
    /// against each leaf's subjectAltName DNS names (X509_check_host(3); an exact name is preferred
    /// to a wildcard). The first is the default: used without SNI or when no leaf matches. At least one.
    package var certificates: [Certificate]
    /// The lowest version accepted: `.tls12` (default) or `.tls13`. The highest is always TLS 1.3.
    package var minVersion: TLSVersion
    /// ALPN protocol names (RFC 7301) in order of preference; the first one the client also offers
    /// is selected. When the client offers none of them, the handshake goes on without ALPN (the
    /// caller then speaks HTTP/1.1). Each name is 1...255 bytes. Default `["h2", "http/1.1"]`.
    package var alpn: [String]
    /// Sessions kept in the server-side session cache (TLS 1.2 session IDs), per generation of the
    /// context (a reload starts an empty cache); 0 turns the cache off. Default 20 480.
    package var sessionCacheSize: Int
    /// Lifetime of a session, in seconds, for the cache and for tickets (SSL_CTX_set_timeout(3)).
    /// Default 7 200 (2 h).
    package var sessionTimeoutSeconds: Int
    /// Session tickets (RFC 5077 for TLS 1.2, RFC 8446 section 4.6.1 for TLS 1.3) on or off.
    /// Default on.
    package var sessionTickets: Bool
    /// How long one ticket key encrypts new tickets, in seconds; then a new random key takes over.
    /// A key still decrypts tickets for `sessionTimeoutSeconds` after it stopped encrypting. Default
    /// 3 600 (1 h).
    package var ticketKeyRotationSeconds: Int

    /// Settings with the defaults above.
    package init(certificates: [Certificate], minVersion: TLSVersion = .tls12, alpn: [String] = ["h2", "http/1.1"],
                 sessionCacheSize: Int = 20_480, sessionTimeoutSeconds: Int = 7_200, sessionTickets: Bool = true,
                 ticketKeyRotationSeconds: Int = 3_600) {
        self.certificates = certificates
        self.minVersion = minVersion
        self.alpn = alpn
        self.sessionCacheSize = sessionCacheSize
        self.sessionTimeoutSeconds = sessionTimeoutSeconds
        self.sessionTickets = sessionTickets
        self.ticketKeyRotationSeconds = ticketKeyRotationSeconds
    }
}
