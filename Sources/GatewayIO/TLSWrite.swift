// Outcome of one non-blocking TLS write.

/// What one non-blocking `TLSConnection.write(_:)` did (SSL_write_ex(3) with
/// `SSL_MODE_ENABLE_PARTIAL_WRITE`, and SSL_get_error(3)).
package enum TLSWrite: Sendable, Equatable {
    /// `n` bytes (1...count) were taken, possibly fewer than offered (a record of 16 KiB or a few,
    /// as far as the socket took them); write the rest with the next call.
    case wrote(Int)
    /// OpenSSL needs bytes from the peer first: wait for readability, then write the same bytes again.
    case wantRead
    /// The socket is full: wait for writability, then write the same bytes again (at least as many,
    /// same prefix; the buffer may have moved: `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`).
    case wantWrite
    /// A fatal error (peer reset, broken pipe, protocol error); the connection is unusable.
    case failed(String)
}
