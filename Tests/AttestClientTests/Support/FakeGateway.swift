import AppAttest
import AttestClient
import AttestCrypto
import Foundation

/// A scripted gateway behind `HTTPTransport`: it issues one-time challenges, registers device keys
/// (checking the signature over the registration client data), attests App Attest keys (fake objects
/// of `FakeAppAttestService`), and checks protected requests against the **gateway's own**
/// `ClientDataBinding.v1` (device-key signatures with AttestCrypto, fake assertions by their hash).
/// Scripted answers (`script`) come first; every request is logged.
final class FakeGateway: HTTPTransport, @unchecked Sendable {  // all state guarded by `lock`
    /// A scripted answer for requests whose path starts with `path`; nil from `answer` = behave normally.
    struct Scripted {
        var path: String
        var answer: (TransportRequest, FakeGateway) -> TransportResponse?
    }

    private let lock = NSLock()
    let clock: FakeClock
    let prefix = "/app-attest/v1"
    /// A path in front of everything (the gateway URL's own path), stripped before routing.
    var basePath = ""
    var registerSupported = true
    var nextChallenges = false
    var registrationTTL = 86_400
    var script: [Scripted] = []
    /// Blocks `/register` until signalled (forget-during-attest).
    var registerGate: DispatchSemaphore?
    var unreachable = 0
    /// The error thrown while `unreachable` (default: refused before anything was sent).
    var unreachableError: URLError.Code = .cannotConnectToHost
    /// Rewrites every answer the gateway's own behaviour produced (a hostile or broken gateway); nil: as is.
    var rewrite: ((TransportRequest, TransportResponse) -> TransportResponse)?
    private var log: [TransportRequest] = []
    private var challenges: [Data: (kid: String, purpose: String, expiresAt: Double)] = [:]
    private var deviceKeys: [String: Data] = [:]          // kid -> public key
    /// keyId -> expiry (unix seconds): keys attested through `/attest` or vouching in `/register`'s
    /// attestation form get the registration's TTL, moved by their own `/renew` only (as the gateway).
    private var appAttestKeys: [String: Double] = [:]
    private var forgotten: [String] = []

    init(clock: FakeClock) { self.clock = clock }

    // MARK: - Inspection

    var requests: [TransportRequest] { lock.withLock { log } }
    func count(_ path: String) -> Int { requests.filter { $0.url.path == prefixed(path) }.count }
    func bodies(_ path: String) -> [[String: Any]] {
        requests.filter { $0.url.path == prefixed(path) }.compactMap { (try? JSONSerialization.jsonObject(with: $0.body)) as? [String: Any] }
    }
    var forgottenKids: [String] { lock.withLock { forgotten } }
    func prefixed(_ path: String) -> String { path.hasPrefix("/v1") ? path : prefix + path }

    /// Queues `answer` for the next request under `path`, once.
    func once(_ path: String, _ answer: @escaping (TransportRequest, FakeGateway) -> TransportResponse) {
        lock.withLock {
            var used = false
            script.append(Scripted(path: prefixed(path)) { request, gateway in
                if used { return nil }
                used = true
                return answer(request, gateway)
            })
        }
    }

    /// A refusal as DESIGN.md section 2 shapes it.
    static func refusal(_ status: Int, _ code: String, _ action: String, retryAfter: Int? = nil,
                        extra: [String: Any] = [:]) -> TransportResponse {
        var object: [String: Any] = ["error": code, "action": action, "detail": "scripted \(code)"]
        object.merge(extra) { $1 }
        var headers: [(name: String, value: String)] = [("App-Attest-Error", code), ("Content-Type", "application/json")]
        if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
        return TransportResponse(status: status, headers: headers, body: try! JSONSerialization.data(withJSONObject: object))
    }

    // MARK: - HTTPTransport

    func send(_ request: TransportRequest) throws -> TransportResponse {
        let (scripted, gate, failing): ((TransportRequest, FakeGateway) -> TransportResponse?, DispatchSemaphore?, Bool) = lock.withLock {
            log.append(request)
            if unreachable > 0 { unreachable -= 1; return ({ _, _ in nil }, nil, true) }
            let handlers = script.filter { request.url.path.hasPrefix($0.path) }.map(\.answer)
            let gate = request.url.path == prefix + "/register" ? registerGate : nil
            return ({ request, gateway in
                for handler in handlers { if let answer = handler(request, gateway) { return answer } }  // each called at most once
                return nil
            }, gate, false)
        }
        if failing { throw URLError(lock.withLock { unreachableError }) }
        gate?.wait()
        if let answer = scripted(request, self) { return answer }
        let (answer, rewrite) = lock.withLock { (handle(request), self.rewrite) }
        return rewrite?(request, answer) ?? answer
    }

    // MARK: - The gateway's behaviour (called under `lock`)

    private func json(_ status: Int, _ object: [String: Any], headers: [(name: String, value: String)] = []) -> TransportResponse {
        TransportResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                          body: try! JSONSerialization.data(withJSONObject: object))
    }

    private func issue(kid: String, purpose: String) -> (Data, Int) {
        let bytes = Data(try! SecureRandom.bytes(count: 32))
        let expiresAt = Int(clock.now()) + 300
        challenges[bytes] = (kid, purpose, Double(expiresAt))
        return (bytes, expiresAt)
    }

    /// Consumes `text` when it was issued for `kid` and `purpose` and is unexpired.
    private func consume(_ text: String?, kid: String, purpose: String) -> Data? {
        guard let text, let bytes = Data(base64Encoded: text), let entry = challenges[bytes],
              entry.kid == kid, entry.purpose == purpose, entry.expiresAt > clock.now() else { return nil }
        challenges[bytes] = nil
        return bytes
    }

    private func nextChallengeHeaders(kid: String) -> [(name: String, value: String)] {
        guard nextChallenges else { return [] }
        let (bytes, expiresAt) = issue(kid: kid, purpose: "assert")
        return [("App-Attest-Next-Challenge", bytes.base64EncodedString()), ("App-Attest-Next-Challenge-Expires", String(expiresAt))]
    }

    private func handle(_ request: TransportRequest) -> TransportResponse {
        let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
        var path = request.url.path
        if !basePath.isEmpty && path.hasPrefix(basePath) { path.removeFirst(basePath.count) }
        switch path {
        case prefix + "/challenge":
            guard let kid = body["keyId"] as? String, let purpose = body["purpose"] as? String else {
                return Self.refusal(400, "json_invalid", "deny")
            }
            if purpose == "register" && !registerSupported { return Self.refusal(400, "json_invalid", "deny") }
            if purpose == "assert" && deviceKeys[kid] == nil && appAttestKeys[kid] == nil { return Self.refusal(401, "key_unknown", "reattest") }
            let (bytes, expiresAt) = issue(kid: kid, purpose: purpose)
            return json(201, ["challenge": bytes.base64EncodedString(), "expiresAt": expiresAt])
        case prefix + "/register":
            guard registerSupported else { return Self.refusal(404, "not_found", "deny") }
            guard let publicText = body["publicKey"] as? String, let publicKey = Data(base64Encoded: publicText),
                  let signature = (body["signature"] as? String).flatMap({ Data(base64Encoded: $0) }),
                  let backing = body["backing"] as? String, let integrity = body["integrity"] as? [String] else {
                return Self.refusal(400, "json_invalid", "deny")
            }
            let kid = Data(AttestCrypto.SHA256.hash(Array(publicKey))).base64EncodedString()
            guard let challenge = consume(body["challenge"] as? String, kid: kid, purpose: "register") else {
                let (fresh, expiresAt) = issue(kid: kid, purpose: "register")
                return Self.refusal(401, "challenge_unknown", "refresh_challenge", extra: ["challenge": fresh.base64EncodedString(), "expiresAt": expiresAt])
            }
            let clientData = FakeGateway.framed([Array("register-v1".utf8), Array(challenge), Array(publicKey), Array(backing.utf8),
                                                 Array(integrity.joined(separator: ",").utf8)])
            guard let key = try? P256PublicKey(x963: Array(publicKey)), key.verify(signature: Array(signature), message: clientData) == .valid else {
                return Self.refusal(401, "bad_signature", "reattest")
            }
            var tier = "device"
            if let appAttest = body["appAttest"] as? [String: String] {
                let hash = Data(AttestCrypto.SHA256.hash(clientData)).base64EncodedString()
                let keyId = appAttest["keyId"] ?? ""
                if let attestation = appAttest["attestation"] {
                    guard attestation == Data("attestation|\(keyId)|\(hash)".utf8).base64EncodedString() else { return Self.refusal(401, "bad_attestation", "reattest") }
                    appAttestKeys[keyId] = clock.now() + Double(registrationTTL)
                } else if let assertion = appAttest["assertion"] {
                    guard let expiresAt = appAttestKeys[keyId] else { return Self.refusal(401, "key_unknown", "reattest") }
                    guard expiresAt > clock.now() else { return Self.refusal(401, "key_expired", "reattest") }
                    guard assertion == Data("assertion|\(keyId)|\(hash)".utf8).base64EncodedString() else { return Self.refusal(401, "bad_signature", "reattest") }
                }
                tier = "attested"
            }
            deviceKeys[kid] = publicKey
            let now = Int(clock.now())
            return json(201, ["kid": kid, "tier": tier, "platformAttested": tier == "attested", "platformTokenSpent": body["appAttest"].map { ($0 as? [String: String])?["attestation"] != nil } ?? false,
                              "expiresAt": now + registrationTTL, "renewAfter": now + registrationTTL / 2, "integrity": integrity, "backing": backing],
                        headers: nextChallengeHeaders(kid: kid))
        case prefix + "/renew", prefix + "/forget":
            guard let kid = body["keyId"] as? String, deviceKeys[kid] != nil || appAttestKeys[kid] != nil else {
                return Self.refusal(401, "key_unknown", "reattest")
            }
            if let expiresAt = appAttestKeys[kid], expiresAt <= clock.now() { return Self.refusal(401, "key_expired", "reattest") }
            let label = path.hasSuffix("renew") ? "renew" : "forget"
            guard let challenge = consume(body["challenge"] as? String, kid: kid, purpose: label) else {
                return Self.refusal(401, "challenge_unknown", "refresh_challenge")
            }
            let clientData = FakeGateway.framed([Array("\(label)-v1".utf8), Array(challenge), Array(Data(base64Encoded: kid) ?? Data())])
            let proven: Bool
            if let publicKey = deviceKeys[kid] {
                proven = (body["signature"] as? String).flatMap({ Data(base64Encoded: $0) }).map { signature in
                    (try? P256PublicKey(x963: Array(publicKey)))?.verify(signature: Array(signature), message: clientData) == .valid
                } ?? false
            } else {
                let hash = Data(AttestCrypto.SHA256.hash(clientData)).base64EncodedString()
                proven = body["assertion"] as? String == Data("assertion|\(kid)|\(hash)".utf8).base64EncodedString()
            }
            guard proven else { return Self.refusal(401, "bad_signature", "deny") }
            if label == "forget" {
                deviceKeys[kid] = nil
                appAttestKeys[kid] = nil
                forgotten.append(kid)
                return json(200, ["forgotten": true])
            }
            let now = Int(clock.now())
            if appAttestKeys[kid] != nil { appAttestKeys[kid] = Double(now + registrationTTL) }
            return json(200, ["kid": kid, "expiresAt": now + registrationTTL, "renewAfter": now + registrationTTL / 2])
        case prefix + "/attest":
            guard let keyId = body["keyId"] as? String, let attestation = body["attestation"] as? String,
                  let challenge = consume(body["challenge"] as? String, kid: keyId, purpose: "attest") else {
                return Self.refusal(401, "challenge_unknown", "refresh_challenge")
            }
            let hash = Data(AttestCrypto.SHA256.hash(Array(challenge))).base64EncodedString()
            guard attestation == Data("attestation|\(keyId)|\(hash)".utf8).base64EncodedString() else { return Self.refusal(401, "bad_attestation", "reattest") }
            appAttestKeys[keyId] = clock.now() + Double(registrationTTL)
            return json(201, ["keyId": keyId, "appId": "ABCDE12345.com.example", "environment": "development"], headers: nextChallengeHeaders(kid: keyId))
        default:
            return protected(request)
        }
    }

    /// A protected route: the evidence checked against ClientDataBinding.v1 of the request as received.
    private func protected(_ request: TransportRequest) -> TransportResponse {
        guard let kid = request.header("App-Attest-Key-Id") else { return Self.refusal(401, "evidence_missing", "reattest") }
        let known = deviceKeys[kid] != nil || appAttestKeys[kid] != nil
        guard known else { return Self.refusal(401, "key_unknown", "reattest") }
        if let expiresAt = appAttestKeys[kid], expiresAt <= clock.now() { return Self.refusal(401, "key_expired", "reattest") }
        guard let challenge = consume(request.header("App-Attest-Challenge"), kid: kid, purpose: "assert") else {
            let (fresh, expiresAt) = issue(kid: kid, purpose: "assert")
            return Self.refusal(401, "challenge_unknown", "refresh_challenge", extra: ["challenge": fresh.base64EncodedString(), "expiresAt": expiresAt])
        }
        var target = request.url.path
        if let query = request.url.query { target += "?" + query }
        let clientData = try! ClientDataBinding.v1(challenge: Array(challenge), method: request.method, target: target,
                                                   bodySHA256: AttestCrypto.SHA256.hash(Array(request.body)))
        let valid: Bool
        if let publicKey = deviceKeys[kid], let signature = request.header("App-Attest-Signature").flatMap({ Data(base64Encoded: $0) }) {
            valid = (try? P256PublicKey(x963: Array(publicKey)))?.verify(signature: Array(signature), message: clientData) == .valid
        } else if let assertion = request.header("App-Attest-Assertion") {
            let hash = Data(AttestCrypto.SHA256.hash(clientData)).base64EncodedString()
            valid = assertion == Data("assertion|\(kid)|\(hash)".utf8).base64EncodedString()
        } else {
            valid = false
        }
        let next = nextChallengeHeaders(kid: kid)
        guard valid else {
            var refused = Self.refusal(401, "bad_signature", "reattest")
            refused.headers += next
            return refused
        }
        return json(200, ["upstream": "ok", "path": target], headers: next)
    }

    /// `answer` with its JSON object changed by `change` (answers without a JSON object unchanged).
    static func withJSON(_ answer: TransportResponse, _ change: (inout [String: Any]) -> Void) -> TransportResponse {
        guard var object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any] else { return answer }
        change(&object)
        var copy = answer
        copy.body = try! JSONSerialization.data(withJSONObject: object)
        return copy
    }

    /// Binding v1's framing, written out here independently of the SDK.
    static func framed(_ fields: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for field in fields {
            let n = UInt32(field.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + field
        }
        return out
    }
}
