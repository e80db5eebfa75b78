import AttestCrypto

/// Constant-time equality for hashes and identifiers, accepting slices (forwards to
/// `AttestCrypto.ConstantTime`, i.e. `CRYPTO_memcmp`).
enum ConstantTimeBytes {
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool { ConstantTime.equals(a, b) }
    static func equal(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool { ConstantTime.equals(a, b) }
}
