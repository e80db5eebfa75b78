internal import COpenSSL

/// The fixed-width `r || s` form of ECDSA signatures that JOSE uses (RFC 7518 section 3.4: ES256 is
/// the 32-byte big-endian `r` followed by the 32-byte `s`), converted to and from DER
/// `ECDSA-Sig-Value` through libcrypto's `ECDSA_SIG` (no hand-written ASN.1).
extension ECDSASignature {
    /// `r || s`, each left-padded to `scalarBytes` (32 for P-256), from a DER signature.
    /// - Throws: `CryptoError.invalidEncoding` when `der` is not one DER `ECDSA-Sig-Value` or an
    ///   integer does not fit in `scalarBytes`.
    public static func fixedWidth(fromDER der: [UInt8], scalarBytes: Int = 32) throws -> [UInt8] {
        guard scalarBytes > 0, scalarBytes <= 66 else { throw CryptoError.invalidArgument("scalarBytes \(scalarBytes)") }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            let sig = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            if let sig, cursor != base + buffer.count { ECDSA_SIG_free(sig); return nil }
            return sig
        }
        guard let sig = parsed else { ERR_clear_error(); throw CryptoError.invalidEncoding("not a DER ECDSA signature") }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 2 * scalarBytes)
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig) else { return false }
            return BN_bn2binpad(r, o.baseAddress, Int32(scalarBytes)) == Int32(scalarBytes)
                && BN_bn2binpad(s, o.baseAddress! + scalarBytes, Int32(scalarBytes)) == Int32(scalarBytes)
        }
        guard ok else { ERR_clear_error(); throw CryptoError.invalidEncoding("ECDSA integer wider than \(scalarBytes) bytes") }
        return out
    }

    /// DER `ECDSA-Sig-Value` of a fixed-width `r || s` (even length, at most 132 bytes).
    /// - Throws: `CryptoError.invalidEncoding` for an odd or empty length.
    public static func der(fromFixedWidth raw: [UInt8]) throws -> [UInt8] {
        guard !raw.isEmpty, raw.count % 2 == 0, raw.count <= 132 else {
            throw CryptoError.invalidEncoding("fixed-width signature of \(raw.count) bytes")
        }
        let half = raw.count / 2
        guard let sig = ECDSA_SIG_new() else { throw CryptoError.openSSLFailure("ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(sig) }
        let (r, s) = raw.withUnsafeBufferPointer { b in
            (BN_bin2bn(b.baseAddress, Int32(half), nil), BN_bin2bn(b.baseAddress! + half, Int32(half), nil))
        }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            if let r { BN_free(r) }
            if let s { BN_free(s) }
            throw CryptoError.openSSLFailure("ECDSA_SIG_set0")
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { throw CryptoError.openSSLFailure("i2d_ECDSA_SIG") }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { o -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = o.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        guard written == length else { throw CryptoError.openSSLFailure("i2d_ECDSA_SIG") }
        return out
    }
}
