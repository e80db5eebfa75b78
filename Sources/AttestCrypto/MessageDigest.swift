internal import COpenSSL

/// A digest algorithm fetched once from the default provider and shared by all threads.
///
/// OpenSSL 3 `EVP_MD` objects are reference counted and read-only after `EVP_MD_fetch`, so one
/// fetched instance may be used concurrently (OpenSSL 3.0 threading model, "fetched algorithms");
/// fetching once avoids a method-store lookup on every hash.
final class MessageDigest: @unchecked Sendable {  // immutable after init; EVP_MD is read-only and shareable
    let md: OpaquePointer
    let size: Int

    private init?(_ name: String) {
        guard let md = EVP_MD_fetch(nil, name, nil) else { ERR_clear_error(); return nil }
        self.md = md
        self.size = Int(EVP_MD_get_size(md))
    }

    deinit { EVP_MD_free(md) }

    static let sha256: MessageDigest = MessageDigest("SHA256")!
    static let sha384: MessageDigest = MessageDigest("SHA384")!
    static let sha1: MessageDigest = MessageDigest("SHA1")!

    /// One-shot digest of the concatenation of `parts` (no copy of the parts).
    func digest(_ parts: UnsafeRawBufferPointer...) -> [UInt8] {
        digest(parts)
    }

    func digest(_ parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        // EVP_MD_CTX is a temporary owned by a handle; a nil context only happens on malloc failure.
        guard let ctx = try? OpenSSLHandle(EVP_MD_CTX_new(), "EVP_MD_CTX_new", release: { EVP_MD_CTX_free($0) }) else {
            fatalError("EVP_MD_CTX_new: out of memory")
        }
        return ctx.withPointer { c in
            var out = [UInt8](repeating: 0, count: size)
            var ok = EVP_DigestInit_ex2(c, md, nil) == 1
            for part in parts where ok && part.count > 0 {
                ok = EVP_DigestUpdate(c, part.baseAddress, part.count) == 1
            }
            var length: UInt32 = 0
            if ok { ok = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(c, $0.baseAddress, &length) } == 1 }
            // Digest primitives on in-memory buffers cannot fail except on allocation failure.
            guard ok else { fatalError("SHA digest failed: \(CryptoError.drainErrorQueue())") }
            return out
        }
    }
}
