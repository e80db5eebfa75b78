internal import COpenSSL

/// Cryptographically secure random bytes from libcrypto's DRBG (`RAND_bytes`); thread-safe.
public enum SecureRandom {
    /// `count` random bytes (count >= 0).
    /// - Throws: `CryptoError.openSSL` if the DRBG cannot be seeded (never silently weak output).
    public static func bytes(count: Int) throws -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else { throw CryptoError.invalidArgument("count \(count)") }
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let rc = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard rc == 1 else { throw CryptoError.openSSLFailure("RAND_bytes") }
        return out
    }
}
