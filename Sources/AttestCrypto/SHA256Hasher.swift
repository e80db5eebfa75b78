internal import COpenSSL

/// Incremental SHA-256 (FIPS 180-4) for streamed input such as a request body read in chunks.
///
/// Usage: `let h = SHA256Hasher(); h.update(chunk) ...; let digest = h.finalize()` (32 bytes).
/// After `finalize()` the hasher is reset and can be reused. Not thread-safe: one instance belongs to
/// one stream (one connection), which is how the gateway uses it.
public final class SHA256Hasher {
    private let ctx: OpaquePointer

    /// A fresh hasher. Traps only if libcrypto cannot allocate a digest context (out of memory).
    public init() {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.ctx = ctx
        reset()
    }

    deinit { EVP_MD_CTX_free(ctx) }

    /// Starts over as if no byte had been fed.
    public func reset() {
        guard EVP_DigestInit_ex2(ctx, MessageDigest.sha256.md, nil) == 1 else {
            fatalError("EVP_DigestInit_ex2(SHA256): \(CryptoError.drainErrorQueue())")
        }
    }

    /// Feeds `bytes`.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count)
    }

    /// Feeds `bytes`.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Feeds `bytes`.
    public func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest of everything fed since the last reset; then resets.
    public func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(ctx, $0.baseAddress, &length) }
        reset()
        return out
    }
}
