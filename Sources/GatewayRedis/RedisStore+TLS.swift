import GatewayIO
import GatewayRules

extension RedisStore {
    /// The TLS client context the store's connections use: nil for a plain URL; for `rediss://` and
    /// `rediss+cluster://` the configured `tlsContext`, or else a verifying one with the system CA
    /// store (SSL_CTX_set_default_verify_paths(3)), no client certificate and no ALPN (Redis offers
    /// none). One context serves every node and loop; sessions are resumed per host name.
    /// - Throws: `TLSContextError` when the default context cannot be built.
    static func tlsContext(for configuration: Configuration) throws -> TLSClientContext? {
        guard configuration.url.tls else { return nil }
        if let context = configuration.tlsContext { return context }
        return try TLSClientContext(settings: RedisStore.tlsSettings())
    }

    /// TLS client settings for Redis: `verify` on unless told otherwise, `caPath` nil for the system
    /// store, an optional client certificate (mutual TLS, Redis' `tls-auth-clients yes`), TLS 1.2 and
    /// 1.3, no ALPN.
    package static func tlsSettings(verify: Bool = true, caPath: String? = nil,
                                    clientCertificate: (chainPath: String, keyPath: String)? = nil) -> TLSClientSettings {
        var settings = TLSClientSettings(verify: verify, caPath: caPath, alpn: [])
        settings.clientCertificate = clientCertificate
        return settings
    }
}
