internal import COpenSSL
import Synchronization

/// An EC private key on P-256 or P-384 for the **signing side** (the software device / simulator and
/// test CAs): generation, PKCS#8 import/export, ECDSA signing with SHA-256 or SHA-384.
///
/// Signatures are DER `ECDSA-Sig-Value` (SEC 1), randomized by OpenSSL (no two are alike).
/// **Thread-safe**: the key is immutable after init. A signature borrows the key's cached,
/// sign-initialised `EVP_PKEY_CTX` when `signLock` is free (no per-call context setup: the gateway
/// signs a verdict token per forwarded request); otherwise it makes its own from the shared `EVP_PKEY`.
public final class ECPrivateKey: @unchecked Sendable {  // EVP_PKEY immutable (safe for concurrent use); the cached EVP_PKEY_CTX is guarded by `signLock`
    let pkey: OpaquePointer
    /// A sign-initialised context reused by one caller at a time.
    private let signLock = Mutex<OpaquePointer?>(nil)
    /// The key's curve.
    public let curve: ECCurve
    /// The public point `04 || X || Y` (65 bytes on P-256, 97 on P-384).
    public let publicKeyPoint: [UInt8]

    /// Generates a fresh key on `curve` from OpenSSL's DRBG.
    public convenience init(generatingOn curve: ECCurve) throws {
        let ctx = try OpenSSLHandle(EVP_PKEY_CTX_new_from_name(nil, StaticCString.pointer(StaticCString.ec), nil), "EVP_PKEY_CTX_new_from_name") { EVP_PKEY_CTX_free($0) }
        var key: OpaquePointer? = nil
        try ctx.withPointer { c in
            guard EVP_PKEY_keygen_init(c) == 1, EVP_PKEY_CTX_set_group_name(c, curve.groupName) == 1,
                  EVP_PKEY_generate(c, &key) == 1 else { throw CryptoError.openSSLFailure("EVP_PKEY_generate") }
        }
        try self.init(taking: key)
    }

    /// Parses a PEM private key: PKCS#8 `PRIVATE KEY` (or SEC 1 `EC PRIVATE KEY`), unencrypted.
    public convenience init(pem: String) throws {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty else { throw CryptoError.invalidEncoding("empty PEM") }
        let key = try OpenSSLHandle.withReadBIO(bytes) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        if key == nil { ERR_clear_error(); throw CryptoError.invalidEncoding("not an unencrypted PEM private key") }
        try self.init(taking: key)
    }

    /// Parses a DER PKCS#8 `PrivateKeyInfo` (RFC 5208); nothing may follow it.
    public convenience init(pkcs8DER der: [UInt8]) throws {
        guard !der.isEmpty else { throw CryptoError.invalidEncoding("empty key") }
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            if let key, cursor != buffer.baseAddress! + buffer.count { EVP_PKEY_free(key); return nil }
            return key
        }
        if key == nil { ERR_clear_error(); throw CryptoError.invalidEncoding("not a DER PKCS#8 private key") }
        try self.init(taking: key)
    }

    private init(taking key: OpaquePointer?) throws {
        guard let key else { throw CryptoError.openSSLFailure("EVP_PKEY") }
        guard let curve = ECKeyMaterial.curve(of: key) else {
            EVP_PKEY_free(key)
            throw CryptoError.invalidKey("not an EC key on P-256 or P-384")
        }
        do {
            self.publicKeyPoint = try ECKeyMaterial.uncompressedPoint(of: key, curve: curve)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.pkey = key
        self.curve = curve
    }

    deinit {
        signLock.withLock { context in
            if let context { EVP_PKEY_CTX_free(context) }
        }
        EVP_PKEY_free(pkey)
    }

    /// The public half as a `P256PublicKey` (P-256 keys only).
    public func publicKey() throws -> P256PublicKey {
        guard curve == .p256 else { throw CryptoError.invalidKey("not a P-256 key") }
        return try P256PublicKey(x963: publicKeyPoint)
    }

    /// DER SubjectPublicKeyInfo of the public half.
    public func subjectPublicKeyInfo() throws -> [UInt8] { try ECKeyMaterial.subjectPublicKeyInfo(of: pkey) }

    /// Unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pkcs8PEM() throws -> String { PEM.encode(try pkcs8DER(), label: "PRIVATE KEY") }

    /// Unencrypted DER PKCS#8 `PrivateKeyInfo`.
    public func pkcs8DER() throws -> [UInt8] {
        let bio = try OpenSSLHandle.memoryBIO()
        return try bio.withPointer { b in
            guard i2d_PKCS8PrivateKey_bio(b, pkey, nil, nil, 0, nil, nil) == 1 else {
                throw CryptoError.openSSLFailure("i2d_PKCS8PrivateKey_bio")
            }
            return OpenSSLHandle.contents(ofMemoryBIO: b)
        }
    }

    /// ECDSA signature (DER) over `message`, hashed with `digest` (ecdsa-with-SHA256 / -SHA384).
    public func signature(for message: [UInt8], digest: DigestAlgorithm = .sha256) throws -> [UInt8] {
        try signature(forDigest: message.withUnsafeBytes { digest.messageDigest.digest($0) })
    }

    /// ECDSA signature (DER) over an already computed digest (`digest` is signed as is, not hashed).
    ///
    /// For tests of verifiers (e.g. an App Attest assertion wrongly signed over the nonce as a
    /// pre-hashed digest) and for callers that hash incrementally.
    public func signature(forDigest digest: [UInt8]) throws -> [UInt8] {
        guard !digest.isEmpty else { throw CryptoError.invalidArgument("empty digest") }
        // Fast path: the cached context, if no other thread is using it.
        let cached: [UInt8]?? = signLock.withLockIfAvailable { context -> [UInt8]? in
            if context == nil {
                guard let fresh = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else { return nil }
                guard EVP_PKEY_sign_init(fresh) == 1 else { EVP_PKEY_CTX_free(fresh); return nil }
                context = fresh
            }
            guard let ctx = context else { return nil }
            return ECPrivateKey.sign(ctx, digest)
        }
        if let cached, let signature = cached { return signature }
        ERR_clear_error()
        let ctx = try OpenSSLHandle(EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil), "EVP_PKEY_CTX_new_from_pkey") { EVP_PKEY_CTX_free($0) }
        return try ctx.withPointer { c in
            guard EVP_PKEY_sign_init(c) == 1 else { throw CryptoError.openSSLFailure("EVP_PKEY_sign_init") }
            var length = 0
            guard digest.withUnsafeBufferPointer({ EVP_PKEY_sign(c, nil, &length, $0.baseAddress, $0.count) }) == 1 else {
                throw CryptoError.openSSLFailure("EVP_PKEY_sign")
            }
            var out = [UInt8](repeating: 0, count: length)
            let rc = out.withUnsafeMutableBufferPointer { o in
                digest.withUnsafeBufferPointer { EVP_PKEY_sign(c, o.baseAddress, &length, $0.baseAddress, $0.count) }
            }
            guard rc == 1 else { throw CryptoError.openSSLFailure("EVP_PKEY_sign") }
            return Array(out.prefix(length))
        }
    }

    /// One ECDSA signature over `digest` with an initialised context; nil when OpenSSL fails.
    private static func sign(_ ctx: OpaquePointer, _ digest: [UInt8]) -> [UInt8]? {
        var length = 0
        guard digest.withUnsafeBufferPointer({ EVP_PKEY_sign(ctx, nil, &length, $0.baseAddress, $0.count) }) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: length)
        let rc = out.withUnsafeMutableBufferPointer { o in
            digest.withUnsafeBufferPointer { EVP_PKEY_sign(ctx, o.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        return rc == 1 ? Array(out.prefix(length)) : nil
    }
}
