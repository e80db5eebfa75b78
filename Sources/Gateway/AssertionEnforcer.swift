import AppAttest
import AttestCrypto
import GatewayConfig
import GatewayHTTP
import GatewayStore

/// Decides requests on `enforce` and `monitor` routes (DESIGN.md sections 1, 4, 5): rebuilds the
/// client data from the request actually received, verifies the assertion against the attested key,
/// then commits challenge and counter in one store step.
///
/// Order: evidence present -> decodes -> client data rebuilt (and compared with a diagnostic copy) ->
/// key known (cache, else one store read) -> route policy (app, environment) -> assertion verified
/// (pure) -> store commit (challenge exists, unexpired, right purpose and key; counter admitted;
/// consumed). Nothing in the store changes unless every step passed. A store outage yields verdict
/// `unverified` with a 503 refusal, or no refusal when the route is `fail_open`.
///
/// Thread-safe: immutable; completions may run on the caller's thread or the store's queue.
final class AssertionEnforcer: Sendable {
    /// The outcome for one request: what to tell the upstream and, when the request must not be
    /// forwarded on an `enforce` route, the refusal to answer instead.
    struct Decision: Sendable {
        var report: VerdictReport
        var refusal: Refusal?
    }

    let store: any AttestStore
    let keys: KeyCache
    let apps: [String: AppEntry]
    let issuer: ChallengeIssuer
    let clock: GatewayClock
    let family: HeaderFamily
    /// Tells the receipt refresher about keys whose metric was never fetched.
    let refreshHooks: ReceiptRefreshHooks?

    init(store: any AttestStore, keys: KeyCache, apps: [String: AppEntry], issuer: ChallengeIssuer,
         clock: GatewayClock, family: HeaderFamily, refreshHooks: ReceiptRefreshHooks? = nil) {
        self.refreshHooks = refreshHooks
        self.store = store
        self.keys = keys
        self.apps = apps
        self.issuer = issuer
        self.clock = clock
        self.family = family
    }

    /// Evaluates `request` (whose gateway headers were already stripped into `evidence`) for `route`.
    func evaluate(_ evidence: Evidence, request: HTTPRequest, route: CompiledRoute,
                  completion: @escaping @Sendable (Decision) -> Void) {
        let names = family.configuration.evidence
        guard let rawKeyId = evidence.keyId, let rawChallenge = evidence.challenge, let rawAssertion = evidence.assertion else {
            var missing: [String] = []
            if evidence.keyId == nil { missing.append(names.keyID) }
            if evidence.challenge == nil { missing.append(names.challenge) }
            if evidence.assertion == nil { missing.append(names.assertion) }
            completion(Decision(report: VerdictReport(.missing, reason: "assertion_missing"),
                                refusal: .evidenceMissing(missing)))
            return
        }
        if let duplicated = evidence.duplicated {
            completion(invalid(.headerDuplicated(duplicated)))
            return
        }
        guard let keyBytes = Base64.decode(rawKeyId), let keyId = try? KeyID(keyBytes) else {
            completion(invalid(.keyIdInvalid))
            return
        }
        guard let challengeBytes = Base64.decode(rawChallenge) else {
            completion(invalid(.encodingInvalid(names.challenge), keyId: keyId))
            return
        }
        guard let challenge = try? Challenge(challengeBytes) else {
            completion(invalid(.challengeInvalid, keyId: keyId))
            return
        }
        guard let assertion = Base64.decode(rawAssertion) else {
            completion(invalid(.encodingInvalid(names.assertion), keyId: keyId))
            return
        }

        // Client data binding v1, rebuilt from the request as received.
        var bound: [[UInt8]] = []
        bound.reserveCapacity(route.boundNames.count)
        for (name, nameBytes) in route.boundNames {
            if request.head.headers.count(of: name) > 1 {
                completion(invalid(.boundHeaderDuplicated(name), keyId: keyId))
                return
            }
            let value = request.head.headers.firstBytes(name) ?? []
            bound.append(ClientDataBinding.boundField(name: nameBytes, value: Array(value)))
        }
        let bodyHash = request.body.isEmpty ? ClientDataBinding.emptyBodySHA256 : SHA256.hash(request.body)
        guard let clientData = try? ClientDataBinding.v1(challenge: challengeBytes, method: request.head.method.bytes,
                                                         target: request.head.target, bodySHA256: bodyHash,
                                                         boundFields: bound) else {
            completion(invalid(.internalError("client data could not be built"), keyId: keyId))
            return
        }
        if let rawCopy = evidence.clientData {
            guard let copy = Base64.decode(rawCopy) else {
                completion(invalid(.encodingInvalid(names.clientData), keyId: keyId))
                return
            }
            guard ConstantTime.equals(copy, clientData) else {
                completion(invalid(.clientDataMismatch, keyId: keyId))
                return
            }
        }

        let proceed: @Sendable (CachedKey) -> Void = { [self] key in
            verifyAndCommit(key: key, keyId: keyId, challenge: challenge, assertion: assertion, clientData: clientData,
                            route: route, completion: completion)
        }
        let shard = request.connection.loopIndex
        if let cached = keys.get(keyId, shard: shard) {
            proceed(cached)
            return
        }
        store.fetchKey(keyId) { [self] result in
            switch result {
            case .failure:
                completion(unavailable(route: route, keyId: keyId))
            case .success(nil):
                completion(invalid(.store(.keyUnknown), keyId: keyId))
            case .success(let record?):
                guard let app = apps[record.appId] else {
                    completion(invalid(.appNotAllowed(record.appId), keyId: keyId))
                    return
                }
                guard let publicKey = try? P256PublicKey(x963: record.publicKey) else {
                    completion(invalid(.internalError("stored key record is unreadable"), keyId: keyId))
                    return
                }
                let cached = CachedKey(keyId: keyId, publicKey: publicKey, app: app.policy, environment: record.environment)
                keys.put(keyId, cached, shard: shard)
                proceed(cached)
            }
        }
    }

    private func verifyAndCommit(key: CachedKey, keyId: KeyID, challenge: Challenge, assertion: [UInt8],
                                 clientData: [UInt8], route: CompiledRoute,
                                 completion: @escaping @Sendable (Decision) -> Void) {
        // Route and app policy (403): valid evidence refused by configuration.
        if let allowed = route.allowedApps, !allowed.contains(key.app.appId) {
            completion(invalid(.appNotAllowed(key.app.appId), keyId: keyId))
            return
        }
        if let required = route.environment, required != key.environment {
            completion(invalid(.environmentNotAllowed(key.environment.rawValue), keyId: keyId))
            return
        }
        if let app = apps[key.app.appId], !app.policy.environment.allows(key.environment) {
            completion(invalid(.environmentNotAllowed(key.environment.rawValue), keyId: keyId))
            return
        }

        let decision = AssertionVerifier.verify(assertionObject: assertion, publicKey: key.publicKey, app: key.app,
                                                clientData: clientData, previousCounter: nil)
        let verified: VerifiedAssertion
        switch decision {
        case .accepted(let accepted):
            verified = accepted
        case .rejected(let reason, let detail, _):
            completion(invalid(.verification(reason, detail: detail), keyId: keyId))
            return
        }

        store.commitAssertion(keyId: keyId, challenge: challenge, counter: verified.counter,
                              window: route.config.counterWindow, now: clock.now()) { [self] result in
            switch result {
            case .failure:
                completion(unavailable(route: route, keyId: keyId))
            case .success(.accepted(let committed)):
                var report = VerdictReport(.valid, keyId: keyId)
                report.keyIdBase64 = key.keyIdBase64
                report.counter = verified.counter
                report.environment = key.environment.rawValue
                report.signals = verified.signals
                guard apps[key.app.appId]?.refreshesRisk == true else {
                    completion(Decision(report: report, refusal: nil))
                    return
                }
                if committed.risk.state == nil { refreshHooks?.unfetched(keyId, key.app.appId) }
                let risk = RiskHeaders(committed.risk, environment: key.environment, now: clock.now())
                report.risk = risk
                completion(riskDecision(report, risk: risk, route: route, keyId: keyId))
            case .success(.refused(let refusal)):
                if refusal == .keyUnknown { keys.remove(keyId) }
                let answer = invalid(.store(refusal), keyId: keyId)
                let challengeProblem = refusal == .challengeUnknown || refusal == .challengeExpired
                    || refusal == .challengeWrongPurpose
                guard challengeProblem, route.config.mode == .enforce else {
                    completion(answer)
                    return
                }
                // A 401 caused by the challenge carries a fresh one for this key (DESIGN.md section 2).
                issuer.issue(keyId: keyId, purpose: .assert) { issued in
                    var withChallenge = answer
                    if case .success(let fresh) = issued {
                        withChallenge.refusal?.freshChallenge = (fresh.bytes, fresh.expiresAt)
                    }
                    completion(withChallenge)
                }
            }
        }
    }

    private func invalid(_ refusal: Refusal, keyId: KeyID? = nil) -> Decision {
        Decision(report: VerdictReport(.invalid, reason: refusal.code, keyId: keyId), refusal: refusal)
    }

    private func unavailable(route: CompiledRoute, keyId: KeyID) -> Decision {
        let report = VerdictReport(.unverified, reason: Refusal.storeUnavailable.code, keyId: keyId)
        return Decision(report: report, refusal: route.config.onStoreError == .failOpen ? nil : .storeUnavailable)
    }
}
