// OpenSSL BIO over a non-blocking socket descriptor that never raises SIGPIPE.

internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A source/sink BIO (BIO_meth_new(3)) that moves a TLS connection's bytes with `recv(2)` and
/// `send(2, MSG_NOSIGNAL)` on a non-blocking socket descriptor it does not own.
///
/// Used instead of SSL_set_fd(3): OpenSSL 3.0's socket BIO writes with `write(2)`, which raises
/// SIGPIPE on a socket the peer has closed, and would kill any process (a test runner, a tool) that
/// has not ignored the signal. Otherwise it behaves as the socket BIO does: `EAGAIN` sets the retry
/// flags (OpenSSL then reports `SSL_ERROR_WANT_READ` / `WANT_WRITE`), end of file sets
/// `BIO_FLAGS_IN_EOF` and answers `BIO_CTRL_EOF` (so OpenSSL 3.0 reports an end of file without
/// close_notify as `SSL_R_UNEXPECTED_EOF_WHILE_READING`), `EINTR` is retried. A failing call's errno
/// is recorded in `State.lastErrno`, so it cannot be lost to a later library call.
enum TLSSocketBIO {
    /// Per-connection state the BIO's data pointer refers to (owned by the `TLSConnection`).
    struct State {
        /// The socket (owned by the caller's `SocketChannel`, never closed here).
        var fd: Int32
        /// errno of the last failed recv/send (not EAGAIN/EINTR), 0 when none since it was reset.
        var lastErrno: Int32 = 0
    }

    /// A new BIO over `state` (not owned: the caller keeps `state` alive until the BIO is freed).
    static func make(_ state: UnsafeMutablePointer<State>) -> OpaquePointer? {
        guard let bio = BIO_new(method.pointer) else { return nil }
        BIO_set_data(bio, UnsafeMutableRawPointer(state))
        BIO_set_init(bio, 1)
        return bio
    }

    /// The method table, made once per process.
    private static let method: TLSHandle = {
        let type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR
        guard let m = BIO_meth_new(type, "attest-gateway socket") else {
            fatalError("attest-gateway: BIO_meth_new failed: \(TLSOpenSSLErrors.drain())")
        }
        _ = BIO_meth_set_write(m, write)
        _ = BIO_meth_set_read(m, read)
        _ = BIO_meth_set_ctrl(m, ctrl)
        _ = BIO_meth_set_create(m, { _ in 1 })
        _ = BIO_meth_set_destroy(m, { _ in 1 })
        return TLSHandle(m) { BIO_meth_free($0) }
    }()

    private static func state(_ bio: OpaquePointer?) -> UnsafeMutablePointer<State> {
        BIO_get_data(bio)!.assumingMemoryBound(to: State.self)
    }

    private static let read: @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int32) -> Int32 = { bio, buffer, length in
        cshim_BIO_clear_retry_flags(bio)
        let s = state(bio)
        while true {
            let n = recv(s.pointee.fd, buffer, Int(length), 0)
            if n > 0 { return Int32(n) }
            if n == 0 {
                BIO_set_flags(bio, BIO_FLAGS_IN_EOF)
                return 0
            }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK {
                cshim_BIO_set_retry_read(bio)
            } else {
                s.pointee.lastErrno = e
            }
            return -1
        }
    }

    private static let write: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = { bio, buffer, length in
        cshim_BIO_clear_retry_flags(bio)
        let s = state(bio)
        while true {
            let n = send(s.pointee.fd, buffer, Int(length), Int32(MSG_NOSIGNAL))
            if n >= 0 { return Int32(n) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK {
                cshim_BIO_set_retry_write(bio)
            } else {
                s.pointee.lastErrno = e
            }
            return -1
        }
    }

    private static let ctrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = { bio, command, _, pointer in
        switch command {
        case BIO_CTRL_FLUSH:
            return 1
        case BIO_CTRL_EOF:
            return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0
        case BIO_C_GET_FD:
            let fd = state(bio).pointee.fd
            pointer?.assumingMemoryBound(to: Int32.self).pointee = fd
            return Int(fd)
        default:
            return 0
        }
    }
}
