// One TLS connection (OpenSSL `SSL`) over a non-blocking socket.

internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An OpenSSL `SSL` over a connected non-blocking socket, server or client side (RFC 8446 / RFC 5246),
/// driven by its owner: every method returns at once with a small enum saying what happened or which
/// readiness to wait for, and never throws.
///
/// Confined to one event loop's queue (not `Sendable`): the owner calls it from there only. The
/// socket stays the owner's (its `SocketChannel` closes it); `close()` frees only the `SSL`. Bytes
/// move through `TLSSocketBIO` (recv / send with MSG_NOSIGNAL: no SIGPIPE).
///
/// Driving it: call `handshake()` until `.done`, waiting for the readiness it asks for; then `read`
/// until `.wantRead` each time the socket is readable (one call returns at most one record's
/// plaintext, and read-ahead may hold more bytes than the socket shows: after pausing, resume by
/// reading, or check `hasBufferedInput`); `write` / `flush(_:)` until everything is taken, and after
/// `.wantWrite` (or `.wantRead`) call again with the same bytes (SSL_write(3) retry rule: same
/// prefix, at least as long; the buffer may move). `shutdown()` then `close()` when done.
///
/// End of file: a close_notify alert is `.closed` with `receivedCloseNotify` true; an end of file
/// without it (OpenSSL 3.0: `SSL_R_UNEXPECTED_EOF_WHILE_READING`; older: `SSL_ERROR_SYSCALL` with
/// errno 0) is also `.closed`, with `receivedCloseNotify` false, for the owner to treat as a
/// possible truncation when framing depends on it (a close-delimited HTTP/1.1 body). A socket error
/// (`ECONNRESET`, `EPIPE`, ...) is `.failed` with `strerror`'s text; a protocol error or refused
/// certificate is `.failed` with OpenSSL's error text (plus the verification result for a client).
/// OpenSSL's per-thread error queue is cleared before every call and emptied after every failure,
/// so one connection's errors never appear in another's result.
package final class TLSConnection {
    /// The socket descriptor (not owned).
    package let fd: Int32
    private var ssl: OpaquePointer?
    private let bioState: UnsafeMutablePointer<TLSSocketBIO.State>
    /// Server side: the generation of the listener's context this connection started with. Held, not
    /// read: it keeps the `SSL_CTX`s and the state OpenSSL's callbacks reach through them (ex_data)
    /// alive as long as this `SSL`, whatever `reload` does meanwhile.
    private let generation: TLSServerContext.Generation?
    /// Client side: the context, held for the same reason (the new-session callback stores into it).
    private let client: TLSClientContext?
    /// Client side: the server name the session cache is keyed by.
    let sessionKey: String
    private var fatal = false
    private var shutdownSent = false
    /// Whether the handshake finished (`handshake()` returned `.done`).
    package private(set) var isHandshakeComplete = false
    /// Whether the peer sent close_notify (a clean TLS close); false after a bare end of file.
    package private(set) var receivedCloseNotify = false
    /// Whether this is the server side.
    package let isServer: Bool

    /// A server-side connection on the accepted socket `fd`, using the context's current certificates
    /// (a later `reload` does not affect it).
    /// - Throws: `TLSContextError.openSSL` when OpenSSL cannot allocate the connection.
    package init(server context: TLSServerContext, fd: Int32) throws(TLSContextError) {
        let generation = context.currentGeneration()
        self.fd = fd
        self.generation = generation
        client = nil
        sessionKey = ""
        isServer = true
        bioState = .allocate(capacity: 1)
        bioState.initialize(to: TLSSocketBIO.State(fd: fd))
        ERR_clear_error()
        guard let ssl = SSL_new(generation.defaultContext) else {
            throw .openSSL(call: "SSL_new", reason: TLSOpenSSLErrors.drain(or: "out of memory"))
        }
        self.ssl = ssl
        try attach(ssl)
        SSL_set_accept_state(ssl)
    }

    /// A client-side connection on the connected socket `fd` to `serverName` (a DNS name, or an IP
    /// address literal, IPv6 with or without brackets): sends it as SNI (DNS names only) and, when
    /// the context verifies, checks the certificate against it. Offers the context's cached session
    /// for that name, if any.
    /// - Throws: `TLSContextError.invalidSettings` for an empty name or one with a NUL byte,
    ///   `.openSSL` when OpenSSL refuses the name or cannot allocate the connection.
    package init(client context: TLSClientContext, fd: Int32, serverName name: String) throws(TLSContextError) {
        let serverName = name.hasPrefix("[") && name.hasSuffix("]") && name.count > 2 ? String(name.dropFirst().dropLast()) : name
        guard !serverName.isEmpty, !serverName.utf8.contains(0) else { throw .invalidSettings("empty server name or NUL byte in it") }
        self.fd = fd
        generation = nil
        client = context
        sessionKey = serverName
        isServer = false
        bioState = .allocate(capacity: 1)
        bioState.initialize(to: TLSSocketBIO.State(fd: fd))
        ERR_clear_error()
        guard let ssl = SSL_new(context.context.pointer) else {
            throw .openSSL(call: "SSL_new", reason: TLSOpenSSLErrors.drain(or: "out of memory"))
        }
        self.ssl = ssl
        try attach(ssl)
        let isAddress = TLSConnection.isIPAddress(serverName)
        if !isAddress {
            guard cshim_SSL_set_tlsext_host_name(ssl, serverName) == 1 else {
                throw .openSSL(call: "SSL_set_tlsext_host_name(\(serverName))", reason: TLSOpenSSLErrors.drain(or: "refused"))
            }
        }
        if context.isVerifying {
            if isAddress {
                guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) == 1 else {
                    throw .openSSL(call: "X509_VERIFY_PARAM_set1_ip_asc(\(serverName))", reason: TLSOpenSSLErrors.drain(or: "refused"))
                }
            } else {
                SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                guard SSL_set1_host(ssl, serverName) == 1 else {
                    throw .openSSL(call: "SSL_set1_host(\(serverName))", reason: TLSOpenSSLErrors.drain(or: "refused"))
                }
            }
        }
        if context.settings.sessionReuse, let session = context.session(for: serverName) {
            _ = SSL_set_session(ssl, session)
            SSL_SESSION_free(session)
        }
        SSL_set_connect_state(ssl)
    }

    private func attach(_ ssl: OpaquePointer) throws(TLSContextError) {
        guard let bio = TLSSocketBIO.make(bioState) else {
            throw .openSSL(call: "BIO_new", reason: TLSOpenSSLErrors.drain(or: "out of memory"))
        }
        SSL_set_bio(ssl, bio, bio)
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        close()
        bioState.deinitialize(count: 1)
        bioState.deallocate()
    }

    /// The connection an `SSL` belongs to (ex_data index 0), for OpenSSL callbacks.
    static func owner(of ssl: OpaquePointer) -> TLSConnection? {
        guard let raw = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: - Handshake, read, write

    /// One step of the handshake (SSL_do_handshake(3)): `.done` once finished (and on every call
    /// after), `.wantRead` / `.wantWrite` to wait, `.closed` when the peer went away first, `.failed`
    /// with the reason (no shared version or cipher, bad certificate, ...).
    package func handshake() -> TLSIOResult {
        guard let ssl else { return .failed("connection closed") }
        if isHandshakeComplete { return .done }
        if fatal { return .failed("connection failed earlier") }
        TLSOpenSSLErrors.clearBeforeIO()
        bioState.pointee.lastErrno = 0
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            isHandshakeComplete = true
            awaitingPeerBytes = false
            return .done
        }
        switch inputOutcome(ssl, rc) {
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        case .closed: return .closed
        case .failed(let reason): return .failed(reason)
        }
    }

    /// Decrypts into `buffer` (SSL_read_ex(3)); `buffer` must not be empty. Does the handshake first
    /// if it is not finished. Allocation-free except when it fails.
    @inline(__always)
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSRead {
        guard let ssl else { return .failed("connection closed") }
        if fatal { return .failed("connection failed earlier") }
        TLSOpenSSLErrors.clearBeforeIO()
        bioState.pointee.lastErrno = 0
        var count = 0
        if SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 {
            awaitingPeerBytes = false
            return .bytes(count)
        }
        switch inputOutcome(ssl, 0) {
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        case .closed: return .closed
        case .failed(let reason): return .failed(reason)
        }
    }

    /// Encrypts and sends from `bytes` (SSL_write_ex(3), partial writes on): `.wrote(n)` with
    /// 1...count bytes (an empty `bytes` gives `.wrote(0)`). Allocation-free except when it fails.
    @inline(__always)
    package func write(_ bytes: UnsafeRawBufferPointer) -> TLSWrite {
        guard let ssl else { return .failed("connection closed") }
        if fatal { return .failed("connection failed earlier") }
        guard !bytes.isEmpty else { return .wrote(0) }
        TLSOpenSSLErrors.clearBeforeIO()
        bioState.pointee.lastErrno = 0
        var count = 0
        if SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &count) == 1 { return .wrote(count) }
        switch outcome(ssl, 0) {
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        case .closed: return .failed("the peer closed the connection")
        case .failed(let reason): return .failed(reason)
        }
    }

    /// Writes `output`'s queued bytes through TLS (`OutputBuffer.flush(using:)`): `.done` when all
    /// went, `.wantWrite` / `.wantRead` to wait (the rest stays queued; the next flush retries with
    /// the same bytes first, as OpenSSL requires), `.failed` (never `.closed`); `written` counts the
    /// plaintext bytes taken. Do not write to this connection by other means while bytes are queued.
    package func flush(_ output: inout OutputBuffer) -> (result: TLSIOResult, written: Int) {
        var stop = TLSIOResult.done
        let (result, written) = output.flush { bytes -> Result<Int, Socket.Failure> in
            switch write(bytes) {
            case .wrote(let n): return .success(n)
            case .wantWrite:
                stop = .wantWrite
                return .success(0)
            case .wantRead:
                stop = .wantRead
                return .success(0)
            case .failed(let reason):
                stop = .failed(reason)
                return .failure(Socket.Failure(call: reason, errno: 0))
            }
        }
        if case .done = result { return (.done, written) }
        return (stop, written)
    }

    /// Sends close_notify once (SSL_shutdown(3)), without waiting for the peer's; errors and a full
    /// socket are ignored (then the alert may not go out). Nothing is sent before the handshake
    /// finished or after a fatal error (OpenSSL forbids it).
    package func shutdown() {
        guard let ssl, !shutdownSent, !fatal, isHandshakeComplete else { return }
        shutdownSent = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Frees the `SSL` (SSL_free(3)); the socket stays open (its owner closes it). Idempotent; every
    /// later call answers `.failed("connection closed")`.
    ///
    /// A connection that ends without a fatal error keeps its session resumable even when no
    /// close_notify went out (RFC 5246 section 7.2.1: since TLS 1.1 an unclean close does not
    /// invalidate the session): the shutdown state is marked done (SSL_set_shutdown(3)) before the free,
    /// as nginx does, because SSL_free would otherwise drop the session from the cache and mark it not
    /// resumable. After a fatal error the session is dropped (RFC 5246 section 7.2.2).
    package func close() {
        guard let ssl else { return }
        if isHandshakeComplete && !fatal { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN) }
        SSL_set_ex_data(ssl, 0, nil)
        SSL_free(ssl)
        self.ssl = nil
    }

    /// Whether `close()` was called.
    package var isClosed: Bool { ssl == nil }

    // MARK: - After the handshake

    /// The ALPN protocol selected (RFC 7301): "h2", "http/1.1", or nil when none was.
    package var negotiatedProtocol: String? {
        guard let ssl else { return nil }
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version in OpenSSL's spelling (SSL_get_version(3)): "TLSv1.2" or "TLSv1.3".
    package var protocolVersion: String? {
        guard let ssl, isHandshakeComplete else { return nil }
        return String(cString: SSL_get_version(ssl))
    }

    /// The server name (SNI, RFC 6066) the client sent (server side) or asked for (client side);
    /// nil when none.
    package var serverName: String? {
        guard let ssl, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else { return nil }
        return String(cString: name)
    }

    /// Whether the handshake resumed an earlier session (ticket or session ID; SSL_session_reused(3)).
    package var sessionReused: Bool {
        guard let ssl else { return false }
        return SSL_session_reused(ssl) == 1
    }

    /// The cipher suite, OpenSSL name (SSL_CIPHER_get_name(3)), e.g. "TLS_AES_128_GCM_SHA256" or
    /// "ECDHE-ECDSA-AES128-GCM-SHA256"; nil before the handshake.
    package var cipher: String? {
        guard let ssl, let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// The peer certificate's subject, RFC 2253 (e.g. "CN=api.example.com,O=Example"); nil when the
    /// peer sent none (a client, normally) or before the handshake.
    package var peerCertificateSubject: String? {
        guard let ssl, let certificate = SSL_get0_peer_certificate(ssl) else { return nil }
        return TLSX509Name.rfc2253(X509_get_subject_name(certificate))
    }

    /// Whether OpenSSL holds received bytes that a `read` (or handshake step) can use now: after
    /// pausing reads, such bytes do not make the socket readable again; read them directly.
    ///
    /// SSL_has_pending(3) alone is also true for the start of a record whose rest has not arrived
    /// (one byte of a record header is enough), which no read can use: a caller that retried while it
    /// was true would spin on `.wantRead` without ever returning to the poller, and one client could
    /// freeze its event loop with a single byte. So once a read or handshake step has ended wanting
    /// the socket (`.wantRead`: OpenSSL used every complete record it held), this is false until a
    /// step makes progress again.
    package var hasBufferedInput: Bool {
        guard let ssl, !awaitingPeerBytes else { return false }
        return SSL_has_pending(ssl) == 1
    }

    /// The last read or handshake step ended in `.wantRead`: what OpenSSL still buffers, if anything,
    /// is an incomplete record that only more bytes from the peer can finish (`hasBufferedInput`).
    private var awaitingPeerBytes = false

    // MARK: - Errors

    private enum Outcome {
        case wantRead
        case wantWrite
        case closed
        case failed(String)
    }

    /// `outcome` of a failed read or handshake step, noting whether it now waits for the peer's
    /// bytes (`.wantRead`: what OpenSSL still buffers is an incomplete record; see
    /// `hasBufferedInput`) or not (`.wantWrite`).
    @inline(__always)
    private func inputOutcome(_ ssl: OpaquePointer, _ rc: Int32) -> Outcome {
        let result = outcome(ssl, rc)
        switch result {
        case .wantRead: awaitingPeerBytes = true
        case .wantWrite: awaitingPeerBytes = false
        case .closed, .failed: break
        }
        return result
    }

    /// Classifies a failed call (SSL_get_error(3)) and empties the error queue.
    private func outcome(_ ssl: OpaquePointer, _ rc: Int32) -> Outcome {
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            receivedCloseNotify = true
            ERR_clear_error()
            return .closed
        case SSL_ERROR_SYSCALL:
            fatal = true
            let e = bioState.pointee.lastErrno
            let queued = TLSOpenSSLErrors.drain()
            if e != 0 { return .failed(String(cString: strerror(e)) + (queued.isEmpty ? "" : " (\(queued))")) }
            return queued.isEmpty ? .closed : .failed(queued)
        case SSL_ERROR_SSL:
            fatal = true
            let last = ERR_peek_last_error()
            if ERR_GET_LIB(last) == ERR_LIB_SSL && ERR_GET_REASON(last) == SSL_R_UNEXPECTED_EOF_WHILE_READING {
                ERR_clear_error()
                return .closed
            }
            var reason = TLSOpenSSLErrors.drain(or: "TLS protocol error")
            if !isServer {
                let verify = SSL_get_verify_result(ssl)
                if verify != X509_V_OK, let text = X509_verify_cert_error_string(verify) {
                    reason += " (\(String(cString: text)))"
                }
            }
            return .failed(reason)
        default:
            fatal = true
            return .failed(TLSOpenSSLErrors.drain(or: "SSL_get_error \(code)"))
        }
    }

    /// Whether `name` is an IPv4 or IPv6 address literal (inet_pton(3)).
    static func isIPAddress(_ name: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, name, &buffer) == 1 || inet_pton(AF_INET6, name, &buffer) == 1
    }
}
