import AttestCrypto
import GatewayRules
import GatewayStore

/// One key that signs verdict tokens (issue 12 "Signed verdicts"): its `kid`, the JWS protected
/// header encoded once, and the primitive behind it (libcrypto through `AttestCrypto`; the JWS
/// compact serialization is `JWSCompact`).
///
/// - ES256 (RFC 7518 section 3.4): a P-256 private key; the signature is `r || s` (64 bytes); `kid`
///   is the key's JWK thumbprint (RFC 7638, SHA-256, base64url), so every replica names a key alike.
/// - HS256 (RFC 7518 section 3.2): a shared secret; `kid` is the configured `key_id`.
///
/// Thread-safe: immutable (an `ECPrivateKey` signs concurrently).
struct VerdictSigningKey: Sendable {
    /// The `kid` of the protected header.
    let kid: String
    let material: JWSCompact.Signer
    /// base64url of `{"alg":"ES256","kid":"...","typ":"JWT"}` (the signing input's first part).
    let encodedHeader: [UInt8]
    /// ES256: base64url of the point's X and Y coordinates (for the JWK); empty for HS256.
    let x: String
    let y: String

    /// An ES256 key from a P-256 private key.
    /// - Throws: `CryptoError.invalidKey` when the key is not on P-256.
    init(es256 key: ECPrivateKey) throws {
        guard key.curve == .p256, key.publicKeyPoint.count == 65 else { throw CryptoError.invalidKey("verdict keys are P-256") }
        let point = key.publicKeyPoint
        x = String(decoding: Base64URL.encode(Array(point[1...32])), as: UTF8.self)
        y = String(decoding: Base64URL.encode(Array(point[33...64])), as: UTF8.self)
        kid = VerdictSigningKey.thumbprint(x: x, y: y)
        material = .es256(key)
        encodedHeader = JWSCompact.encodedHeader(alg: "ES256", kid: kid, typ: "JWT")
    }

    /// An HS256 key (the secret as configured, `kid` the configured `key_id`).
    init(hs256 secret: [UInt8], kid: String) {
        self.kid = kid
        material = .hs256(secret)
        encodedHeader = JWSCompact.encodedHeader(alg: "HS256", kid: kid, typ: "JWT")
        x = ""
        y = ""
    }

    /// The JWS algorithm name.
    var algorithm: String { material.algorithm }

    /// The compact serialization `header.payload.signature` (ASCII bytes) of `payload` (the claims'
    /// JSON): one base64url pass over the payload, one signature.
    /// - Throws: `CryptoError` when libcrypto fails to sign.
    func sign(payload: [UInt8]) throws -> [UInt8] {
        try JWSCompact.sign(encodedHeader: encodedHeader, payload: payload, with: material)
    }

    /// Writes this key's public JWK (RFC 7517, RFC 7518 section 6.2) as an array element: `kty`,
    /// `crv`, `x`, `y`, `kid`, `use: sig`, `alg: ES256`. Nothing for HS256 (secrets are never published).
    func writeJWK(_ json: inout JSONWriter) {
        guard case .es256 = material else { return }
        json.beginObject()
        json.field("kty", "EC")
        json.field("crv", "P-256")
        json.field("x", x)
        json.field("y", y)
        json.field("kid", kid)
        json.field("use", "sig")
        json.field("alg", "ES256")
        json.endObject()
    }

    /// RFC 7638 thumbprint of a P-256 JWK: SHA-256 over `{"crv":"P-256","kty":"EC","x":...,"y":...}`
    /// (required members, lexicographic order, no spaces), base64url.
    static func thumbprint(x: String, y: String) -> String {
        var json = JSONWriter(capacity: 160)
        json.beginObject()
        json.field("crv", "P-256")
        json.field("kty", "EC")
        json.field("x", x)
        json.field("y", y)
        json.endObject()
        return String(decoding: Base64URL.encode(SHA256.hash(json.bytes)), as: UTF8.self)
    }
}
