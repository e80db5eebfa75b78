// OpenSSL client context for `https://` upstreams.

internal import COpenSSL
import GatewayRules
import Synchronization

/// The TLS client configuration towards `https://` upstreams: one OpenSSL `SSL_CTX`, shared by every
/// event loop, plus a session cache for resumption.
///
/// Peer verification is on unless `settings.verify` is false: the chain is checked against the
/// system CA store (SSL_CTX_set_default_verify_paths(3)) or `settings.caPath`
/// (SSL_CTX_load_verify_file(3)), and each connection checks the server name it was given
/// (SSL_set1_host(3) for DNS names, without partial wildcards; X509_VERIFY_PARAM_set1_ip_asc(3) for
/// IP addresses). SNI (RFC 6066) is sent for DNS names, never for IP addresses. TLS 1.2 and 1.3,
/// no renegotiation, no compression, ALPN `settings.alpn` (`http/1.1`).
///
/// Sessions (`settings.sessionReuse`) are kept per server name, one at a time, from OpenSSL's
/// new-session callback (SSL_CTX_sess_set_new_cb(3), which also sees TLS 1.3 tickets arriving after
/// the handshake). A TLS 1.3 session is handed out once (RFC 8446 appendix C.4); a TLS 1.2 one until
/// replaced or expired.
package final class TLSClientContext: Sendable {
    /// At most this many server names keep a session.
    package static let maxSessions = 1_024

    /// The settings this context was built from.
    package let settings: TLSClientSettings
    let context: TLSHandle
    private let sessions: Mutex<[String: TLSSession]>

    /// Whether upstream certificates are verified (false: the caller must warn loudly).
    package var isVerifying: Bool { settings.verify }

    /// Builds the client context.
    /// - Throws: `TLSContextError` when `caPath` is unreadable or holds no usable certificate, an
    ///   ALPN name is empty or longer than 255 bytes, or `minVersion > maxVersion`.
    package init(settings: TLSClientSettings) throws(TLSContextError) {
        guard settings.minVersion <= settings.maxVersion else { throw .invalidSettings("minVersion above maxVersion") }
        let wire = try TLSServerContext.alpnWireFormat(settings.alpn)
        ERR_clear_error()
        guard let raw = SSL_CTX_new(TLS_client_method()) else {
            throw .openSSL(call: "SSL_CTX_new", reason: TLSOpenSSLErrors.drain(or: "out of memory"))
        }
        let context = TLSHandle.context(raw)
        func check(_ ok: Bool, _ call: String) throws(TLSContextError) {
            guard ok else { throw .openSSL(call: call, reason: TLSOpenSSLErrors.drain(or: "failed")) }
        }
        try check(cshim_SSL_CTX_set_min_proto_version(raw, settings.minVersion.openSSLValue) == 1, "SSL_CTX_set_min_proto_version")
        try check(cshim_SSL_CTX_set_max_proto_version(raw, settings.maxVersion.openSSLValue) == 1, "SSL_CTX_set_max_proto_version")
        var options = cshim_SSL_OP_NO_RENEGOTIATION() | cshim_SSL_OP_NO_COMPRESSION()
        if !settings.sessionTickets { options |= cshim_SSL_OP_NO_TICKET() }
        _ = SSL_CTX_set_options(raw, options)
        _ = cshim_SSL_CTX_set_mode(raw, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        _ = cshim_SSL_CTX_set_read_ahead(raw, 1)
        SSL_CTX_set_verify(raw, settings.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
        if let caPath = settings.caPath {
            _ = try TLSPEMFile.certificates(caPath)  // unreadable / not PEM / no certificate, named
            ERR_clear_error()
            guard SSL_CTX_load_verify_file(raw, caPath) == 1 else {
                throw .notPEM(path: caPath, reason: TLSOpenSSLErrors.drain(or: "SSL_CTX_load_verify_file failed"))
            }
        } else {
            try check(SSL_CTX_set_default_verify_paths(raw) == 1, "SSL_CTX_set_default_verify_paths")
        }
        if let client = settings.clientCertificate {
            try TLSClientContext.useCertificate(raw, chainPath: client.chainPath, keyPath: client.keyPath)
        }
        if !wire.isEmpty {
            // SSL_CTX_set_alpn_protos returns 0 on success.
            try check(SSL_CTX_set_alpn_protos(raw, wire, UInt32(wire.count)) == 0, "SSL_CTX_set_alpn_protos")
        }
        if settings.sessionReuse {
            _ = cshim_SSL_CTX_set_session_cache_mode(raw, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
            SSL_CTX_sess_set_new_cb(raw, TLSClientContext.newSession)
        } else {
            _ = cshim_SSL_CTX_set_session_cache_mode(raw, Int(SSL_SESS_CACHE_OFF))
        }
        self.settings = settings
        self.context = context
        sessions = Mutex([:])
        SSL_CTX_set_ex_data(raw, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Loads a client certificate chain (leaf first) and its key into `ctx` (SSL_CTX_use_certificate(3),
    /// SSL_CTX_add1_chain_cert(3), SSL_CTX_use_PrivateKey(3), SSL_CTX_check_private_key(3)).
    private static func useCertificate(_ ctx: OpaquePointer, chainPath: String, keyPath: String) throws(TLSContextError) {
        let chain = try TLSPEMFile.certificates(chainPath)
        let key = try TLSPEMFile.privateKey(keyPath)
        ERR_clear_error()
        func check(_ ok: Bool, _ call: String) throws(TLSContextError) {
            guard ok else { throw .openSSL(call: call, reason: TLSOpenSSLErrors.drain(or: "failed")) }
        }
        try check(SSL_CTX_use_certificate(ctx, chain[0].pointer) == 1, "SSL_CTX_use_certificate(\(chainPath))")
        for intermediate in chain.dropFirst() {
            try check(cshim_SSL_CTX_add1_chain_cert(ctx, intermediate.pointer) == 1, "SSL_CTX_add1_chain_cert(\(chainPath))")
        }
        // SSL_CTX_use_PrivateKey already refuses a key that does not match the leaf.
        guard SSL_CTX_use_PrivateKey(ctx, key.pointer) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw .keyMismatch(chainPath: chainPath, keyPath: keyPath, reason: TLSOpenSSLErrors.drain(or: "key values mismatch"))
        }
    }

    /// Number of server names holding a session (tests, metrics).
    package var cachedSessionCount: Int { sessions.withLock { $0.count } }

    /// Drops every cached session.
    package func forgetSessions() { sessions.withLock { $0.removeAll() } }

    /// The session to offer to `key` (a reference the caller must SSL_SESSION_free(3) after
    /// SSL_set_session(3)), or nil. TLS 1.3 sessions leave the cache; expired ones are dropped.
    func session(for key: String) -> OpaquePointer? {
        sessions.withLock { cache -> OpaquePointer? in
            guard let session = cache[key] else { return nil }
            guard SSL_SESSION_is_resumable(session.pointer) == 1 else {
                cache[key] = nil
                return nil
            }
            if SSL_SESSION_get_protocol_version(session.pointer) >= TLSVersion.tls13.openSSLValue { cache[key] = nil }
            _ = SSL_SESSION_up_ref(session.pointer)
            return session.pointer
        }
    }

    /// Keeps `session` (whose reference it takes) for `key`, replacing the previous one.
    func store(_ session: OpaquePointer, for key: String) {
        let owned = TLSSession(session)
        sessions.withLock { cache in
            if cache[key] == nil && cache.count >= TLSClientContext.maxSessions, let victim = cache.keys.first {
                cache[victim] = nil
            }
            cache[key] = owned
        }
    }

    /// New-session callback: the session belongs to the connection's server name; returning 1 keeps
    /// the reference OpenSSL passed.
    private static let newSession: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
        guard let ssl, let session, let ctx = SSL_get_SSL_CTX(ssl), let rawContext = SSL_CTX_get_ex_data(ctx, 0),
              let connection = TLSConnection.owner(of: ssl) else { return 0 }
        let context = Unmanaged<TLSClientContext>.fromOpaque(rawContext).takeUnretainedValue()
        context.store(session, for: connection.sessionKey)
        return 1
    }
}

