// Outcome of one non-blocking TLS handshake step or flush.

/// What one non-blocking `TLSConnection.handshake()` (or `TLSConnection.flush(_:)`) step did.
///
/// `.wantRead` / `.wantWrite` map OpenSSL's `SSL_ERROR_WANT_READ` / `SSL_ERROR_WANT_WRITE`
/// (SSL_get_error(3)): wait for that readiness of the socket, then call the same method again.
package enum TLSIOResult: Sendable, Equatable {
    /// The step completed (the handshake is finished; the buffer is flushed).
    case done
    /// OpenSSL needs bytes from the peer: call again once the socket is readable.
    case wantRead
    /// OpenSSL needs the socket to take bytes: call again once the socket is writable.
    case wantWrite
    /// The peer went away before the handshake finished: end of file (with or without a TLS
    /// close_notify alert). Never returned by `flush(_:)`.
    case closed
    /// A fatal error (protocol alert, refused certificate, socket error); the reason is OpenSSL's
    /// error text (ERR_error_string_n(3)) or the socket's `strerror`. The connection is unusable.
    case failed(String)
}
