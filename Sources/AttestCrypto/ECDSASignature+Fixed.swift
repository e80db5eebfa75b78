internal import COpenSSL

extension ECDSASignature {
    /// The fixed-width form `r || s` of a DER `ECDSA-Sig-Value`, each integer left-padded to
    /// `scalarBytes` (32 for P-256): the signature encoding of JWS ES256 (RFC 7518 section 3.4).
    /// Parsed by libcrypto (d2i_ECDSA_SIG(3), ECDSA_SIG_get0(3), BN_bn2binpad(3)).
    /// - Throws: `CryptoError.invalidEncoding` when `der` is not a strict-DER signature whose integers
    ///   fit in `scalarBytes`.
    public static func fixedWidth(fromDER der: [UInt8], scalarBytes: Int = 32) throws -> [UInt8] {
        guard scalarBytes > 0, isStrictDER(der, maxScalarBytes: scalarBytes) else {
            throw CryptoError.invalidEncoding("not a DER ECDSA signature with \(scalarBytes)-byte integers")
        }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else {
            ERR_clear_error()
            throw CryptoError.invalidEncoding("d2i_ECDSA_SIG refused the signature")
        }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        guard let r, let s else { throw CryptoError.invalidEncoding("signature without r or s") }
        var out = [UInt8](repeating: 0, count: 2 * scalarBytes)
        let written = out.withUnsafeMutableBufferPointer { buffer -> (Int32, Int32) in
            (BN_bn2binpad(r, buffer.baseAddress, Int32(scalarBytes)),
             BN_bn2binpad(s, buffer.baseAddress! + scalarBytes, Int32(scalarBytes)))
        }
        guard written.0 == Int32(scalarBytes), written.1 == Int32(scalarBytes) else {
            throw CryptoError.invalidEncoding("r or s longer than \(scalarBytes) bytes")
        }
        return out
    }
}
