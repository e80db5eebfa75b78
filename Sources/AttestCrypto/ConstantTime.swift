internal import COpenSSL

/// Constant-time comparison of secrets, hashes and identifiers (`CRYPTO_memcmp`).
///
/// The running time depends only on the lengths, never on where the contents differ.
/// DESIGN.md section 3: "comparisons of hashes and IDs are constant-time".
public enum ConstantTime {
    /// True when `a` and `b` have the same length and the same bytes.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 } }
    }

    /// True when `a` and `b` have the same length and the same bytes.
    public static func equals(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 } }
    }
}
