internal import COpenSSL
import Synchronization

/// A digest algorithm fetched once from the default provider and shared by all threads.
///
/// OpenSSL 3 `EVP_MD` objects are reference counted and read-only after `EVP_MD_fetch`, so one
/// fetched instance may be used concurrently (OpenSSL 3.0 threading model, "fetched algorithms");
/// fetching once avoids a method-store lookup on every hash.
final class MessageDigest: @unchecked Sendable {  // `md` immutable and shareable (read-only EVP_MD); idle contexts behind `idle`'s lock
    let md: OpaquePointer
    let size: Int

    private init?(_ name: String) {
        guard let md = EVP_MD_fetch(nil, name, nil) else { ERR_clear_error(); return nil }
        self.md = md
        self.size = Int(EVP_MD_get_size(md))
    }

    deinit {
        idle.withLock { pool in for c in pool { EVP_MD_CTX_free(OpaquePointer(bitPattern: c)) } }
        EVP_MD_free(md)
    }

    static let sha256: MessageDigest = MessageDigest("SHA256")!
    static let sha384: MessageDigest = MessageDigest("SHA384")!
    static let sha1: MessageDigest = MessageDigest("SHA1")!

    /// Idle `EVP_MD_CTX`s of this algorithm, reused across digests (at most `poolLimit` kept):
    /// `EVP_DigestInit_ex2` re-initializes a used context, so a digest costs no context allocation.
    private let idle = Mutex<[Int]>([])  // EVP_MD_CTX addresses (bit patterns)
    private static let poolLimit = 16

    /// One-shot digest of the concatenation of `parts` (no copy of the parts).
    func digest(_ parts: UnsafeRawBufferPointer...) -> [UInt8] {
        digest(parts)
    }

    /// One-shot digest of `bytes`.
    func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        withContext { c in finish(c, update(c, bytes)) }
    }

    /// One-shot digest of `first || second`.
    func digest(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> [UInt8] {
        withContext { c in finish(c, update(c, first) && update(c, second)) }
    }

    func digest(_ parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        withContext { c in
            var ok = true
            for part in parts where ok { ok = update(c, part) }
            return finish(c, ok)
        }
    }

    /// Runs `body` with an initialized context (taken from the pool, or new), returned to the pool after.
    private func withContext(_ body: (OpaquePointer) -> [UInt8]) -> [UInt8] {
        let raw = idle.withLock { $0.popLast() }
        // A nil context only happens on malloc failure.
        guard let c = raw.flatMap({ OpaquePointer(bitPattern: $0) }) ?? EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        guard EVP_DigestInit_ex2(c, md, nil) == 1 else { fatalError("SHA digest failed: \(CryptoError.drainErrorQueue())") }
        let out = body(c)
        let kept = idle.withLock { pool -> Bool in
            guard pool.count < MessageDigest.poolLimit else { return false }
            pool.append(Int(bitPattern: c))
            return true
        }
        if !kept { EVP_MD_CTX_free(c) }
        return out
    }

    @inline(__always) private func update(_ c: OpaquePointer, _ part: UnsafeRawBufferPointer) -> Bool {
        part.count == 0 || EVP_DigestUpdate(c, part.baseAddress, part.count) == 1
    }

    private func finish(_ c: OpaquePointer, _ ok: Bool) -> [UInt8] {
        var length: UInt32 = 0
        var finished = ok
        // Finished into a temporary buffer, then copied into an array of its exact size: the array
        // initializers that let a closure write in place are not specialized and look the array's
        // generic metadata up on every call, about 370 instructions more (bench/PERFORMANCE.md, "Twelfth pass").
        let out = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer -> [UInt8] in
            if finished { finished = EVP_DigestFinal_ex(c, buffer.baseAddress, &length) == 1 }
            return finished ? Array(UnsafeBufferPointer(rebasing: buffer[..<min(Int(length), size)])) : []
        }
        // Digest primitives on in-memory buffers cannot fail except on allocation failure.
        guard finished, out.count == size else { fatalError("SHA digest failed: \(CryptoError.drainErrorQueue())") }
        return out
    }
}
