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
/// key known (cache, else one store read) -> route policy (app, environment, trust tier and evidence
/// kind) -> assertion (or a device key's signature, `AssertionEnforcer+DeviceKeys`) verified
/// (pure) -> iOS 27 `signals` policy (route over app, `SignalCheck`: an `enforce` check that fails
/// is a 403, `monitor` failures travel with the valid verdict) -> store commit (challenge exists, unexpired, right purpose and key; counter admitted;
/// consumed). Nothing in the store changes unless every step passed. A store outage yields verdict
/// `unverified` with a 503 refusal, or no refusal when the route is `fail_open`.
///
/// Next challenge (`endpoints.next_challenge`, DESIGN.md section 9): when on, the decision for a
/// request that named a known key (in the key cache, or an active record in the store) carries a
/// fresh `assert` challenge for the answer, accepted or refused alike. At the commit it is minted
/// by the gateway and stored by the commit's own script (`AttestStore.commitAssertion(…issuing:)`,
/// one round trip); a refusal decided before the commit (bad signature, policy, a missing or
/// undecodable field) issues it with one `issueChallenge`. Unknown, revoked and expired keys and
/// store outages get none. A `401` whose cause is the challenge (its value refused by the commit, or
/// the header missing while the keyId is known) carries a fresh challenge in its body on `enforce`
/// routes, whether the switch is on or off (the same value as the next challenge when on).
///
/// Thread-safe: immutable; completions may run on the caller's thread or the store's queue.
final class AssertionEnforcer: Sendable {
    /// The outcome for one request: what to tell the upstream and, when the request must not be
    /// forwarded on an `enforce` route, the refusal to answer instead.
    struct Decision: Sendable {
        var report: VerdictReport
        var refusal: Refusal?
        /// The next challenge for the answer (forwarded or refused), when `next_challenge` is on and
        /// the request named a known key.
        var next: ChallengeIssuer.Issued? = nil
    }

    let store: any AttestStore
    let keys: KeyCache
    let apps: [String: AppEntry]
    let issuer: ChallengeIssuer
    let clock: GatewayClock
    let family: HeaderFamily
    /// `endpoints.next_challenge`.
    let nextChallenge: Bool
    /// Tells the receipt refresher about keys whose metric was never fetched.
    let refreshHooks: ReceiptRefreshHooks?
    /// `ClientDataBinding.emptyBodySHA256`, held here: read on every request without a body (a
    /// stored property instead of a global's once-guarded accessor per request).
    private let emptyBodySHA256 = ClientDataBinding.emptyBodySHA256

    init(store: any AttestStore, keys: KeyCache, apps: [String: AppEntry], issuer: ChallengeIssuer,
         clock: GatewayClock, family: HeaderFamily, nextChallenge: Bool = true, refreshHooks: ReceiptRefreshHooks? = nil) {
        self.refreshHooks = refreshHooks
        self.store = store
        self.keys = keys
        self.apps = apps
        self.issuer = issuer
        self.clock = clock
        self.family = family
        self.nextChallenge = nextChallenge
    }

    /// Evaluates `request` (whose gateway headers were already stripped into `evidence`) for `route`.
    /// `enforced`: the request's refusal will be answered (the route is `enforce` and, with
    /// `enforce_percent`, the request is in the enforced cohort); only then do challenge refusals
    /// carry a fresh challenge in their body. Defaults to the route's mode being `enforce`.
    func evaluate(_ evidence: Evidence, request: HTTPRequest, route: CompiledRoute, enforced: Bool? = nil,
                  completion: @escaping @Sendable (Decision) -> Void) {
        let enforced = enforced ?? (route.config.mode == .enforce)
        // Read on refusals only (a copy of the configured names would cost five retains per request).
        var names: HeadersConfiguration.Evidence { family.configuration.evidence }
        let shard = request.connection.loopIndex
        // A device key sends App-Attest-Signature where an App Attest key sends its assertion.
        let deviceSignature = evidence.assertion == nil && evidence.signature != nil
        guard let rawKeyId = evidence.keyId, let rawChallenge = evidence.challenge,
              let rawAssertion = evidence.assertion ?? evidence.signature else {
            var missing: [String] = []
            if evidence.keyId == nil { missing.append(names.keyID) }
            if evidence.challenge == nil { missing.append(names.challenge) }
            if evidence.assertion == nil && evidence.signature == nil { missing.append(names.assertion) }
            let decision = Decision(report: VerdictReport(.missing, reason: "assertion_missing"),
                                    refusal: .evidenceMissing(missing))
            // A known keyId without a challenge gets a fresh one in the 401 (as the other challenge
            // refusals do), and any known keyId gets the next challenge.
            guard evidence.duplicated == nil, let rawKeyId = evidence.keyId, let bytes = Base64.decode(rawKeyId),
                  let keyId = try? KeyID(bytes) else {
                completion(decision)
                return
            }
            withChallenge(decision, keyId: keyId, known: false, shard: shard,
                          intoRefusal: evidence.challenge == nil && enforced, completion: completion)
            return
        }
        if let duplicated = evidence.duplicated {
            completion(invalid(.headerDuplicated(duplicated)))
            return
        }
        if evidence.assertion != nil && evidence.signature != nil {
            completion(invalid(.evidenceAmbiguous(assertionHeader: names.assertion, signatureHeader: names.signature)))
            return
        }
        guard let keyBytes = Base64.decode(rawKeyId), let keyId = try? KeyID(keyBytes) else {
            completion(invalid(.keyIdInvalid))
            return
        }
        // Refusals from here on named a keyId: a known key gets the next challenge. Local functions,
        // not closure values: nothing is allocated or retained for them on a request that passes.
        func refuse(_ refusal: Refusal) {
            withChallenge(invalid(refusal, keyId: keyId), keyId: keyId, known: false, shard: shard, intoRefusal: false,
                          completion: completion)
        }
        guard let challengeBytes = Base64.decode(rawChallenge) else {
            refuse(.encodingInvalid(names.challenge))
            return
        }
        guard let challenge = try? Challenge(challengeBytes) else {
            refuse(.challengeInvalid)
            return
        }
        guard let assertion = Base64.decode(rawAssertion) else {
            refuse(.encodingInvalid(deviceSignature ? names.signature : names.assertion))
            return
        }

        // Client data binding v1, rebuilt from the request as received.
        var bound: [[UInt8]] = []
        bound.reserveCapacity(route.boundNames.count)
        for (name, nameBytes, cgiLower) in route.boundNames {
            // Every spelling a backend reads as this field counts: `X_User_Token` reaches a CGI, WSGI,
            // PHP or Rack backend as the bound `X-User-Token` (HTTP_X_USER_TOKEN), unsigned.
            let copies = request.head.headers.count { field in
                field.nameBytes.withUnsafeBytes { n in cgiLower.withUnsafeBytes { HeaderFamily.hasPrefix(n, $0) } }
                    && field.nameBytes.count == cgiLower.count
            }
            if copies > 1 || (copies == 1 && request.head.headers.count(of: name) != 1) {
                refuse(.boundHeaderDuplicated(name))
                return
            }
            let value = request.head.headers.firstBytes(name) ?? []
            bound.append(ClientDataBinding.boundField(name: nameBytes, value: Array(value)))
        }
        let bodyHash = request.body.isEmpty ? emptyBodySHA256 : SHA256.hash(request.body)
        guard let clientData = try? ClientDataBinding.v1(challenge: challengeBytes, method: request.head.method.bytes,
                                                         target: request.head.target, bodySHA256: bodyHash,
                                                         boundFields: bound) else {
            completion(invalid(.internalError("client data could not be built"), keyId: keyId))
            return
        }
        if let rawCopy = evidence.clientData {
            guard let copy = Base64.decode(rawCopy) else {
                refuse(.encodingInvalid(names.clientData))
                return
            }
            guard ConstantTime.equals(copy, clientData) else {
                refuse(.clientDataMismatch)
                return
            }
        }

        @Sendable func proceed(_ key: CachedKey) {
            verifyAndCommit(key: key, keyId: keyId, challenge: challenge, assertion: assertion, clientData: clientData,
                            bodySHA256: bodyHash, route: route, deviceSignature: deviceSignature, shard: shard,
                            enforced: enforced, completion: completion)
        }
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
                    let answer = invalid(.appNotAllowed(record.appId), keyId: keyId)
                    guard record.status == .active else { return completion(answer) }
                    withChallenge(answer, keyId: keyId, known: true, shard: shard, intoRefusal: false, completion: completion)
                    return
                }
                guard let publicKey = try? P256PublicKey(x963: record.publicKey) else {
                    completion(invalid(.internalError("stored key record is unreadable"), keyId: keyId))
                    return
                }
                let cached = CachedKey(record: record, publicKey: publicKey, app: app.policy)
                keys.put(keyId, cached, shard: shard)
                proceed(cached)
            }
        }
    }

    private func verifyAndCommit(key: CachedKey, keyId: KeyID, challenge: Challenge, assertion: [UInt8],
                                 clientData: [UInt8], bodySHA256: [UInt8], route: CompiledRoute, deviceSignature: Bool,
                                 shard: Int, enforced: Bool,
                                 completion: @escaping @Sendable (Decision) -> Void) {
        // Refusals before the commit: the key is known (cache or store), so they carry the next challenge.
        func refuse(_ refusal: Refusal) {
            withChallenge(invalid(refusal, keyId: keyId), keyId: keyId, known: true, shard: shard, intoRefusal: false,
                          completion: completion)
        }
        // Route and app policy (403): valid evidence refused by configuration. The app must still be
        // configured: the key cache outlives reloads, and a reload that removed the app cuts its keys
        // off at once, as the store path does (`apps[record.appId]`).
        guard let app = apps[key.app.appId] else {
            refuse(.appNotAllowed(key.app.appId))
            return
        }
        if let allowed = route.allowedApps, !allowed.contains(key.app.appId) {
            refuse(.appNotAllowed(key.app.appId))
            return
        }
        // Environments are App Attest's: a key App Attest did not vouch for has none to check.
        if key.platformAttested, let required = route.environment, required != key.environment {
            refuse(.environmentNotAllowed(key.environment.rawValue))
            return
        }
        if key.platformAttested, !app.policy.environment.allows(key.environment) {
            refuse(.environmentNotAllowed(key.environment.rawValue))
            return
        }
        // Trust tier and evidence kind (DESIGN.md section 8).
        if let refusal = tierRefusal(key: key, route: route, deviceSignature: deviceSignature, enforced: enforced) {
            refuse(refusal)
            return
        }
        if deviceSignature {
            verifySignatureAndCommit(key: key, keyId: keyId, challenge: challenge, signature: assertion, clientData: clientData,
                                     bodySHA256: bodySHA256, route: route, shard: shard, enforced: enforced, completion: completion)
            return
        }

        let decision = AssertionVerifier.verify(assertionObject: assertion, publicKey: key.publicKey, app: key.app,
                                                clientData: clientData, previousCounter: nil)
        let verified: VerifiedAssertion
        switch decision {
        case .accepted(let accepted):
            verified = accepted
        case .rejected(let reason, let detail, _):
            refuse(.verification(reason, detail: detail))
            return
        }
        // iOS 27 signals policy (route over app): an `enforce` check that fails is a 403 before the
        // commit (nothing changes); `monitor` failures travel with the valid verdict.
        var signalCheck: SignalCheck?
        if let policy = route.signalPolicy(appId: key.app.appId) {
            let check = SignalCheck(verified.signals, policy: policy)
            if let refusal = check.refusal {
                var refused = invalid(refusal, keyId: keyId)
                refused.report.signalDecisions = check.decisions
                withChallenge(refused, keyId: keyId, known: true, shard: shard, intoRefusal: false, completion: completion)
                return
            }
            signalCheck = check
        }
        let checked = signalCheck

        let decide: @Sendable (Result<AssertionCommit, StoreUnavailable>, NextChallenge?) -> Void = { [self] result, next in
            switch result {
            case .failure:
                completion(unavailable(route: route, keyId: keyId))
            case .success(let commit):
                let issued = commit.nextIssued ? next.map(ChallengeIssuer.issued) : nil
                switch commit.outcome {
                case .accepted(let committed):
                    var report = VerdictReport(.valid, keyId: keyId)
                    report.keyIdBase64 = key.keyIdBase64
                    report.counter = verified.counter
                    report.environment = key.environment.rawValue
                    report.signals = verified.signals
                    addTier(of: key, route: route, to: &report)
                    report.appId = key.app.appId
                    report.bodySHA256 = bodySHA256
                    if let checked {
                        report.signalDecisions = checked.decisions
                        report.signalPolicy = checked.monitored
                    }
                    guard apps[key.app.appId]?.refreshesRisk == true else {
                        completion(Decision(report: report, refusal: nil, next: issued))
                        return
                    }
                    // Fraud metric (issue 12): headers, and the route's max_risk_metric policy.
                    if committed.risk.state == nil { refreshHooks?.unfetched(keyId, key.app.appId) }
                    let risk = RiskHeaders(committed.risk, environment: key.environment, now: clock.now())
                    report.risk = risk
                    var decision = riskDecision(report, risk: risk, route: route, keyId: keyId)
                    decision.next = issued
                    completion(decision)
                case .refused(let refusal):
                    if refusal.keyIsGone { keys.remove(keyId) }
                    var answer = invalid(.store(refusal), keyId: keyId)
                    answer.next = issued
                    let challengeProblem = refusal == .challengeUnknown || refusal == .challengeExpired
                        || refusal == .challengeWrongPurpose
                    guard challengeProblem, enforced else {
                        completion(answer)
                        return
                    }
                    // A 401 caused by the challenge carries a fresh one for this key (DESIGN.md section 2):
                    // the next challenge the commit stored, else one issued now.
                    if let issued {
                        answer.refusal?.freshChallenge = (issued.bytes, issued.expiresAt)
                        completion(answer)
                        return
                    }
                    let refused = answer
                    issuer.issue(keyId: keyId, purpose: .assert) { issued in
                        var withChallenge = refused
                        if case .success(let fresh) = issued {
                            withChallenge.refusal?.freshChallenge = (fresh.bytes, fresh.expiresAt)
                        }
                        completion(withChallenge)
                    }
                }
            }
        }
        let now = clock.now()
        if nextChallenge, let next = issuer.mint(now: now, avoiding: challenge) {
            store.commitAssertion(keyId: keyId, challenge: challenge, counter: verified.counter,
                                  window: route.config.counterWindow, now: now, issuing: next) { result in
                decide(result, next)
            }
        } else {
            store.commitAssertion(keyId: keyId, challenge: challenge, counter: verified.counter,
                                  window: route.config.counterWindow, now: now) { result in
                decide(result.map { AssertionCommit(outcome: $0, nextIssued: false) }, nil)
            }
        }
    }

    /// Completes with `decision`, given a fresh `assert` challenge first when `keyId` is a known key
    /// (`known`, else in the key cache, else an active record in the store: one read): as the next
    /// challenge when `next_challenge` is on, and as the refusal's fresh challenge when `intoRefusal`.
    /// An unknown key, a store failure or nothing to give leaves the decision as it is.
    func withChallenge(_ decision: Decision, keyId: KeyID, known: Bool, shard: Int, intoRefusal: Bool,
                               completion: @escaping @Sendable (Decision) -> Void) {
        let intoRefusal = intoRefusal && decision.refusal != nil
        guard nextChallenge || intoRefusal else {
            completion(decision)
            return
        }
        let issue: @Sendable () -> Void = { [self] in
            issuer.issue(keyId: keyId, purpose: .assert) { [self] result in
                guard case .success(let fresh) = result else {
                    completion(decision)
                    return
                }
                var given = decision
                if nextChallenge { given.next = fresh }
                if intoRefusal { given.refusal?.freshChallenge = (fresh.bytes, fresh.expiresAt) }
                completion(given)
            }
        }
        if known || keys.get(keyId, shard: shard) != nil {
            issue()
            return
        }
        store.fetchKey(keyId) { result in
            if case .success(let record?) = result, record.status == .active {
                issue()
            } else {
                completion(decision)
            }
        }
    }

    func invalid(_ refusal: Refusal, keyId: KeyID? = nil) -> Decision {
        Decision(report: VerdictReport(.invalid, reason: refusal.code, keyId: keyId), refusal: refusal)
    }

    func unavailable(route: CompiledRoute, keyId: KeyID) -> Decision {
        let report = VerdictReport(.unverified, reason: Refusal.storeUnavailable.code, keyId: keyId)
        return Decision(report: report, refusal: route.config.onStoreError == .failOpen ? nil : .storeUnavailable)
    }
}
