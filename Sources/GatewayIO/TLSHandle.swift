// Owner of one OpenSSL object used by the TLS layer.

internal import COpenSSL

/// Owns one OpenSSL object (`X509`, `EVP_PKEY`, `SSL_CTX`, ...) and frees it exactly once, in
/// `deinit`, so no early return or thrown error leaks it. Immutable after creation.
final class TLSHandle: @unchecked Sendable {  // the wrapped objects are only read after construction
    /// The owned pointer.
    let pointer: OpaquePointer
    private let release: (OpaquePointer) -> Void

    /// Takes ownership of `pointer` (non-nil), freed with `release`.
    init(_ pointer: OpaquePointer, release: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.release = release
    }

    deinit { release(pointer) }

    /// Owns an `X509` (freed with X509_free(3)).
    static func x509(_ pointer: OpaquePointer) -> TLSHandle { TLSHandle(pointer) { X509_free($0) } }
    /// Owns an `EVP_PKEY` (freed with EVP_PKEY_free(3)).
    static func key(_ pointer: OpaquePointer) -> TLSHandle { TLSHandle(pointer) { EVP_PKEY_free($0) } }
    /// Owns an `SSL_CTX` (released with SSL_CTX_free(3); `SSL` objects made from it keep their own
    /// reference).
    static func context(_ pointer: OpaquePointer) -> TLSHandle { TLSHandle(pointer) { SSL_CTX_free($0) } }
}
