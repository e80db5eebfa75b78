import AppAttest
import AttestCrypto
import GatewayRules
import GatewayStore

/// The claims of a verdict token (issue 12 "Signed verdicts"), written as the JWS payload in one
/// `JSONWriter` buffer (no Foundation JSON, no dictionaries):
///
///     {"verdict":"valid","keyId":"<std base64>","counter":7,"tier":"app_attest",
///      "environment":"production","app":"TEAMID.bundle.id","risk":"3",
///      "method":"POST","target":"/v1/orders?x=1","bodySha256":"<base64url>",
///      "iss":"...","iat":1767225600,"exp":1767225660,"jti":"<base64url, 16 random bytes>"}
///
/// - `verdict` always; `reason` when the verdict is not `valid`; `keyId`, `counter`, `tier`,
///   `environment`, `app` only with `valid` (as the verdict headers); `risk` when the gateway sent
///   the risk header; `iss` when `verdict_token.issuer` is set.
/// - `method` and `target` are the request line as received (what the assertion binds), `bodySha256`
///   the client-data binding's SHA-256 of the body (of the empty body when there is none).
/// - `iat` and `exp` are NumericDates (seconds); `jti` is random, unique per token.
enum VerdictClaims {
    /// The payload bytes.
    /// - Throws: `CryptoError` when the random `jti` cannot be drawn.
    static func payload(report: VerdictReport, method: [UInt8], target: [UInt8], bodySHA256: [UInt8], risk: String?,
                        issuer: String?, issuedAt: Int64, lifetime: Int64) throws -> [UInt8] {
        var json = JSONWriter(capacity: 384)
        json.beginObject()
        json.field("verdict", report.verdict.rawValue)
        if report.verdict == .valid {
            if let keyId = report.keyId { json.field("keyId", report.keyIdBase64 ?? Base64.encode(keyId.bytes)) }
            if let counter = report.counter { json.field("counter", Int64(counter)) }
            if let tier = report.tier { json.field("tier", tier) }
            if let environment = report.environment { json.field("environment", environment) }
            if let app = report.appId { json.field("app", app) }
        } else if let reason = report.reason {
            json.field("reason", reason)
        }
        if let risk { json.field("risk", risk) }
        json.field("method", String(decoding: method, as: UTF8.self))
        json.field("target", String(decoding: target, as: UTF8.self))
        json.field("bodySha256", String(decoding: Base64URL.encode(bodySHA256), as: UTF8.self))
        if let issuer { json.field("iss", issuer) }
        json.field("iat", issuedAt)
        json.field("exp", issuedAt + lifetime)
        json.field("jti", String(decoding: Base64URL.encode(try SecureRandom.bytes(count: 16)), as: UTF8.self))
        json.endObject()
        return json.bytes
    }
}
