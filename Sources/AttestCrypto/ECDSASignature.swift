/// Strict DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` (SEC 1 v2 section C.5,
/// X.690 section 10 DER rules) for curves up to 521 bits.
///
/// Strictness: definite minimal lengths, minimal positive integers (a leading 0x00 only before a byte
/// with the high bit set), no negative or empty integers, nothing after the SEQUENCE. A raw
/// `r || s` (64 bytes for P-256) is therefore refused. OpenSSL re-encodes and compares as well; this
/// check runs first so that encoding errors are told apart from wrong signatures.
public enum ECDSASignature {
    /// True when `signature` is a strict-DER ECDSA signature whose integers fit in `maxScalarBytes`
    /// bytes (32 for P-256, 48 for P-384).
    public static func isStrictDER(_ signature: [UInt8], maxScalarBytes: Int = 66) -> Bool {
        signature.withUnsafeBytes { isStrictDER($0, maxScalarBytes: maxScalarBytes) }
    }

    /// True when `signature` is a strict-DER ECDSA signature (see the type's documentation).
    public static func isStrictDER(_ signature: UnsafeRawBufferPointer, maxScalarBytes: Int = 66) -> Bool {
        var index = 0
        let count = signature.count
        guard count >= 8, signature[0] == 0x30 else { return false }
        index = 1
        guard let seqLength = readLength(signature, &index), index + seqLength == count else { return false }
        for _ in 0..<2 {
            guard index < count, signature[index] == 0x02 else { return false }
            index += 1
            guard let length = readLength(signature, &index), length >= 1, length <= maxScalarBytes + 1,
                  index + length <= count else { return false }
            let first = signature[index]
            if first & 0x80 != 0 { return false }  // negative
            if length > 1 && first == 0x00 && signature[index + 1] & 0x80 == 0 { return false }  // non-minimal
            if length == maxScalarBytes + 1 && first != 0x00 { return false }
            index += length
        }
        return index == count
    }

    /// Reads a DER length at `index` (minimal: short form below 128, long form only with one byte >= 128).
    private static func readLength(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Int? {
        guard index < bytes.count else { return nil }
        let first = bytes[index]
        index += 1
        if first < 0x80 { return Int(first) }
        guard first == 0x81, index < bytes.count else { return nil }  // signatures are < 256 bytes
        let value = bytes[index]
        index += 1
        return value >= 0x80 ? Int(value) : nil
    }
}
