import AppAttest
import AttestCrypto
import Dispatch
import GatewayHTTP
import GatewayRules
import GatewayStore

/// `POST {prefix}/register` (DESIGN.md section 8): registers a device key, at tier `attested` when
/// App Attest vouches for it (an attestation over the registration client data, or an assertion by
/// an App Attest key the gateway holds), else at tier `device`.
///
/// Order: body decoded (`RegistrationBody`) -> for an `appAttest` attestation, one use of
/// `endpoints.fleet_attest_rate` (`FleetAttestRate`: `429 attest_rate_limited` over it, `503` when the
/// store fails; the assertion and device-key-only forms are not counted) -> for an `appAttest` assertion,
/// the App Attest key read from the store (`key_unknown`, `key_revoked`, `key_expired`, `app_not_allowed`)
/// -> the pure `DeviceKeyRegistrationVerifier` -> the app (`appId`, or App Attest's) and its integrity
/// policy (refuse, or lower the tier) -> the account header's keyed hash when the app counts keys per
/// account -> `AttestStore.registerDeviceKey` (challenge of purpose `register` for keyId =
/// SHA-256(publicKey), consumed with the write, atomically; expiry from the app's `registration_ttl`) ->
/// the account index (`LifecycleEndpoints.indexRegistration`); for the attestation form, first the App
/// Attest key that vouched (when the registration keeps tier `attested`), stored as `/attest` stores
/// one unless a record of its keyId exists (`AttestStore.registerVouchingKey`, after the challenge was
/// spent; in no account), so that it can vouch again with the assertion form -> `201` (with the key's first `assert` challenge in
/// `App-Attest-Next-Challenge` when `endpoints.next_challenge` is on) `{"kid", "tier", "platformAttested",
/// "platformTokenSpent", "expiresAt", "renewAfter", "integrity", "backing"}`.
///
/// Nothing is written unless every check passed, with one exception by design: a registration whose
/// device signature verified but whose App Attest attestation (a spent token) or integrity policy
/// refused it records the key's `RegistrationBackoff` and answers `403 registration_refused` with
/// `retryAt` (when an attestation was spent). Challenge failures carry a fresh `register` challenge.
final class RegistrationEndpoint: Sendable {
    let store: any AttestStore
    let keys: KeyCache
    let apps: [String: AppEntry]
    let issuer: ChallengeIssuer
    let clock: GatewayClock
    let verifier: DeviceKeyRegistrationVerifier
    let errorHeader: String
    /// `registration_ttl` and keys per account (the account header's keyed hash, the account index).
    let lifecycle: LifecycleEndpoints
    /// The new key's first `assert` challenge for the `201` (`GatewayEndpoints.nextChallengeForNewKey`:
    /// nil when `endpoints.next_challenge` is off or the store could not issue it).
    let firstChallenge: @Sendable (KeyID, @escaping @Sendable (ChallengeIssuer.Issued?) -> Void) -> Void
    /// Told about an App Attest key stored from the attestation form (the receipt refresher), as for `/attest`.
    let refreshHooks: ReceiptRefreshHooks?
    /// `endpoints.fleet_attest_rate`: the attestation form counts one attestation on arrival, before
    /// verification (its `register` challenge could not tell the forms apart); nil: no limit.
    let fleetAttestRate: FleetAttestRate?
    /// Where verification (an attestation's chain building, about a millisecond) runs, off the event loops.
    private let verifyQueue = DispatchQueue(label: "attest-gateway.registration", attributes: .concurrent)

    init(store: any AttestStore, keys: KeyCache, apps: [String: AppEntry], issuer: ChallengeIssuer, clock: GatewayClock,
         verifier: DeviceKeyRegistrationVerifier, errorHeader: String, lifecycle: LifecycleEndpoints,
         firstChallenge: @escaping @Sendable (KeyID, @escaping @Sendable (ChallengeIssuer.Issued?) -> Void) -> Void,
         refreshHooks: ReceiptRefreshHooks? = nil, fleetAttestRate: FleetAttestRate? = nil) {
        self.lifecycle = lifecycle
        self.refreshHooks = refreshHooks
        self.fleetAttestRate = fleetAttestRate
        self.firstChallenge = firstChallenge
        self.store = store
        self.keys = keys
        self.apps = apps
        self.issuer = issuer
        self.clock = clock
        self.verifier = verifier
        self.errorHeader = errorHeader
    }

    typealias Completion = @Sendable (HTTPResponse, RequestLogContext) -> Void

    private static let route = "endpoint:register"

    /// `POST {prefix}/register`.
    func register(_ request: HTTPRequest, completion: @escaping Completion) {
        let body: RegistrationBody
        do {
            body = try RegistrationBody(request.body, sha256: SHA256.hash)
        } catch {
            refuse(error.refusal, completion)
            return
        }
        if case .attestation? = body.registration.appAttest, let limit = fleetAttestRate {
            // An attestation spent through /register counts against the fleet's attestation rate, before
            // any verification work; over it, nothing else happens (the challenge stays pending).
            limit.admit(store: store, now: clock.now()) { [self] refusal in
                if let refusal { return refuse(refusal, keyId: body.keyId, completion) }
                verifyQueue.async { [self] in verify(body, heldKey: nil, headers: request.head.headers, completion) }
            }
            return
        }
        guard case .assertion? = body.registration.appAttest, let appKeyId = body.appAttestKeyId else {
            verifyQueue.async { [self] in verify(body, heldKey: nil, headers: request.head.headers, completion) }
            return
        }
        // The assertion variant: the App Attest key must be one the gateway attested and still trusts.
        store.fetchKey(appKeyId) { [self] result in
            switch result {
            case .failure:
                refuse(.storeUnavailable, keyId: body.keyId, completion)
            case .success(nil):
                refuse(.store(.keyUnknown), keyId: body.keyId, completion)
            case .success(let record?):
                if record.status == .revoked { return refuse(.store(.keyRevoked), keyId: body.keyId, completion) }
                if let expiresAt = record.expiresAt, clock.now() >= expiresAt {
                    return refuse(.store(.keyExpired), keyId: body.keyId, completion)
                }
                guard record.backing == nil, record.platformAttested else {
                    return refuse(Refusal(status: 401, code: "evidence_kind_mismatch", action: .deny,
                                          detail: "appAttest.keyId names a device key; appAttest takes an App Attest key"),
                                  keyId: body.keyId, completion)
                }
                guard let app = apps[record.appId] else { return refuse(.appNotAllowed(record.appId), keyId: body.keyId, completion) }
                guard let publicKey = try? P256PublicKey(x963: record.publicKey) else {
                    return refuse(.internalError("stored key record is unreadable"), keyId: body.keyId, completion)
                }
                let held = DeviceKeyRegistrationVerifier.HeldKey(publicKey: publicKey, app: app.policy, environment: record.environment)
                verifyQueue.async { [self] in verify(body, heldKey: held, headers: request.head.headers, completion) }
            }
        }
    }

    private func verify(_ body: RegistrationBody, heldKey: DeviceKeyRegistrationVerifier.HeldKey?, headers: HTTPHeaders,
                        _ completion: @escaping Completion) {
        let now = clock.now()
        let keyId = body.keyId
        let key: RegisteredDeviceKey
        switch verifier.verify(body.registration, now: now / 1000, heldKey: heldKey) {
        case .accepted(let accepted):
            key = accepted
        case .rejected(let reason, let detail, let spentAttestation):
            guard spentAttestation else { return refuse(.verification(reason, detail: detail), keyId: keyId, completion) }
            return refuseWithBackoff("App Attest refused the attestation (\(reason.rawValue)): \(detail)", keyId: keyId,
                                     now: now, completion)
        }

        // The app: App Attest's, else the one named, else the only one configured.
        let appId: String
        if let vouched = key.appId {
            if let named = body.appId, named != vouched {
                return refuse(.registrationAppInvalid("appId \(named) differs from the app App Attest vouched for (\(vouched))"),
                              keyId: keyId, completion)
            }
            appId = vouched
        } else if let named = body.appId {
            appId = named
        } else if apps.count == 1, let only = apps.keys.first {
            appId = only
        } else {
            return refuse(.registrationAppInvalid("several apps are configured: name one with \"appId\""), keyId: keyId, completion)
        }
        guard let app = apps[appId] else { return refuse(.appNotAllowed(appId), keyId: keyId, completion) }
        if let environment = key.environment, !app.policy.environment.allows(environment) {
            return refuse(.environmentNotAllowed(environment.rawValue), keyId: keyId, completion)
        }

        // Integrity policy: refuse, or lower the tier.
        var tier: TrustTier = key.platformAttested ? .attested : .device
        switch app.integrity.outcome(for: key.integrity) {
        case .keep: break
        case .lower: tier = .device
        case .refuse(let code):
            let why = "integrity code \(code) is refused for \(appId)"
            if key.platformTokenSpent { return refuseWithBackoff(why, keyId: keyId, now: now, completion) }
            return refuse(.registrationRefused(why, retryAt: nil, now: now / 1000), keyId: keyId, completion)
        }
        let environment = key.environment ?? (app.policy.environment.allows(.production) ? .production : .development)
        let account = lifecycle.account(for: appId, headers: headers)
        if let refusal = account.refusal { return refuse(refusal, keyId: keyId, completion) }
        let record: KeyRecord
        do {
            record = try KeyRecord(keyId: keyId, publicKey: body.registration.publicKey, environment: environment, appId: appId,
                                   createdAt: now, trustTier: tier, expiresAt: app.lifetime.expiresAt(now: now),
                                   accountHash: account.hash, backing: key.backing, integrity: key.integrity,
                                   platformAttested: key.platformAttested)
        } catch {
            return refuse(.internalError("registered key could not be recorded: \(error)"), keyId: keyId, completion)
        }
        // The App Attest key that vouched is stored with the registration only when it vouched at
        // full trust: a registration whose tier an integrity code lowered must not leave an
        // `attested` App Attest key behind (probe: `jb_files` gave the device key tier `device`, and
        // its App Attest key signed `min_tier: attested` routes and vouched again at `attested`).
        let vouching = tier == .attested ? key.appAttestKey : nil
        guard let vouching, let vouchingKeyId = try? KeyID(vouching.keyId) else {
            return commit(record, key: key, vouching: nil, app: app, challenge: body.challenge, now: now, completion)
        }
        // A revoked App Attest key vouches for nothing, in this form as in the assertion form
        // (probe: a second attestation of a revoked key registered a device key at `attested`).
        store.fetchKey(vouchingKeyId) { [self] result in
            switch result {
            case .failure:
                refuse(.storeUnavailable, keyId: keyId, completion)
            case .success(let held?) where held.status == .revoked:
                refuseWithBackoff("the App Attest key that vouched is revoked", keyId: keyId, now: now, completion)
            case .success:
                commit(record, key: key, vouching: vouching, app: app, challenge: body.challenge, now: now, completion)
            }
        }
    }

    /// Writes the registration (its challenge consumed with it) and answers: `201`, after storing
    /// `vouching` (the App Attest key of the attestation form) and indexing both in their account.
    private func commit(_ record: KeyRecord, key: RegisteredDeviceKey, vouching: AttestedKey?, app: AppEntry, challenge: Challenge,
                        now: Int64, _ completion: @escaping Completion) {
        let keyId = record.keyId
        store.registerDeviceKey(record, challenge: challenge, now: now) { [self] result in
            switch result {
            case .failure:
                refuse(.storeUnavailable, keyId: keyId, completion)
            case .success(.refused(let refusal)):
                let answer = Refusal.store(refusal)
                guard refusal == .challengeUnknown || refusal == .challengeExpired || refusal == .challengeWrongPurpose else {
                    return refuse(answer, keyId: keyId, completion)
                }
                issuer.issue(keyId: keyId, purpose: .register) { [self] issued in
                    var withChallenge = answer
                    if case .success(let fresh) = issued { withChallenge.freshChallenge = (fresh.bytes, fresh.expiresAt) }
                    refuse(withChallenge, keyId: keyId, completion)
                }
            case .success(.accepted):
                keys.put(keyId, CachedKey(record: record, publicKey: key.publicKey, app: app.policy), shard: nil)
                let answer = created(record: record, key: key, lifetime: app.lifetime)
                storeVouchingKey(vouching, app: app, registration: record) { [self] stored in
                    // Keys per account: index the key and revoke the oldest beyond the limit, then answer.
                    lifecycle.indexRegistration(record) { [self] _ in
                        firstChallenge(keyId) { next in
                            var response = answer
                            if let next { NextChallengeHeaders.set(next, on: &response.headers) }
                            completion(response, RequestLogContext(route: RegistrationEndpoint.route,
                                                                   reason: stored ? nil : RegistrationEndpoint.vouchingKeyNotStored,
                                                                   keyId: keyId))
                        }
                    }
                }
            }
        }
    }

    /// The access line's `reason` on a `201` whose App Attest key could not be stored (a store failure
    /// after the registration was written): the registration stands, the key cannot vouch later.
    static let vouchingKeyNotStored = "app_attest_key_not_stored"

    /// After an accepted registration of the attestation form: stores the App Attest key that vouched
    /// (`AttestStore.registerVouchingKey`, the record `/attest` would write, with the expiry of
    /// `registration`, created one millisecond before it) unless the store holds a record of that
    /// keyId, then caches it and tells the receipt refresher. It belongs to no account: the device key
    /// it vouched for counts for that device in `max_keys_per_account`. Counted too, it took a second
    /// slot per device and, with a limit of 1, was revoked at once, so the SDK's later
    /// re-registration through it answered `key_revoked` (deny) instead of re-attesting. Completes with
    /// false only when the store failed (the device key's registration stands either way: its
    /// challenge is spent, so a 503 would lose the registration the client paid an attestation for).
    private func storeVouchingKey(_ attested: AttestedKey?, app: AppEntry, registration: KeyRecord,
                                  _ done: @escaping @Sendable (Bool) -> Void) {
        guard let attested else { return done(true) }
        guard let record = try? KeyRecord(attested: attested, createdAt: registration.createdAt - 1, expiresAt: registration.expiresAt,
                                          accountHash: nil) else { return done(false) }
        /// The record is this registration's: cache it, tell the receipt refresher.
        @Sendable func adopt() {
            keys.put(record.keyId, CachedKey(keyId: record.keyId, publicKey: attested.publicKey, app: app.policy,
                                             environment: attested.environment), shard: nil)
            refreshHooks?.registered(record.keyId, attested.appId)
            done(true)
        }
        store.registerVouchingKey(record) { [self] result in
            switch result {
            case .success(.accepted):
                adopt()
            case .success(.refused), .failure:
                // `key_exists`, or no answer (the write may have happened: a reply lost with its
                // connection). The record decides: this registration's own (same key, created one
                // millisecond before the device key) is adopted (cached, its receipt refreshed); an
                // older record is kept as it is; none, after a failure: not stored.
                store.fetchKey(record.keyId) { held in
                    switch held {
                    case .success(let found?) where found.publicKey == record.publicKey && found.createdAt == record.createdAt:
                        adopt()
                    case .success(_?):
                        done(true)
                    case .success(nil), .failure:
                        if case .failure = result { done(false) } else { done(true) }
                    }
                }
            }
        }
    }

    /// `403 registration_refused` with `retryAt` after recording one more refusal in a row.
    private func refuseWithBackoff(_ why: String, keyId: KeyID, now: Int64, _ completion: @escaping Completion) {
        store.recordRegistrationRefusal(keyId: keyId, now: now) { [self] result in
            switch result {
            case .failure:
                refuse(.storeUnavailable, keyId: keyId, completion)
            case .success(let backoff):
                let retryAt = (backoff.retryAt + 999) / 1000
                refuse(.registrationRefused(why + " (refusal \(backoff.refusals) in a row)", retryAt: retryAt, now: now / 1000),
                       keyId: keyId, completion)
            }
        }
    }

    private func created(record: KeyRecord, key: RegisteredDeviceKey, lifetime: RegistrationLifetime) -> HTTPResponse {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.field("kid", Base64.encode(record.keyId.bytes))
        json.field("tier", record.trustTier.rawValue)
        json.field("platformAttested", key.platformAttested)
        json.field("platformTokenSpent", key.platformTokenSpent)
        LifecycleEndpoints.expiryFields(&json, lifetime: lifetime, expiresAt: record.expiresAt)
        json.beginArray("integrity")
        for code in record.integrity { json.value(code) }
        json.endArray()
        json.field("backing", key.backing.rawValue)
        json.endObject()
        var headers = HTTPHeaders(reservingFields: 2, bytes: 64)
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: 201, headers: headers, body: json.bytes)
    }

    /// The refusal, logged with the device key's keyId once it decoded.
    private func refuse(_ refusal: Refusal, keyId: KeyID? = nil, _ completion: Completion) {
        completion(refusal.response(errorHeader: errorHeader),
                   RequestLogContext(route: RegistrationEndpoint.route, verdict: nil, reason: refusal.code, keyId: keyId))
    }
}
