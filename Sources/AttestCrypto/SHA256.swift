/// SHA-256 (FIPS 180-4) through libcrypto, one-shot.
///
/// All functions return the 32-byte digest. Thread-safe: no shared mutable state. For streaming input
/// (request bodies) use `SHA256Hasher`.
public enum SHA256 {
    /// Digest length in bytes (32).
    public static let byteCount = 32

    /// SHA-256 of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// SHA-256 of `bytes`.
    public static func hash(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// SHA-256 of the bytes in `buffer`.
    public static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        MessageDigest.sha256.digest(buffer)
    }

    /// SHA-256 of `first || second` without building the concatenation
    /// (e.g. Apple's nonce = SHA256(authenticatorData || clientDataHash)).
    public static func hash(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        first.withUnsafeBytes { a in second.withUnsafeBytes { b in MessageDigest.sha256.digest(a, b) } }
    }

    /// SHA-256 of the UTF-8 bytes of `text`.
    public static func hash(utf8 text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }
}
