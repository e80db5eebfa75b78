import AppAttest
import Foundation
import GatewayStore

/// The JSON body of `POST {prefix}/register` (DESIGN.md section 8), decoded:
/// `{"publicKey": b64, "challenge": b64, "signature": b64, "backing": text, "integrity": [text],
/// "appAttest": {"keyId": b64, "attestation": b64} | {"keyId": b64, "assertion": b64}, "appId": text}`
/// (`integrity`, `appAttest` and `appId` optional). Binary fields take standard or URL-safe base64,
/// padded or not. Endpoint bodies are small (64 KiB limit) and off the request path, so Foundation's
/// parser is used.
struct RegistrationBody {
    /// The request for the pure verifier.
    let registration: DeviceKeyRegistration
    /// The challenge as the store keys it.
    let challenge: Challenge
    /// keyId = SHA-256 of the publicKey bytes as sent (the `kid`; the challenge was issued for it).
    let keyId: KeyID
    /// The App Attest keyId of `appAttest`, when it is 32 bytes.
    let appAttestKeyId: KeyID?
    /// `appId`, when sent (needed without App Attest when several apps are configured).
    let appId: String?

    /// Decodes `body`.
    /// - Throws: the refusal to answer (`json_invalid`, `encoding_invalid`, `challenge_invalid`,
    ///   `key_id_invalid`, `public_key_invalid`).
    init(_ body: [UInt8], sha256: ([UInt8]) -> [UInt8]) throws(RegistrationBodyError) {
        guard !body.isEmpty else { throw RegistrationBodyError(.jsonInvalid("empty body: expected a JSON object")) }
        guard JSONMemberCount.isUTF8WithoutBOM(body) else {
            throw RegistrationBodyError(.jsonInvalid("the body must be UTF-8 without a byte order mark (RFC 8259 section 8.1)"))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body), options: []),
              let fields = object as? [String: Any] else {
            throw RegistrationBodyError(.jsonInvalid("the body is not a JSON object"))
        }
        guard !JSONMemberCount.repeatsAName(body, parsed: fields) else {
            throw RegistrationBodyError(.jsonInvalid("a member appears twice: send each name once"))
        }
        func text(_ name: String, in object: [String: Any], required: Bool = true) throws(RegistrationBodyError) -> String? {
            guard let value = object[name] else {
                if required { throw RegistrationBodyError(.jsonInvalid("missing \"\(name)\"")) }
                return nil
            }
            guard let string = value as? String else { throw RegistrationBodyError(.jsonInvalid("\"\(name)\" must be a string")) }
            return string
        }
        func binary(_ name: String, in object: [String: Any], label: String) throws(RegistrationBodyError) -> [UInt8] {
            guard let decoded = Base64.decode(Array(try text(name, in: object)!.utf8)) else {
                throw RegistrationBodyError(.encodingInvalid(label))
            }
            return decoded
        }
        let publicKey = try binary("publicKey", in: fields, label: "publicKey")
        let challengeBytes = try binary("challenge", in: fields, label: "challenge")
        guard let challenge = try? Challenge(challengeBytes) else { throw RegistrationBodyError(.challengeInvalid) }
        let signature = try binary("signature", in: fields, label: "signature")
        let backing = try text("backing", in: fields)!
        var integrity: [String] = []
        if let value = fields["integrity"] {
            guard let list = value as? [Any] else { throw RegistrationBodyError(.jsonInvalid("\"integrity\" must be a list of codes")) }
            for item in list {
                guard let code = item as? String else { throw RegistrationBodyError(.jsonInvalid("\"integrity\" must be a list of strings")) }
                integrity.append(code)
            }
        }
        var appAttest: DeviceKeyRegistration.AppAttestEvidence?
        var appAttestKeyId: KeyID?
        if let value = fields["appAttest"], !(value is NSNull) {
            guard let inner = value as? [String: Any] else {
                throw RegistrationBodyError(.jsonInvalid("\"appAttest\" must be an object {keyId, attestation} or {keyId, assertion}"))
            }
            let aaKeyId = try binary("keyId", in: inner, label: "appAttest.keyId")
            guard let id = try? KeyID(aaKeyId) else { throw RegistrationBodyError(.keyIdInvalid) }
            appAttestKeyId = id
            switch (inner["attestation"] != nil, inner["assertion"] != nil) {
            case (true, false):
                appAttest = .attestation(keyId: aaKeyId, object: try binary("attestation", in: inner, label: "appAttest.attestation"))
            case (false, true):
                appAttest = .assertion(keyId: aaKeyId, object: try binary("assertion", in: inner, label: "appAttest.assertion"))
            default:
                throw RegistrationBodyError(.jsonInvalid("\"appAttest\" carries exactly one of \"attestation\" and \"assertion\""))
            }
        }
        appId = try text("appId", in: fields, required: false)
        guard publicKey.count == 65, let keyId = try? KeyID(sha256(publicKey)) else {
            throw RegistrationBodyError(.verification(.publicKeyInvalid, detail: "publicKey must be a 65-byte uncompressed P-256 point, got \(publicKey.count) bytes"))
        }
        self.keyId = keyId
        self.challenge = challenge
        self.appAttestKeyId = appAttestKeyId
        registration = DeviceKeyRegistration(publicKey: publicKey, challenge: challengeBytes, signature: signature,
                                             backing: backing, integrity: integrity, appAttest: appAttest)
    }
}

/// Why a registration body was refused: the refusal to answer.
struct RegistrationBodyError: Error {
    let refusal: Refusal
    init(_ refusal: Refusal) { self.refusal = refusal }
}
