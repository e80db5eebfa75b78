// OpenSSL server contexts for a TLS listener: certificates by SNI, ALPN, resumption, reload.

internal import COpenSSL
import GatewayRules
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The TLS configuration of one listener, shared by every event loop: one OpenSSL `SSL_CTX` per
/// certificate (the first is the default), chosen during the handshake by the client's server name.
///
/// Fixed policy (not settings): TLS 1.2 (RFC 5246) and TLS 1.3 (RFC 8446) only; TLS 1.2 suites of
/// Mozilla's "intermediate" profile restricted to ECDHE (`tls12CipherList`), TLS 1.3 suites OpenSSL's
/// default (`TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256`), groups
/// X25519 and P-256 (`SSL_CTX_set1_groups_list`), the client's cipher order (no
/// `SSL_OP_CIPHER_SERVER_PREFERENCE`, as the intermediate profile says), no renegotiation
/// (`SSL_OP_NO_RENEGOTIATION`), no compression (`SSL_OP_NO_COMPRESSION`), partial writes and moving
/// write buffers (`SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`), record buffers
/// released while a connection is idle (`SSL_MODE_RELEASE_BUFFERS`), read-ahead.
///
/// Resumption: a server-side session cache per generation (SSL_CTX_sess_set_cache_size(3),
/// SSL_CTX_set_timeout(3)) and session tickets whose keys rotate (`TLSTicketKeys`; shared by all
/// generations, so tickets survive a reload). ALPN (RFC 7301): the first name of `settings.alpn` the
/// client also offers; none in common means no ALPN (HTTP/1.1).
///
/// `reload(_:)` builds and checks a complete new generation, then swaps it in under a lock: new
/// connections (`TLSConnection(server:fd:)`) use the new one, existing connections keep the one they
/// started with (each holds a reference to it) until they close.
package final class TLSServerContext: Sendable {
    /// TLS 1.2 cipher suites, OpenSSL names: Mozilla intermediate (server-side TLS guidelines v5),
    /// ECDHE key exchange with AES-GCM or ChaCha20-Poly1305, ECDSA and RSA certificates.
    package static let tls12CipherList =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    /// Key exchange groups (RFC 8446 section 4.2.7 / RFC 8422), OpenSSL names.
    package static let groups = "X25519:P-256"
    /// Session ID context (SSL_CTX_set_session_id_context(3)) of a certificate's context: the SHA-256
    /// of its leaf (DER), 32 bytes, so that a session (ticket or cache entry) resumes only under the
    /// certificate it was made with (RFC 6066 section 3), and still does after a reload that keeps
    /// that certificate. The certificate is chosen before resumption is looked at (`clientHello`).
    static func sessionIDContext(leaf: OpaquePointer) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(leaf, EVP_sha256(), &digest, &length) == 1, length == 32 else { return nil }
        return Array(digest[0..<32])
    }

    private let current: Mutex<Generation>
    /// The ticket keys (shared by all generations).
    let ticketKeys: TLSTicketKeys

    /// Builds the contexts of `settings`: reads and checks every certificate chain and key.
    /// - Parameter clock: monotonic nanoseconds for the ticket key schedule (default the system's
    ///   monotonic clock, as `EventLoop.now()`); tests inject their own.
    /// - Throws: `TLSContextError` naming the file and the reason (unreadable, not PEM, no
    ///   certificate, unusable or unsupported key, key not matching the leaf) or the setting.
    package init(settings: TLSServerSettings, clock: @escaping @Sendable () -> UInt64 = { EventLoop.now() })
        throws(TLSContextError) {
        ticketKeys = TLSTicketKeys(rotationSeconds: settings.ticketKeyRotationSeconds,
                                   retentionSeconds: settings.sessionTimeoutSeconds, clock: clock)
        current = Mutex(try Generation(settings: settings, ticketKeys: ticketKeys))
    }

    /// The settings in force (of the current generation).
    package var settings: TLSServerSettings { current.withLock { $0.settings } }

    /// Replaces the certificates and settings for new handshakes, atomically; connections already
    /// made keep theirs. Everything is built and checked before the swap, so on error nothing changes.
    /// - Throws: `TLSContextError` as `init`.
    package func reload(_ settings: TLSServerSettings) throws(TLSContextError) {
        install(try prepare(settings))
    }

    /// The first half of `reload`: reads and checks every file of `settings` and builds the contexts,
    /// changing nothing. A reload of several listeners prepares them all, then installs them all, so
    /// that a file that changes or breaks half way never leaves one listener swapped and the next not.
    /// - Throws: `TLSContextError` as `init`.
    package func prepare(_ settings: TLSServerSettings) throws(TLSContextError) -> Generation {
        try Generation(settings: settings, ticketKeys: ticketKeys)
    }

    /// The second half of `reload`: `generation` (from this context's `prepare`) serves new handshakes
    /// from now on. Cannot fail.
    package func install(_ generation: Generation) {
        let settings = generation.settings
        ticketKeys.update(rotationSeconds: settings.ticketKeyRotationSeconds, retentionSeconds: settings.sessionTimeoutSeconds)
        current.withLock { $0 = generation }
    }

    /// The generation new connections start with.
    func currentGeneration() -> Generation { current.withLock { $0 } }

    /// One complete, immutable set of OpenSSL contexts (one per certificate) built from one settings
    /// value. Each `SSL_CTX` points back to it (ex_data index 0, unretained); every connection made
    /// from it holds it strongly, so the callbacks never see it freed.
    package final class Generation: @unchecked Sendable {  // immutable after init; SSL_CTX is only read (SSL_new) once built
        /// One certificate: its context and its leaf (for SNI matching).
        struct Entry {
            let context: TLSHandle
            let leaf: TLSHandle
        }

        let settings: TLSServerSettings
        let entries: [Entry]
        let ticketKeys: TLSTicketKeys
        /// ALPN preference in wire format (RFC 7301 section 3.1: length-prefixed names).
        private let alpnWire: UnsafeMutableBufferPointer<UInt8>
        private let alpnLength: UInt32

        init(settings: TLSServerSettings, ticketKeys: TLSTicketKeys) throws(TLSContextError) {
            guard !settings.certificates.isEmpty else { throw .invalidSettings("no certificates") }
            guard settings.sessionCacheSize >= 0 else { throw .invalidSettings("session cache size below 0") }
            guard settings.sessionTimeoutSeconds >= 1 else { throw .invalidSettings("session timeout below 1 second") }
            guard settings.ticketKeyRotationSeconds >= 1 else { throw .invalidSettings("ticket key rotation below 1 second") }
            let wire = try TLSServerContext.alpnWireFormat(settings.alpn)
            var entries: [Entry] = []
            for certificate in settings.certificates {
                entries.append(try TLSServerContext.makeEntry(certificate, settings: settings))
            }
            self.settings = settings
            self.entries = entries
            self.ticketKeys = ticketKeys
            alpnWire = .allocate(capacity: max(1, wire.count))
            alpnLength = UInt32(wire.count)
            _ = alpnWire.initialize(from: wire)
            let me = Unmanaged.passUnretained(self).toOpaque()
            for entry in entries {
                SSL_CTX_set_ex_data(entry.context.pointer, 0, me)
                if !wire.isEmpty { SSL_CTX_set_alpn_select_cb(entry.context.pointer, TLSServerContext.selectALPN, nil) }
            }
        }

        deinit { alpnWire.deallocate() }

        /// The default context (SSL_new(3) starts every connection with it).
        var defaultContext: OpaquePointer { entries[0].context.pointer }

        /// Index of the certificate for `name` (RFC 6066 server name): the first leaf with an exact
        /// subjectAltName DNS match, else the first with a wildcard match (X509_check_host(3), the
        /// subject CN is never used), else 0.
        func certificateIndex(serverName name: UnsafePointer<CChar>) -> Int {
            let length = strlen(name)
            let never = UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT)
            for flags in [never | UInt32(X509_CHECK_FLAG_NO_WILDCARDS), never | UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS)] {
                for (index, entry) in entries.enumerated() where X509_check_host(entry.leaf.pointer, name, length, flags, nil) == 1 {
                    return index
                }
            }
            return 0
        }

        /// The ALPN choice for a client offering `client` (wire format): SSL_select_next_proto(3) with
        /// our list first, so our preference wins.
        func selectALPN(client: UnsafePointer<UInt8>, length: UInt32,
                        out: UnsafeMutablePointer<UnsafePointer<UInt8>?>, outLength: UnsafeMutablePointer<UInt8>) -> Int32 {
            var selected: UnsafeMutablePointer<UInt8>? = nil
            let result = SSL_select_next_proto(&selected, outLength, alpnWire.baseAddress, alpnLength, client, length)
            guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
            out.pointee = UnsafePointer(selected)
            return SSL_TLSEXT_ERR_OK
        }
    }

    /// RFC 7301 wire format of `names`; each name 1...255 bytes.
    static func alpnWireFormat(_ names: [String]) throws(TLSContextError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in names {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw .invalidSettings("ALPN name \"\(name)\" must be 1 to 255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        guard wire.count <= 65_535 else { throw .invalidSettings("ALPN list longer than 65535 bytes") }
        return wire
    }

    /// One certificate's context: policy, chain, key, callbacks.
    private static func makeEntry(_ certificate: TLSServerSettings.Certificate, settings: TLSServerSettings)
        throws(TLSContextError) -> Generation.Entry {
        let chain = try TLSPEMFile.certificates(certificate.chainPath)
        let key = try TLSPEMFile.privateKey(certificate.keyPath)
        ERR_clear_error()
        guard let raw = SSL_CTX_new(TLS_server_method()) else {
            throw .openSSL(call: "SSL_CTX_new", reason: TLSOpenSSLErrors.drain(or: "out of memory"))
        }
        let context = TLSHandle.context(raw)
        let ctx = context.pointer
        func check(_ ok: Bool, _ call: String) throws(TLSContextError) {
            guard ok else { throw .openSSL(call: call, reason: TLSOpenSSLErrors.drain(or: "failed")) }
        }
        try check(cshim_SSL_CTX_set_min_proto_version(ctx, settings.minVersion.openSSLValue) == 1, "SSL_CTX_set_min_proto_version")
        try check(cshim_SSL_CTX_set_max_proto_version(ctx, TLSVersion.tls13.openSSLValue) == 1, "SSL_CTX_set_max_proto_version")
        try check(SSL_CTX_set_cipher_list(ctx, tls12CipherList) == 1, "SSL_CTX_set_cipher_list")
        try check(cshim_SSL_CTX_set1_groups_list(ctx, groups) == 1, "SSL_CTX_set1_groups_list")
        _ = SSL_CTX_clear_options(ctx, cshim_SSL_OP_CIPHER_SERVER_PREFERENCE())
        var options = cshim_SSL_OP_NO_RENEGOTIATION() | cshim_SSL_OP_NO_COMPRESSION()
        if !settings.sessionTickets { options |= cshim_SSL_OP_NO_TICKET() }
        _ = SSL_CTX_set_options(ctx, options)
        // RELEASE_BUFFERS: an idle connection gives its 16 KiB read and write record buffers back
        // (as nginx does), about 17 KiB per idle connection instead of 34 (bench/run tls-memory).
        _ = cshim_SSL_CTX_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                                            | SSL_MODE_RELEASE_BUFFERS))
        _ = cshim_SSL_CTX_set_read_ahead(ctx, 1)
        guard let sessionContext = sessionIDContext(leaf: chain[0].pointer) else {
            throw .openSSL(call: "X509_digest(\(certificate.chainPath))", reason: TLSOpenSSLErrors.drain(or: "failed"))
        }
        try check(SSL_CTX_set_session_id_context(ctx, sessionContext, UInt32(sessionContext.count)) == 1,
                  "SSL_CTX_set_session_id_context")
        if settings.sessionCacheSize > 0 {
            _ = cshim_SSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_SERVER))
            _ = cshim_SSL_CTX_sess_set_cache_size(ctx, settings.sessionCacheSize)
        } else {
            _ = cshim_SSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
        }
        _ = SSL_CTX_set_timeout(ctx, settings.sessionTimeoutSeconds)
        if settings.sessionTickets {
            try check(SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticketKey) == 1, "SSL_CTX_set_tlsext_ticket_key_evp_cb")
        }
        SSL_CTX_set_client_hello_cb(ctx, clientHello, nil)
        _ = cshim_SSL_CTX_set_tlsext_servername_callback(ctx, serverName)

        try check(SSL_CTX_use_certificate(ctx, chain[0].pointer) == 1, "SSL_CTX_use_certificate(\(certificate.chainPath))")
        for intermediate in chain.dropFirst() {
            try check(cshim_SSL_CTX_add1_chain_cert(ctx, intermediate.pointer) == 1, "SSL_CTX_add1_chain_cert(\(certificate.chainPath))")
        }
        try check(SSL_CTX_use_PrivateKey(ctx, key.pointer) == 1, "SSL_CTX_use_PrivateKey(\(certificate.keyPath))")
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw .keyMismatch(chainPath: certificate.chainPath, keyPath: certificate.keyPath,
                               reason: TLSOpenSSLErrors.drain(or: "key values mismatch"))
        }
        return Generation.Entry(context: context, leaf: chain[0])
    }

    /// The generation an `SSL`'s current context belongs to.
    private static func generation(_ ssl: OpaquePointer?) -> Generation? {
        guard let ssl, let ctx = SSL_get_SSL_CTX(ssl), let raw = SSL_CTX_get_ex_data(ctx, 0) else { return nil }
        return Unmanaged<Generation>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Client hello callback (SSL_CTX_set_client_hello_cb(3)), the first step of a ClientHello:
    /// switches the connection to the certificate its server name selects (SSL_set_SSL_CTX(3), which
    /// also takes that context's session ID context) before OpenSSL looks at a session to resume,
    /// so a session made under another certificate is refused and a full handshake follows. No
    /// server name, or no match, keeps the default certificate.
    private static let clientHello: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
        guard let generation = generation(ssl) else { return SSL_CLIENT_HELLO_SUCCESS }
        var data: UnsafePointer<UInt8>?
        var length = 0
        guard SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_server_name), &data, &length) == 1, let data,
              let name = TLSServerContext.hostName(inServerNameExtension: UnsafeRawBufferPointer(start: data, count: length)) else {
            return SSL_CLIENT_HELLO_SUCCESS
        }
        let index = name.withUnsafeBufferPointer { generation.certificateIndex(serverName: $0.baseAddress!) }
        let context = generation.entries[index].context.pointer
        if SSL_get_SSL_CTX(ssl) != context { _ = SSL_set_SSL_CTX(ssl, context) }
        return SSL_CLIENT_HELLO_SUCCESS
    }

    /// The `host_name` of a `server_name` extension's body (RFC 6066 section 3: a 2-byte list length,
    /// then entries of a type byte, a 2-byte length and the name), NUL-terminated for OpenSSL, one
    /// trailing dot removed (RFC 6066 says a client sends none; nginx strips it too, so
    /// `b.example.` selects `b.example`'s certificate); nil when the body is malformed, has no
    /// `host_name`, or the name is empty, over 255 bytes or holds a NUL (OpenSSL refuses such a
    /// ClientHello itself, after this).
    static func hostName(inServerNameExtension body: UnsafeRawBufferPointer) -> [CChar]? {
        guard body.count >= 2, Int(body[0]) << 8 | Int(body[1]) == body.count - 2 else { return nil }
        var i = 2
        while i + 3 <= body.count {
            let type = body[i]
            let length = Int(body[i + 1]) << 8 | Int(body[i + 2])
            i += 3
            guard i + length <= body.count else { return nil }
            if type == 0 {  // host_name
                guard (1...255).contains(length) else { return nil }
                let kept = length > 1 && body[i + length - 1] == 0x2E ? length - 1 : length
                var name = [CChar](repeating: 0, count: kept + 1)
                for k in 0..<length {
                    guard body[i + k] != 0 else { return nil }
                    if k < kept { name[k] = CChar(bitPattern: body[i + k]) }
                }
                return name
            }
            i += length
        }
        return nil
    }

    /// Servername callback (SSL_CTX_set_tlsext_servername_callback(3)): acknowledges the server name;
    /// the certificate was chosen by `clientHello`.
    private static let serverName: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { _, _, _ in
        SSL_TLSEXT_ERR_OK
    }

    /// ALPN select callback (SSL_CTX_set_alpn_select_cb(3)).
    private static let selectALPN: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
                                                   UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { ssl, out, outLength, client, length, _ in
        guard let generation = generation(ssl), let out, let outLength, let client else { return SSL_TLSEXT_ERR_NOACK }
        return generation.selectALPN(client: client, length: length, out: out, outLength: outLength)
    }

    /// Ticket key callback (SSL_CTX_set_tlsext_ticket_key_evp_cb(3)).
    private static let ticketKey: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, OpaquePointer?,
                                                  OpaquePointer?, Int32) -> Int32 = { ssl, name, iv, cipher, mac, encrypt in
        guard let generation = generation(ssl), let name, let iv, let cipher, let mac else { return -1 }
        return generation.ticketKeys.callback(name: name, iv: iv, cipher: cipher, mac: mac, encrypt: encrypt != 0,
                                              alwaysRenew: SSL_version(ssl) == TLS1_3_VERSION)
    }
}

