internal import COpenSSL
import Synchronization

/// A parsed NIST P-256 public key (an App Attest device key or a receipt signer key).
///
/// Parse once, verify many times: the gateway caches instances per keyId. **Thread-safe**: the key is
/// immutable after `init`. A verification borrows the key's cached, already initialised
/// `EVP_PKEY_CTX` when `contextLock` is free (no per-call context setup, as in `openssl speed`);
/// when another thread holds it, the call creates its own `EVP_PKEY_CTX` from the shared `EVP_PKEY`,
/// which OpenSSL 3 permits concurrently. Instances can be shared freely between threads.
///
/// Signatures are ECDSA (FIPS 186-4 / SEC 1) in strict DER only (see `ECDSASignature`).
public final class P256PublicKey: @unchecked Sendable {  // EVP_PKEY immutable; the cached EVP_PKEY_CTX is guarded by `contextLock`
    let pkey: OpaquePointer
    /// A verify-initialised context reused by one caller at a time.
    private let contextLock = Mutex<OpaquePointer?>(nil)

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

    deinit {
        contextLock.withLock { context in
            if let context { EVP_PKEY_CTX_free(context) }
        }
        EVP_PKEY_free(pkey)
    }

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
        // Fast path: the cached context, if no other thread is using it.
        let cached: Int32? = contextLock.withLockIfAvailable { context -> Int32 in
            if context == nil {
                guard let fresh = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else { return -2 }
                guard EVP_PKEY_verify_init(fresh) == 1 else { EVP_PKEY_CTX_free(fresh); return -2 }
                context = fresh
            }
            guard let ctx = context else { return -2 }
            return Self.verify(ctx, signature, digest)
        }
        let rc: Int32
        if let cached, cached != -2 {
            rc = cached
        } else {
            rc = verifyWithFreshContext(signature, digest)
        }
        if rc == 1 { return .valid }
        ERR_clear_error()
        return .invalid
    }

    private func verifyWithFreshContext(_ signature: [UInt8], _ digest: [UInt8]) -> Int32 {
        guard let owner = try? OpenSSLHandle(EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil), "EVP_PKEY_CTX_new_from_pkey",
                                             release: { EVP_PKEY_CTX_free($0) }) else { return -1 }
        return owner.withPointer { ctx in
            guard EVP_PKEY_verify_init(ctx) == 1 else { return -1 }
            return Self.verify(ctx, signature, digest)
        }
    }

    private static func verify(_ ctx: OpaquePointer, _ signature: [UInt8], _ digest: [UInt8]) -> Int32 {
        signature.withUnsafeBufferPointer { s in
            digest.withUnsafeBufferPointer { d in
                EVP_PKEY_verify(ctx, s.baseAddress, s.count, d.baseAddress, d.count)
            }
        }
    }
}
