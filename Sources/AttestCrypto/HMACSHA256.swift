internal import COpenSSL

/// HMAC-SHA256 (RFC 2104, FIPS 198-1) through libcrypto's `HMAC()`; thread-safe.
public enum HMACSHA256 {
    /// The 32-byte HMAC-SHA256 of `message` under `key` (any key length, including empty).
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    // HMAC() wants a non-null key pointer even for an empty key.
                    var zero: UInt8 = 0
                    return withUnsafePointer(to: &zero) { z in
                        let keyPointer = k.count > 0 ? k.baseAddress! : UnsafeRawPointer(z)
                        let msgPointer = m.count > 0 ? m.bindMemory(to: UInt8.self).baseAddress : z
                        return HMAC(MessageDigest.sha256.md, keyPointer, Int32(clamping: k.count),
                                    msgPointer, m.count, o.baseAddress, &length) != nil
                    }
                }
            }
        }
        guard ok, length == 32 else { fatalError("HMAC-SHA256 failed: \(CryptoError.drainErrorQueue())") }
        return out
    }
}
