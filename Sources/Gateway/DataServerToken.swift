import AttestCrypto
import GatewayRules
import GatewayStore

/// The `Authorization` value for Apple's App Attest data server: a JWT (RFC 7519) in JWS compact
/// serialization (RFC 7515 section 7.1) signed ES256 (RFC 7518 section 3.4) with the app's
/// DeviceCheck key - header `{"alg":"ES256","kid":<key id>}`, claims `{"iss":<team id>,"iat":<unix s>}`.
///
/// Cached and re-signed after a lifetime drawn between 20 and 50 minutes (Apple refuses tokens older
/// than an hour and asks that they are not minted for every request). Value type; the caller keeps it
/// on one queue. The signature comes from AttestCrypto (OpenSSL); the serialization is `JWSCompact`.
struct DataServerToken: Sendable {
    /// Shortest and longest reuse of one token, seconds.
    static let minimumLifetime: Int64 = 20 * 60
    static let maximumLifetime: Int64 = 50 * 60

    let teamID: String
    let keyID: String
    let key: ECPrivateKey
    /// The cached token and when it must be replaced (unix seconds).
    private(set) var cached: (token: String, issuedAt: Int64, replaceAt: Int64)?

    /// The DeviceCheck key in the PEM file at `path` (`apps[N].risk.private_key_file`, Apple's `.p8`),
    /// as start, reload and `check-config` read it (`TLSFileChecker`, `.deviceCheckKey`).
    /// - Throws: `GatewayStartupError` when the file cannot be read, is not a PEM private key, or the
    ///   key is not on P-256 (ES256).
    static func key(inFile path: String) throws(GatewayStartupError) -> ECPrivateKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw GatewayStartupError("cannot read \(path)") }
        let key: ECPrivateKey
        do { key = try ECPrivateKey(pem: text) } catch { throw GatewayStartupError("\(path): \(error)") }
        guard key.curve == .p256 else { throw GatewayStartupError("\(path): the DeviceCheck key must be P-256 (ES256)") }
        return key
    }

    /// - Throws: `CryptoError.invalidKey` unless `key` is on P-256.
    init(teamID: String, keyID: String, key: ECPrivateKey) throws {
        guard key.curve == .p256 else { throw CryptoError.invalidKey("the DeviceCheck key must be P-256 (ES256)") }
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }

    /// The token to send at `now` (unix seconds): the cached one while younger than its drawn
    /// lifetime, else a new one (issued at `now`, next lifetime 20 + `draw` * 30 minutes, `draw` in
    /// 0...1, random by default).
    /// - Throws: `CryptoError` when signing fails.
    mutating func token(now: Int64, draw: Double = Double.random(in: 0...1)) throws -> String {
        if let cached, now >= cached.issuedAt, now < cached.replaceAt { return cached.token }
        let token = try Self.sign(teamID: teamID, keyID: keyID, key: key, issuedAt: now)
        let span = Double(Self.maximumLifetime - Self.minimumLifetime) * min(1, max(0, draw))
        cached = (token, now, now + Self.minimumLifetime + Int64(span))
        return token
    }

    /// One signed token (no caching).
    static func sign(teamID: String, keyID: String, key: ECPrivateKey, issuedAt: Int64) throws -> String {
        var claims = JSONWriter(capacity: 48)
        claims.beginObject()
        claims.field("iss", teamID)
        claims.field("iat", issuedAt)
        claims.endObject()
        let token = try JWSCompact.sign(encodedHeader: JWSCompact.encodedHeader(alg: "ES256", kid: keyID),
                                        payload: claims.bytes, with: .es256(key))
        return String(decoding: token, as: UTF8.self)
    }
}
