import AppAttest
import AttestCrypto
import GatewayHTTP
import GatewayRules
import GatewayStore

/// The key lifecycle endpoints (issue 10, DESIGN.md section 8 "Lifecycle"), for App Attest keys and
/// device keys alike, and the account bookkeeping after a registration.
///
/// - `POST <prefix>/renew` `{"keyId", "challenge", "signature"|"assertion"}` (base64): the key signs the
///   client data `LifecycleClientData` (`renew-v1`, challenge, keyId) over a challenge of purpose
///   `renew`; then one atomic store step spends the challenge, advances the counter (assertions) and
///   sets the expiry to now + the app's `registration_ttl` -> `200` `{"kid", "expiresAt",
///   "renewAfter"}` (unix seconds; null when the app has no TTL).
/// - `POST <prefix>/forget` (same body, `forget-v1`, purpose `forget`): one atomic store step deletes
///   the key record -> `200` `{"kid", "forgotten": true}`.
/// App Attest keys (tier `app_attest`) prove with `assertion` (checked with `AssertionVerifier`, the
/// key's App ID, counter above the stored one); every other key is a device key and proves with
/// `signature` (DER ECDSA P-256 / SHA-256 over the client data, by the stored 65-byte point). A
/// forgotten key answers `401 key_unknown`, a revoked one `403 key_revoked`, an expired one (renew)
/// `401 key_expired` / `reattest`; challenge refusals carry a fresh challenge of the same purpose.
final class LifecycleEndpoints: Sendable {
    let store: any AttestStore
    let keys: KeyCache
    let apps: [String: AppEntry]
    let issuer: ChallengeIssuer
    let clock: GatewayClock
    let errorHeader: String

    init(store: any AttestStore, keys: KeyCache, apps: [String: AppEntry], issuer: ChallengeIssuer, clock: GatewayClock,
         errorHeader: String) {
        self.store = store
        self.keys = keys
        self.apps = apps
        self.issuer = issuer
        self.clock = clock
        self.errorHeader = errorHeader
    }

    typealias Completion = @Sendable (HTTPResponse, RequestLogContext) -> Void

    /// The store's lifecycle operations (every store the gateway runs has them; a test double may not).
    private var lifecycle: (any KeyLifecycleStore)? { store as? any KeyLifecycleStore }

    /// A parsed body or why it was refused.
    private enum Parsed {
        case success(Proof)
        case failure(Refusal)
    }

    /// The parsed body of a renew or forget request.
    private struct Proof {
        let keyId: KeyID
        let challenge: Challenge
        /// DER ECDSA signature (device key) ...
        let signature: [UInt8]?
        /// ... or CBOR assertion (App Attest key).
        let assertion: [UInt8]?
    }

    /// `POST <prefix>/renew` or `POST <prefix>/forget`.
    func handle(_ action: KeyLifecycleAction, _ request: HTTPRequest, completion: @escaping Completion) {
        let route = action.route
        let proof: Proof
        switch parse(request.body) {
        case .failure(let refusal): return refuse(refusal, route: route, completion)
        case .success(let parsed): proof = parsed
        }
        guard let lifecycle else { return refuse(.storeUnavailable, route: route, keyId: proof.keyId, completion) }
        store.fetchKey(proof.keyId) { [self] result in
            switch result {
            case .failure: refuse(.storeUnavailable, route: route, keyId: proof.keyId, completion)
            case .success(nil): refuse(.store(.keyUnknown), route: route, keyId: proof.keyId, completion)
            case .success(let record?):
                verifyAndCommit(action, proof, record, lifecycle, completion)
            }
        }
    }

    private func verifyAndCommit(_ action: KeyLifecycleAction, _ proof: Proof, _ record: KeyRecord,
                                 _ lifecycle: any KeyLifecycleStore, _ completion: @escaping Completion) {
        let route = action.route
        let keyId = proof.keyId
        guard record.status == .active else { return refuse(.store(.keyRevoked), route: route, keyId: keyId, completion) }
        guard let app = apps[record.appId] else { return refuse(.appNotAllowed(record.appId), route: route, keyId: keyId, completion) }
        guard let publicKey = try? P256PublicKey(x963: record.publicKey) else {
            return refuse(.internalError("the stored public key is not a P-256 point"), route: route, keyId: keyId, completion)
        }
        let clientData = LifecycleClientData.bytes(action.clientData, challenge: proof.challenge.bytes, keyId: keyId.bytes)
        var counter: UInt32?
        if record.backing == nil { // an App Attest key (POST /attest): it proves with assertions
            guard let assertion = proof.assertion else { return refuse(.proofMismatch(expected: "assertion"), route: route, keyId: keyId, completion) }
            switch AssertionVerifier.verify(assertionObject: assertion, publicKey: publicKey, appId: record.appId,
                                            clientData: clientData, previousCounter: record.counter) {
            case .rejected(let reason, let detail, _):
                return refuse(.verification(reason, detail: detail), route: route, keyId: keyId, completion)
            case .accepted(let verified):
                counter = verified.counter
            }
        } else {
            guard let signature = proof.signature else { return refuse(.proofMismatch(expected: "signature"), route: route, keyId: keyId, completion) }
            switch publicKey.verify(signature: signature, message: clientData) {
            case .valid: break
            case .invalid:
                return refuse(.verification(.badSignature, detail: "the signature does not verify with the registered key"),
                              route: route, keyId: keyId, completion)
            case .malformedEncoding:
                return refuse(.verification(.signatureEncoding, detail: "the signature is not strict DER"), route: route, keyId: keyId, completion)
            }
        }
        let now = clock.now()
        let finish: @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void = { [self] result in
            switch result {
            case .failure:
                refuse(.storeUnavailable, route: route, keyId: keyId, completion)
            case .success(.refused(let refusal)):
                refuseWithChallenge(.store(refusal), refusal, action, route: route, keyId: keyId, completion)
            case .success(.accepted(let change)):
                accepted(action, keyId: keyId, change: change, lifetime: app.lifetime, now: now, lifecycle, completion)
            }
        }
        switch action {
        case .renew:
            lifecycle.renewKey(keyId, challenge: proof.challenge, counter: counter, expiresAt: app.lifetime.expiresAt(now: now),
                               now: now, completion: finish)
        case .forget:
            lifecycle.forgetKey(keyId, challenge: proof.challenge, counter: counter, now: now, completion: finish)
        }
    }

    /// After the atomic step: the account index follows (its own slot; a failure there leaves the key
    /// counted with its old expiry, or listed until the next registration of the account prunes it,
    /// never a refused renewal), then the answer.
    private func accepted(_ action: KeyLifecycleAction, keyId: KeyID, change: KeyLifecycleChange, lifetime: RegistrationLifetime,
                          now: Int64, _ lifecycle: any KeyLifecycleStore, _ completion: @escaping Completion) {
        let expiresAt = lifetime.expiresAt(now: now)
        let answer: @Sendable () -> Void = {
            var json = JSONWriter(capacity: 128)
            json.beginObject()
            json.field("kid", Base64.encode(keyId.bytes))
            switch action {
            case .renew:
                LifecycleEndpoints.expiryFields(&json, lifetime: lifetime, expiresAt: expiresAt)
            case .forget:
                json.field("forgotten", true)
            }
            json.endObject()
            completion(LifecycleEndpoints.json(200, json.bytes), RequestLogContext(route: action.route, keyId: keyId))
        }
        if action == .forget { keys.remove(keyId) }
        guard let account = change.accountHash else { return answer() }
        switch action {
        case .renew: lifecycle.updateAccountKeyExpiry(account, keyId: keyId, expiresAt: expiresAt) { _ in answer() }
        case .forget: lifecycle.removeAccountKey(account, keyId: keyId) { _ in answer() }
        }
    }

    // MARK: Registration helpers (attestation and device-key registration)

    /// The account of a registration request for `appId` (nil when the app does not count keys per
    /// account or the header is absent), or the refusal when the header is malformed.
    func account(for appId: String, headers: HTTPHeaders) -> (hash: AccountHash?, refusal: Refusal?) {
        guard let binding = apps[appId]?.accounts else { return (nil, nil) }
        return binding.account(of: headers)
    }

    /// After a registration was stored: adds the key to its account's index and revokes the keys the
    /// limit pushes out (oldest first), each step atomic in its own Redis Cluster slot (see
    /// `KeyLifecycleStore`). Completes once done; store failures here do not undo the registration
    /// (the key is then not counted: one key too many, never a lost registration).
    /// - completion: the keyIds revoked.
    func indexRegistration(_ record: KeyRecord, completion: @escaping @Sendable ([KeyID]) -> Void) {
        guard let account = record.accountHash, let lifecycle, let binding = apps[record.appId]?.accounts else {
            return completion([])
        }
        lifecycle.indexAccountKey(account, keyId: record.keyId, createdAt: record.createdAt, expiresAt: record.expiresAt,
                                  limit: binding.maximumKeys, now: clock.now()) { [self] result in
            guard case .success(let evicted) = result, !evicted.isEmpty else { return completion([]) }
            revoke(evicted[...]) { completion(evicted) }
        }
    }

    /// Revokes `keyIds` one after the other (usually one), then calls `done`.
    private func revoke(_ keyIds: ArraySlice<KeyID>, _ done: @escaping @Sendable () -> Void) {
        guard let first = keyIds.first else { return done() }
        store.revokeKey(first) { [self] _ in
            keys.remove(first)
            revoke(keyIds.dropFirst(), done)
        }
    }

    /// `expiresAt` and `renewAfter` (unix seconds, null when the registration never expires).
    static func expiryFields(_ json: inout JSONWriter, lifetime: RegistrationLifetime, expiresAt: Int64?) {
        if let expiresAt, let renewAfter = lifetime.renewAfter(expiresAt: expiresAt) {
            json.field("expiresAt", RegistrationLifetime.jsonSeconds(expiresAt))
            json.field("renewAfter", RegistrationLifetime.jsonSeconds(renewAfter))
        } else {
            json.nullField("expiresAt")
            json.nullField("renewAfter")
        }
    }

    // MARK: Internals

    private func parse(_ body: [UInt8]) -> Parsed {
        do {
            let fields = try EndpointRequest(body: body)
            guard let keyBytes = Base64.decode(try fields.required("keyId")), let keyId = try? KeyID(keyBytes) else {
                return .failure(Refusal.keyIdInvalid)
            }
            guard let challengeBytes = Base64.decode(try fields.required("challenge")) else { return .failure(Refusal.encodingInvalid("challenge")) }
            guard let challenge = try? Challenge(challengeBytes) else { return .failure(Refusal.challengeInvalid) }
            let signatureText = fields.optional("signature"), assertionText = fields.optional("assertion")
            guard (signatureText == nil) != (assertionText == nil) else { return .failure(Refusal.proofMissing) }
            var signature: [UInt8]?, assertion: [UInt8]?
            if let signatureText {
                guard let bytes = Base64.decode(signatureText) else { return .failure(Refusal.encodingInvalid("signature")) }
                signature = bytes
            }
            if let assertionText {
                guard let bytes = Base64.decode(assertionText) else { return .failure(Refusal.encodingInvalid("assertion")) }
                assertion = bytes
            }
            return .success(Proof(keyId: keyId, challenge: challenge, signature: signature, assertion: assertion))
        } catch {
            return .failure(Refusal.jsonInvalid(error.message))
        }
    }

    /// A store refusal; challenge refusals carry a fresh challenge of the action's purpose.
    private func refuseWithChallenge(_ answer: Refusal, _ refusal: StoreRefusal, _ action: KeyLifecycleAction, route: String,
                                     keyId: KeyID, _ completion: @escaping Completion) {
        guard refusal == .challengeUnknown || refusal == .challengeExpired || refusal == .challengeWrongPurpose else {
            return refuse(answer, route: route, keyId: keyId, completion)
        }
        issuer.issue(keyId: keyId, purpose: action.purpose) { [self] issued in
            var withChallenge = answer
            if case .success(let fresh) = issued { withChallenge.freshChallenge = (fresh.bytes, fresh.expiresAt) }
            refuse(withChallenge, route: route, keyId: keyId, completion)
        }
    }

    private func refuse(_ refusal: Refusal, route: String, keyId: KeyID? = nil, _ completion: Completion) {
        completion(refusal.response(errorHeader: errorHeader),
                   RequestLogContext(route: route, verdict: nil, reason: refusal.code, keyId: keyId))
    }

    static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        var headers = HTTPHeaders(reservingFields: 2, bytes: 64)
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
