import Foundation

/// Protected requests: evidence headers over binding v1, and every `action` of DESIGN.md section 2.
extension AttestClient {
    /// Sends `request` to the gateway with evidence headers and follows the answer's `action`:
    /// `refresh_challenge` signs again with the fresh challenge in the answer (or a new one);
    /// `reattest` registers again, then resends once; `retry` (and any `503` or `429`, which never
    /// trigger re-attestation) waits `Retry-After` or the jittered exponential back-off, up to
    /// `maxRetries`; `deny` is final. A `Retry-After` longer than `retryMaxDelay` is not waited: the
    /// answer is `.unavailable` at once, with `retryAfter` set to the gateway's wish. After a transport
    /// error (no answer) the request is sent again only when its method is idempotent (GET, HEAD, PUT,
    /// DELETE, OPTIONS) or the error shows nothing was sent (connection refused, DNS, no network): a
    /// timed-out POST or PATCH answers `.unavailable` (it may have reached the upstream). Registers
    /// first (`attest()`) when there is no valid registration.
    ///
    /// The challenge is the one the previous answer carried (`App-Attest-Next-Challenge`) while fresh,
    /// so the steady state costs one round trip; else one `POST {prefix}/challenge` first. When the
    /// store cannot be read (`AttestationStore.read` throws: the Keychain before the first unlock) and
    /// nothing valid is in memory, answers `.unavailable` at once: nothing generated, sent or spent.
    /// Blocking; never throws.
    public func send(_ request: ProtectedRequest) -> ProtectedResponse {
        var current = validRegistration()
        if current == nil {
            if let problem = unreadableStore() { return ProtectedResponse(status: 0, verdict: .unavailable, roundTrips: 0, detail: problem) }
            let attestation = attest()
            guard attestation.verdict == .passed, let registered = validRegistration() else {
                return ProtectedResponse(status: 0, verdict: .notAttested, roundTrips: 0,
                                         detail: attestation.detail ?? "no passed attestation (\(attestation.verdict.rawValue))")
            }
            current = registered
        }
        var registration = current!
        var roundTrips = 0
        var retries = 0
        var refreshes = 0
        var reattested = false
        var pending: Data? = nil
        var lastAnswer: GatewayAnswer? = nil

        func unavailable(_ detail: String, retryAfter: Double? = nil) -> ProtectedResponse {
            ProtectedResponse(status: lastAnswer?.status ?? 0, headers: lastAnswer?.response.headers ?? [], body: lastAnswer?.response.body ?? Data(),
                              verdict: .unavailable, error: lastAnswer?.refusalCode(errorHeader: configuration.errorHeader),
                              action: lastAnswer?.action, roundTrips: roundTrips, detail: detail, retryAfter: retryAfter)
        }
        func refused(_ answer: GatewayAnswer) -> ProtectedResponse {
            ProtectedResponse(status: answer.status, headers: answer.response.headers, body: answer.response.body, verdict: .refused,
                              error: answer.refusalCode(errorHeader: configuration.errorHeader), action: answer.action, roundTrips: roundTrips,
                              detail: answer.string("detail"))
        }
        /// Registers again after a `reattest`; false when that is not possible (again, or refused).
        /// An App Attest key (App Attest alone: a new key costs an attestation) refused within the hour
        /// after its attestation counts as a failed attempt for the back-off.
        func reattest() -> Bool {
            guard !reattested else { return false }
            reattested = true
            if registration.signing == .appAttest, registration.attestation.platformTokenSpent, let obtainedAt = registration.obtainedAt,
               clock.now() - obtainedAt < RegistrationBackoff.first {
                _ = extendBackoff()
            }
            invalidate(registration)
            guard attest().verdict == .passed, let fresh = validRegistration() else { return false }
            registration = fresh
            pending = nil
            return true
        }

        while true {
            guard let kid = registration.attestation.kid else { return unavailable("the registration names no key") }
            // 1. The challenge: a refusal's fresh one, the previous answer's next one, or a new one.
            var challenge = pending ?? takeNextChallenge(kid: kid)
            pending = nil
            if challenge == nil {
                switch requestChallenge(kid: kid, purpose: "assert", roundTrips: &roundTrips) {
                case .challenge(let bytes): challenge = bytes
                case .unavailable(let detail): return unavailable(detail)
                case .refused(let answer):
                    lastAnswer = answer
                    if answer.action == "reattest" && answer.status != 503 {
                        if reattest() { continue }
                    }
                    return refused(answer)
                }
            }
            // 2. Sign and send.
            let headers: [(name: String, value: String)]
            switch evidenceHeaders(request, challenge: challenge!, registration: registration) {
            case .success(let evidence): headers = request.headers + evidence
            case .failure(let code):
                if code == .invalidKey, reattest() { continue }
                return unavailable("App Attest could not sign the request (\(code))")
            }
            roundTrips += 1
            let answer: GatewayAnswer
            do {
                answer = try exchange(method: request.method, target: request.target, headers: headers, body: request.body, kid: kid)
            } catch {
                guard Self.mayResend(method: request.method, after: error) else {
                    return unavailable("no answer from the gateway (\(error)); a \(request.method) that may have reached the upstream is not sent again")
                }
                guard retries < retry.maxRetries else { return unavailable("the gateway could not be reached (\(error))") }
                _ = backOff(attempt: retries, answer: nil)
                retries += 1
                continue
            }
            lastAnswer = answer
            guard answer.status >= 400, let code = answer.refusalCode(errorHeader: configuration.errorHeader) else {
                if lock.locked({ backoffCountPending }) {  // the registration works: refusals are no longer "in a row"
                    lock.locked { backoffCountPending = false }
                    try? store.set(nil, for: Item.backoff)
                }
                return ProtectedResponse(status: answer.status, headers: answer.response.headers, body: answer.response.body,
                                         verdict: .accepted, roundTrips: roundTrips)
            }
            // 3. The refusal's action.
            if isRetry(answer) {
                guard retries < retry.maxRetries else { return unavailable(answer.describe("still refused after \(retries) retries") + " [\(code)]") }
                guard backOff(attempt: retries, answer: answer) else {
                    let wait = retryAfter(answer) ?? 0
                    return unavailable(answer.describe("the gateway asks to retry in \(Self.secondsText(wait)) s, longer than retryMaxDelay "
                                                       + "(\(Self.secondsText(retry.cap)) s): not waited") + " [\(code)]", retryAfter: wait)
                }
                retries += 1
                continue
            }
            switch answer.action {
            case "refresh_challenge":
                guard refreshes < 2 else { return refused(answer) }
                refreshes += 1
                pending = answer.challenge?.bytes  // nil: the next turn asks for a new one
                continue
            case "reattest":
                if reattest() { continue }
                return refused(answer)
            default:
                return refused(answer)
            }
        }
    }

    /// The methods RFC 9110 calls idempotent: sent again after any transport error.
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]

    /// Whether a protected request with `method` may be sent again after the transport threw `error`:
    /// an idempotent method always; any other (POST, PATCH...) only when the error shows that nothing
    /// was sent (connection refused, host not found, no network), never after a timeout or a lost
    /// connection, when the request may already have reached the upstream.
    static func mayResend(method: String, after error: Error) -> Bool {
        if idempotentMethods.contains(method) { return true }  // methods are case-sensitive (RFC 9110 section 9.1)
        guard let code = (error as? URLError)?.code else { return false }
        return [URLError.Code.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet].contains(code)
    }

    /// The evidence headers of `request` with `challenge`: key id, challenge, and the device key's
    /// signature or an App Attest assertion over binding v1 (target as sent, bound headers in order).
    func evidenceHeaders(_ request: ProtectedRequest, challenge: Data,
                         registration: StoredRegistration) -> Result<[(name: String, value: String)], AppAttestServiceError> {
        let bound = request.boundHeaders.map { name in
            (name: name, value: request.headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value ?? "")
        }
        let clientData = ClientDataFraming.bindingV1(challenge: challenge, method: request.method, target: wireTarget(request.target),
                                                     body: request.body, boundFields: bound)
        let kid = registration.attestation.kid ?? ""
        var headers: [(name: String, value: String)] = [(configuration.keyIdHeader, kid), (configuration.challengeHeader, Base64Text.encode(challenge))]
        switch registration.signing {
        case .device:
            // Never creates a key here (outside `operation`): a lost key is invalidKey, and `send` re-registers.
            guard let signer = existingDeviceKey(), Base64Text.encode(SHA256Hashing.hash(signer.publicKey)) == kid,
                  let signature = try? signer.sign(clientData) else {
                return .failure(.invalidKey)
            }
            headers.append((configuration.signatureHeader, Base64Text.encode(signature)))
        case .appAttest:
            let keyId = registration.appAttestKeyId ?? kid
            switch withAppleRetries({ try appAttest.generateAssertion(keyId, clientDataHash: SHA256Hashing.hash(clientData)) }) {
            case .success(let assertion): headers.append((configuration.assertionHeader, Base64Text.encode(assertion)))
            case .failure(let code):
                if code == .invalidKey { saveAppAttestKey(nil) }
                return .failure(code)
            }
        }
        return .success(headers)
    }

    /// The evidence headers for a request the app sends itself (its own networking): the same as
    /// `send(_:)` adds, with the previous answer's next challenge when fresh, else one challenge
    /// request first. nil when there is no passed registration or no challenge could be had. Feed
    /// each answer back with `receive(_:)` so that the next request costs one round trip.
    public func signedHeaders(for request: ProtectedRequest) -> [(name: String, value: String)]? {
        guard let registration = validRegistration(), let kid = registration.attestation.kid else { return nil }
        var challenge = takeNextChallenge(kid: kid)
        if challenge == nil {
            var roundTrips = 0
            guard case .challenge(let bytes) = requestChallenge(kid: kid, purpose: "assert", roundTrips: &roundTrips) else { return nil }
            challenge = bytes
        }
        guard case .success(let evidence) = evidenceHeaders(request, challenge: challenge!, registration: registration) else { return nil }
        return evidence
    }

    /// Reads the next challenge an answer to a request signed with `signedHeaders(for:)` carries.
    public func receive(_ response: TransportResponse) {
        guard let kid = validRegistration()?.attestation.kid else { return }
        absorbNextChallenge(response, kid: kid)
    }
}
