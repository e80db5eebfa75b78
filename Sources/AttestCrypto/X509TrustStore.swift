internal import COpenSSL

/// A pinned set of trust anchors for X.509 path validation (RFC 5280 section 6) with OpenSSL's
/// `X509_STORE`.
///
/// - The store holds **only** the anchors given here: the system trust store (default paths,
///   `SSL_CERT_FILE`, ...) is never loaded or consulted.
/// - Certificates passed as `intermediates` are untrusted: they can complete a path but never act as
///   an anchor (`X509_V_FLAG_PARTIAL_CHAIN` stays off, so a trusted non-self-signed certificate is not
///   an anchor either, and a self-signed root smuggled in `intermediates` fails).
/// - Time is an input: `X509_VERIFY_PARAM_set_time` (`X509_V_FLAG_USE_CHECK_TIME`); the clock is
///   never read.
/// - `strict` adds `X509_V_FLAG_X509_STRICT` (RFC 5280 profile checks).
///
/// **Thread-safe**: the `X509_STORE` is filled in `init` and never changed afterwards; every
/// verification uses its own `X509_STORE_CTX`, and OpenSSL locks the store's internal object list.
public final class X509TrustStore: @unchecked Sendable {  // immutable after init; X509_STORE guards lookups with its own lock
    private let store: OpaquePointer
    /// The pinned anchors.
    public let anchors: [X509Certificate]
    /// Whether `X509_V_FLAG_X509_STRICT` is set.
    public let strict: Bool

    /// A store pinned to `anchors` (may be empty: then every chain fails).
    public init(anchors: [X509Certificate], strict: Bool = true) throws {
        guard let store = X509_STORE_new() else { throw CryptoError.openSSLFailure("X509_STORE_new") }
        self.store = store
        self.anchors = anchors
        self.strict = strict
        for anchor in anchors {
            guard X509_STORE_add_cert(store, anchor.x509) == 1 else { throw CryptoError.openSSLFailure("X509_STORE_add_cert") }
        }
    }

    deinit { X509_STORE_free(store) }

    /// Verifies that `leaf`, with the untrusted `intermediates`, chains to a pinned anchor, every
    /// certificate being valid at `time` (seconds since the epoch).
    public func verify(leaf: X509Certificate, intermediates: [X509Certificate], at time: Int64) -> ChainVerification {
        do {
            let untrusted = try OpenSSLHandle(OPENSSL_sk_new_null(), "OPENSSL_sk_new_null") { OPENSSL_sk_free($0) }
            let ctx = try OpenSSLHandle(X509_STORE_CTX_new(), "X509_STORE_CTX_new") { X509_STORE_CTX_free($0) }
            return try withExtendedLifetime(intermediates) {
                try withExtendedLifetime(leaf) {
                    try untrusted.withPointer { stack in
                        for cert in intermediates {
                            // The stack borrows the certificates; `intermediates` keeps them alive.
                            guard OPENSSL_sk_push(stack, UnsafeRawPointer(cert.x509)) > 0 else {
                                throw CryptoError.openSSLFailure("OPENSSL_sk_push")
                            }
                        }
                        return try ctx.withPointer { c in
                            guard X509_STORE_CTX_init(c, store, leaf.x509, stack) == 1 else {
                                throw CryptoError.openSSLFailure("X509_STORE_CTX_init")
                            }
                            let param = X509_STORE_CTX_get0_param(c)
                            X509_VERIFY_PARAM_set_time(param, time_t(time))
                            _ = X509_VERIFY_PARAM_clear_flags(param, UInt(X509_V_FLAG_PARTIAL_CHAIN))
                            if strict { _ = X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_X509_STRICT)) }
                            let rc = X509_verify_cert(c)
                            if rc == 1 { return .valid }
                            let code = X509_STORE_CTX_get_error(c)
                            ERR_clear_error()
                            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "verification failed"
                            let depth = X509_STORE_CTX_get_error_depth(c)
                            return .invalid(code: code, reason: "\(text) (depth \(depth))")
                        }
                    }
                }
            }
        } catch {
            return .invalid(code: -1, reason: "\(error)")
        }
    }
}
