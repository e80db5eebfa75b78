internal import COpenSSL

/// A parsed NIST P-256 public key (an App Attest device key or a receipt signer key).
///
/// Parse once, verify many times: the gateway caches instances per keyId. **Thread-safe**: the key is
/// immutable after `init`; every verification creates its own `EVP_PKEY_CTX` from the shared
/// `EVP_PKEY`, which OpenSSL 3 permits concurrently (reference counting is atomic and provider-native
/// keys are never modified by a verify operation). Instances can be shared freely between threads.
///
/// Signatures are ECDSA (FIPS 186-4 / SEC 1) in strict DER only (see `ECDSASignature`).
public final class P256PublicKey: @unchecked Sendable {  // no lock needed: immutable; OpenSSL 3 EVP_PKEY is safe for concurrent read use
    let pkey: OpaquePointer

    /// The 65-byte uncompressed point `04 || X || Y` (ANSI X9.63 / SEC 1 section 2.3.3).
    public let x963Representation: [UInt8]

    /// Parses a 65-byte uncompressed point `04 || X || Y`.
    /// - Throws: `CryptoError.invalidKey` for another length or prefix, or a point not on P-256.
    public init(x963 bytes: [UInt8]) throws {
        self.pkey = try ECKeyMaterial.publicKey(x963: bytes, curve: .p256)
        self.x963Representation = bytes
    }

    /// Parses a DER SubjectPublicKeyInfo (RFC 5480) holding a P-256 key; nothing may follow it.
    /// - Throws: `CryptoError.invalidEncoding` / `.invalidKey`.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws {
        let key = try ECKeyMaterial.parseSubjectPublicKeyInfo(der)
        let point: [UInt8] = try key.withPointer { k in
            guard ECKeyMaterial.curve(of: k) == .p256 else { throw CryptoError.invalidKey("not a P-256 key") }
            return try ECKeyMaterial.uncompressedPoint(of: k, curve: .p256)
        }
        try self.init(x963: point)
    }

    /// Parses a PEM `PUBLIC KEY` block (SubjectPublicKeyInfo).
    public convenience init(pem: String) throws {
        let der = try PEM.decode(pem, label: "PUBLIC KEY")
        try self.init(subjectPublicKeyInfo: der)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The DER SubjectPublicKeyInfo (RFC 5480) of this key.
    public var subjectPublicKeyInfo: [UInt8] {
        // Encoding a valid in-memory key only fails on allocation failure.
        (try? ECKeyMaterial.subjectPublicKeyInfo(of: pkey)) ?? []
    }

    /// Verifies an ECDSA-SHA256 signature over `message` (the message is hashed with SHA-256 here).
    ///
    /// App Attest assertions: `message` is the 32-byte nonce, so the digest verified is SHA256(nonce).
    public func verify(signature: [UInt8], message: [UInt8]) -> SignatureVerification {
        guard ECDSASignature.isStrictDER(signature, maxScalarBytes: 32) else { return .malformedEncoding }
        let digest = SHA256.hash(message)
        return verifyDER(signature, digest: digest)
    }

    /// Verifies an ECDSA signature over an already computed 32-byte SHA-256 `digest`.
    public func verify(signature: [UInt8], digest: [UInt8]) -> SignatureVerification {
        guard ECDSASignature.isStrictDER(signature, maxScalarBytes: 32) else { return .malformedEncoding }
        guard digest.count == 32 else { return .invalid }
        return verifyDER(signature, digest: digest)
    }

    private func verifyDER(_ signature: [UInt8], digest: [UInt8]) -> SignatureVerification {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else { ERR_clear_error(); return .invalid }
        // Owned for the duration of this call only.
        let owner = try? OpenSSLHandle(ctx, "EVP_PKEY_CTX_new_from_pkey") { EVP_PKEY_CTX_free($0) }
        let rc: Int32 = withExtendedLifetime(owner) {
            guard EVP_PKEY_verify_init(ctx) == 1 else { return -1 }
            return signature.withUnsafeBufferPointer { s in
                digest.withUnsafeBufferPointer { d in
                    EVP_PKEY_verify(ctx, s.baseAddress, s.count, d.baseAddress, d.count)
                }
            }
        }
        if rc == 1 { return .valid }
        ERR_clear_error()
        return .invalid
    }
}
