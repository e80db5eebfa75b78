// Outcome of one non-blocking TLS read.

/// What one non-blocking `TLSConnection.read(into:)` did (SSL_read_ex(3) and SSL_get_error(3)).
package enum TLSRead: Sendable, Equatable {
    /// `n` plaintext bytes (1...buffer size) were stored at the start of the buffer.
    case bytes(Int)
    /// Nothing to deliver yet: wait for readability, then read again.
    case wantRead
    /// OpenSSL must send bytes first (e.g. a post-handshake message): wait for writability, then read
    /// again.
    case wantWrite
    /// The peer closed: a close_notify alert (RFC 8446 section 6.1; `TLSConnection.receivedCloseNotify`
    /// is then true) or end of file without one (truncation is possible; `receivedCloseNotify` false).
    case closed
    /// A fatal error: OpenSSL's error text or the socket's `strerror`. The connection is unusable.
    case failed(String)
}
