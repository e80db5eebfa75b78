import AttestCrypto
import GatewayRules
import GatewayStore

/// JWS compact serialization (RFC 7515 section 7.1): `base64url(header) "." base64url(payload) "."
/// base64url(signature)`, the one home of the tokens the gateway signs (verdict tokens,
/// `VerdictSigningKey`; the data server's JWT, `DataServerToken`). The signatures come from libcrypto
/// through AttestCrypto; only the serialization is written here.
enum JWSCompact {
    /// The signing primitive of a token.
    enum Signer: Sendable {
        /// ES256 (RFC 7518 section 3.4): ECDSA P-256 / SHA-256, signature `r || s` (64 bytes).
        case es256(ECPrivateKey)
        /// HS256 (RFC 7518 section 3.2): HMAC-SHA256 with a shared secret.
        case hs256([UInt8])

        /// The JWS `alg` name.
        var algorithm: String {
            if case .es256 = self { return "ES256" }
            return "HS256"
        }
    }

    /// base64url of the protected header `{"alg":...,"kid":...[,"typ":...]}` (members in that order).
    static func encodedHeader(alg: String, kid: String, typ: String? = nil) -> [UInt8] {
        var json = JSONWriter(capacity: 96)
        json.beginObject()
        json.field("alg", alg)
        json.field("kid", kid)
        if let typ { json.field("typ", typ) }
        json.endObject()
        return Base64URL.encode(json.bytes)
    }

    /// The compact serialization (ASCII bytes) of `payload` (the claims' JSON) under `encodedHeader`
    /// (from `encodedHeader(alg:kid:typ:)`, computed once per key): one base64url pass over the
    /// payload, one signature over `header.payload`.
    /// - Throws: `CryptoError` when libcrypto fails to sign.
    static func sign(encodedHeader: [UInt8], payload: [UInt8], with signer: Signer) throws -> [UInt8] {
        let encodedPayload = Base64URL.encode(payload)
        var token = [UInt8]()
        token.reserveCapacity(encodedHeader.count + encodedPayload.count + 90)
        token.append(contentsOf: encodedHeader)
        token.append(UInt8(ascii: "."))
        token.append(contentsOf: encodedPayload)
        let signature: [UInt8]
        switch signer {
        case .es256(let key):
            signature = try ECDSASignature.fixedWidth(fromDER: try key.signature(for: token, digest: .sha256), scalarBytes: 32)
        case .hs256(let secret):
            signature = HMACSHA256.authenticationCode(key: secret, message: token)
        }
        token.append(UInt8(ascii: "."))
        token.append(contentsOf: Base64URL.encode(signature))
        return token
    }
}
