import AppAttest
import AttestCrypto
import Dispatch
import GatewayHTTP
import GatewayRules
import GatewayStore

/// The gateway's own endpoints (DESIGN.md section 1): one-time challenges and attestations.
///
/// - `POST <prefix>/challenge` `{"keyId": b64, "purpose": "attest"|"assert"|"register"}` -> `201`
///   `{"challenge": b64, "expiresAt": unix-seconds}`. An `assert` challenge is only issued for a key the
///   gateway attested (`401 key_unknown` / `reattest` otherwise).
/// - `POST <prefix>/attest` `{"keyId", "challenge", "attestation"}` (base64) -> Apple's nine server
///   steps with clientDataHash = SHA-256(challenge bytes), then the key record is stored and the
///   challenge consumed in one atomic store step -> `201` `{"keyId", "appId", "environment", "receipt",
///   "expiresAt", "renewAfter"}` (the app's `registration_ttl`, unix seconds, null without one), with
///   the key's first `assert` challenge in `App-Attest-Next-Challenge` and
///   `App-Attest-Next-Challenge-Expires` when `endpoints.next_challenge` is on (`nextChallengeForNewKey`).
///   With keys per account, the account header's keyed hash is stored with the key and the account's
///   index updated (`LifecycleEndpoints.indexRegistration`) before the answer.
/// - `renew`, `forget` and the `renew`/`forget` challenge purposes: `LifecycleEndpoints`.
/// Refusals follow DESIGN.md section 2; a challenge failure carries a fresh `attest` challenge.
/// With `endpoints.fleet_attest_rate`, an `attest` challenge over the fleet's rate answers
/// `429 attest_rate_limited` with `Retry-After` (the rest of the window, whole seconds, rounded up;
/// `FleetAttestRate`, which `/register`'s attestation form counts against too).
final class GatewayEndpoints: Sendable {
    let store: any AttestStore
    let keys: KeyCache
    let apps: [String: AppEntry]
    let issuer: ChallengeIssuer
    let clock: GatewayClock
    let verifier: AttestationVerifier
    let errorHeader: String
    /// Renew, forget and keys per account (`registration_ttl`, the account index).
    let lifecycle: LifecycleEndpoints
    /// `endpoints.next_challenge`: a successful attestation's answer carries the key's first
    /// `assert` challenge (`NextChallengeHeaders`).
    let nextChallenge: Bool
    /// `endpoints.fleet_attest_rate`, counted on `attest` challenges here (and on `/register`'s
    /// attestation form by `RegistrationEndpoint`); nil: no limit.
    let fleetAttestRate: FleetAttestRate?
    /// Told each key registered after its answer is decided (the receipt refresher).
    let refreshHooks: ReceiptRefreshHooks?
    /// Where attestation verification (chain building, about a millisecond) runs, off the event loops.
    private let verifyQueue = DispatchQueue(label: "attest-gateway.attestation", attributes: .concurrent)

    init(store: any AttestStore, keys: KeyCache, apps: [String: AppEntry], issuer: ChallengeIssuer, clock: GatewayClock,
         verifier: AttestationVerifier, errorHeader: String, lifecycle: LifecycleEndpoints, nextChallenge: Bool = true,
         fleetAttestRate: FleetAttestRate? = nil, refreshHooks: ReceiptRefreshHooks? = nil) {
        self.nextChallenge = nextChallenge
        self.fleetAttestRate = fleetAttestRate
        self.refreshHooks = refreshHooks
        self.store = store
        self.keys = keys
        self.apps = apps
        self.issuer = issuer
        self.clock = clock
        self.verifier = verifier
        self.errorHeader = errorHeader
        self.lifecycle = lifecycle
    }

    typealias Completion = @Sendable (HTTPResponse, RequestLogContext) -> Void

    /// `POST <prefix>/challenge`.
    func challenge(_ request: HTTPRequest, completion: @escaping Completion) {
        let route = "endpoint:challenge"
        let keyId: KeyID
        let purpose: ChallengePurpose
        do {
            let body = try EndpointRequest(body: request.body)
            guard let bytes = Base64.decode(try body.required("keyId")), let id = try? KeyID(bytes) else {
                refuse(.keyIdInvalid, route: route, completion)
                return
            }
            keyId = id
            guard let parsed = ChallengePurpose(rawValue: try body.required("purpose")) else {
                refuse(.jsonInvalid("\"purpose\" must be one of " + ChallengePurpose.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")),
                       route: route, completion)
                return
            }
            purpose = parsed
        } catch {
            refuse(.jsonInvalid(error.message), route: route, completion)
            return
        }
        let issue: @Sendable () -> Void = { [self] in
            issuer.issue(keyId: keyId, purpose: purpose) { [self] result in
                switch result {
                case .failure:
                    refuse(.storeUnavailable, route: route, keyId: keyId, completion)
                case .success(let issued):
                    var json = JSONWriter()
                    json.beginObject()
                    json.field("challenge", Base64.encode(issued.bytes))
                    json.field("expiresAt", issued.expiresAt)
                    json.endObject()
                    completion(created(json.bytes), RequestLogContext(route: route, keyId: keyId))
                }
            }
        }
        if purpose == .attest, let limit = fleetAttestRate {
            // The fleet's attestation rate (issue 12): each attest challenge lets a device call
            // Apple's attestation service once, so the limit is counted here.
            limit.admit(store: store, now: clock.now()) { [self] refusal in
                if let refusal { refuse(refusal, route: route, keyId: keyId, completion) } else { issue() }
            }
            return
        }
        // Assertions, renewals and forgetting need a key the gateway holds.
        guard purpose == .assert || purpose == .renew || purpose == .forget,
              keys.get(keyId, shard: request.connection.loopIndex) == nil else {
            issue()
            return
        }
        store.fetchKey(keyId) { [self] result in
            switch result {
            case .failure: refuse(.storeUnavailable, route: route, keyId: keyId, completion)
            case .success(nil): refuse(.store(.keyUnknown), route: route, keyId: keyId, completion)
            case .success(let record?):
                if record.status == .revoked { refuse(.store(.keyRevoked), route: route, keyId: keyId, completion) } else { issue() }
            }
        }
    }

    /// `POST <prefix>/attest`.
    func attest(_ request: HTTPRequest, completion: @escaping Completion) {
        let route = "endpoint:attest"
        let keyId: KeyID
        let challenge: Challenge
        let attestation: [UInt8]
        do {
            let body = try EndpointRequest(body: request.body)
            guard let keyBytes = Base64.decode(try body.required("keyId")), let id = try? KeyID(keyBytes) else {
                refuse(.keyIdInvalid, route: route, completion)
                return
            }
            keyId = id
            guard let challengeBytes = Base64.decode(try body.required("challenge")) else {
                refuse(.encodingInvalid("challenge"), route: route, completion)
                return
            }
            guard let parsed = try? Challenge(challengeBytes) else {
                refuse(.challengeInvalid, route: route, completion)
                return
            }
            challenge = parsed
            guard let object = Base64.decode(try body.required("attestation")) else {
                refuse(.encodingInvalid("attestation"), route: route, completion)
                return
            }
            attestation = object
        } catch {
            refuse(.jsonInvalid(error.message), route: route, completion)
            return
        }
        verifyQueue.async { [self] in
            let now = clock.now()
            let clientDataHash = SHA256.hash(challenge.bytes)
            let decision = verifier.verify(attestationObject: attestation, keyId: keyId.bytes,
                                           clientDataHash: clientDataHash, now: now / 1000)
            let key: AttestedKey
            switch decision {
            case .accepted(let accepted, _):
                key = accepted
            case .rejected(let reason, let detail, _):
                refuse(.verification(reason, detail: detail), route: route, keyId: keyId, completion)
                return
            }
            let lifetime = apps[key.appId]?.lifetime ?? .forever
            let account = lifecycle.account(for: key.appId, headers: request.head.headers)
            if let refusal = account.refusal { return refuse(refusal, route: route, keyId: keyId, completion) }
            guard let record = try? KeyRecord(attested: key, createdAt: now, expiresAt: lifetime.expiresAt(now: now),
                                              accountHash: account.hash) else {
                refuse(.internalError("attested key could not be recorded"), route: route, keyId: keyId, completion)
                return
            }
            store.registerKey(record, challenge: challenge, now: now) { [self] result in
                switch result {
                case .failure:
                    refuse(.storeUnavailable, route: route, keyId: keyId, completion)
                case .success(.refused(let refusal)):
                    let answer = Refusal.store(refusal)
                    guard refusal == .challengeUnknown || refusal == .challengeExpired || refusal == .challengeWrongPurpose else {
                        refuse(answer, route: route, keyId: keyId, completion)
                        return
                    }
                    issuer.issue(keyId: keyId, purpose: .attest) { [self] issued in
                        var withChallenge = answer
                        if case .success(let fresh) = issued { withChallenge.freshChallenge = (fresh.bytes, fresh.expiresAt) }
                        refuse(withChallenge, route: route, keyId: keyId, completion)
                    }
                case .success(.accepted):
                    // Every loop's shard: the device's next requests may land on any loop.
                    keys.put(keyId, CachedKey(keyId: keyId, publicKey: key.publicKey, app: AppPolicy(appId: key.appId,
                                              environment: apps[key.appId]?.policy.environment ?? .any),
                                              environment: key.environment), shard: nil)
                    var json = JSONWriter(capacity: 256)
                    json.beginObject()
                    json.field("keyId", Base64.encode(keyId.bytes))
                    json.field("appId", key.appId)
                    json.field("environment", key.environment.rawValue)
                    if let verification = key.receiptVerification {
                        json.beginObject("receipt")
                        json.field("signatureValid", verification.isValid)
                        if let type = verification.receipt?.type { json.field("type", type) }
                        if let risk = verification.receipt?.riskMetric { json.field("riskMetric", risk) }
                        json.endObject()
                    }
                    LifecycleEndpoints.expiryFields(&json, lifetime: lifetime, expiresAt: record.expiresAt)
                    json.endObject()
                    let body = json.bytes
                    // Keys per account: index the key and revoke the oldest beyond the limit, then answer
                    // with the key's first assert challenge.
                    lifecycle.indexRegistration(record) { [self] _ in
                        nextChallengeForNewKey(keyId) { [self] next in
                            var response = created(body)
                            if let next { NextChallengeHeaders.set(next, on: &response.headers) }
                            completion(response, RequestLogContext(route: route, keyId: keyId))
                            refreshHooks?.registered(keyId, key.appId)
                        }
                    }
                }
            }
        }
    }

    /// The first `assert` challenge of a key that was just registered, for the answer that registered
    /// it (`NextChallengeHeaders` on the attestation answer; the place for any other registration
    /// answer too: `RegistrationEndpoint` for `{prefix}/register`): nil when `next_challenge` is off or the
    /// store could not issue it (the registration stands; the client asks `{prefix}/challenge`).
    /// One `issueChallenge` (registration is rare: not folded into the register script).
    func nextChallengeForNewKey(_ keyId: KeyID, completion: @escaping @Sendable (ChallengeIssuer.Issued?) -> Void) {
        guard nextChallenge else { return completion(nil) }
        issuer.issue(keyId: keyId, purpose: .assert) { result in
            if case .success(let issued) = result { completion(issued) } else { completion(nil) }
        }
    }

    /// The refusal, logged with the keyId of the request once it decoded.
    private func refuse(_ refusal: Refusal, route: String, keyId: KeyID? = nil, _ completion: Completion) {
        completion(refusal.response(errorHeader: errorHeader),
                   RequestLogContext(route: route, verdict: nil, reason: refusal.code, keyId: keyId))
    }

    private func created(_ body: [UInt8]) -> HTTPResponse {
        var headers = HTTPHeaders(reservingFields: 2, bytes: 64)
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: 201, headers: headers, body: body)
    }
}
