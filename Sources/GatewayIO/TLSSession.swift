// Owner of one OpenSSL client session.

internal import COpenSSL

/// Owns one `SSL_SESSION` reference (SSL_SESSION_free(3) in deinit).
final class TLSSession: @unchecked Sendable {  // the session is only read (SSL_set_session) once stored
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { SSL_SESSION_free(pointer) }
}
