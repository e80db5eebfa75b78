import Foundation

/// One HTTP exchange with the gateway, and the retries of `retry` answers.
extension AttestClient {
    /// How a call to one of the gateway's endpoints ended.
    enum EndpointOutcome {
        /// An answer that is not a `retry` (or the last one after every retry).
        case answer(GatewayAnswer)
        /// No answer after every retry.
        case unavailable(String)
    }

    /// The request-target as sent: the gateway URL's own path, then `target`.
    func wireTarget(_ target: String) -> String {
        var base = configuration.gateway.path
        while base.hasSuffix("/") { base.removeLast() }
        return base + target
    }

    /// The URL of `target` (relative to the gateway URL).
    func url(_ target: String) -> URL? {
        var base = configuration.gateway.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + target)
    }

    /// One exchange; remembers the next challenge it carries for `kid`.
    /// - Throws: the transport's error when nothing answered.
    func exchange(method: String, target: String, headers: [(name: String, value: String)], body: Data, kid: String?) throws -> GatewayAnswer {
        guard let url = url(target) else { throw URLError(.badURL) }
        let response = try transport.send(TransportRequest(method: method, url: url, headers: headers, body: body,
                                                           timeout: configuration.requestTimeout))
        if let kid { absorbNextChallenge(response, kid: kid) }
        return GatewayAnswer(response)
    }

    /// Keeps `App-Attest-Next-Challenge` / `-Expires` of `response` for the key `kid`.
    func absorbNextChallenge(_ response: TransportResponse, kid: String) {
        guard let text = response.header(configuration.nextChallengeHeader), let bytes = Base64Text.decode(text), !bytes.isEmpty else { return }
        let expires = response.header(configuration.nextChallengeExpiresHeader).flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        guard expires > clock.now() else { return }
        lock.locked { nextChallenge = (kid, bytes, expires) }
    }

    /// The next challenge for `kid` when it is still fresh (at least 2 seconds to go), taken (a challenge is one-time).
    func takeNextChallenge(kid: String) -> Data? {
        lock.locked {
            guard let next = nextChallenge, next.kid == kid else { return nil }
            nextChallenge = nil
            return next.expiresAt - 2 > clock.now() ? next.bytes : nil
        }
    }

    /// Whether `answer` asks to try again later: action `retry`, or a `503` / `429` whatever its action
    /// (a `503` never triggers re-attestation).
    func isRetry(_ answer: GatewayAnswer) -> Bool {
        if answer.status == 503 || answer.status == 429 { return true }
        return answer.status >= 400 && answer.refusalCode(errorHeader: configuration.errorHeader) != nil && answer.action == "retry"
    }

    /// `seconds` for a sentence: whole seconds when it is one (`86400`), else as the number it is (`1e+308`).
    static func secondsText(_ seconds: Double) -> String {
        Int(exactly: seconds.rounded(.up)).map(String.init) ?? "\(seconds)"
    }

    /// The answer's `Retry-After` in seconds, when it has one (delta-seconds).
    func retryAfter(_ answer: GatewayAnswer?) -> Double? {
        RetryPolicy.retryAfter(answer?.response.header("Retry-After"))
    }

    /// Waits before retry number `attempt`, honouring the answer's `Retry-After`; false (without
    /// waiting) when `Retry-After` asks for more than `retryMaxDelay`: the caller gives up at once.
    func backOff(attempt: Int, answer: GatewayAnswer?) -> Bool {
        let hint = retryAfter(answer)
        guard retry.waits(for: hint) else { return false }
        clock.sleep(seconds: retry.delay(attempt: attempt, retryAfter: hint, jitter: jitter()))
        return true
    }

    /// `POST {prefix}{path}` with a JSON body, retrying lost connections and `retry` answers, and with
    /// `resendOnServerError` any `5xx` (the same body again: a spent App Attest attestation is resent,
    /// its one-time challenge keeping the resend harmless).
    func postEndpoint(_ path: String, _ object: [String: Any], kid: String?, resendOnServerError: Bool = false,
                      roundTrips: inout Int) -> EndpointOutcome {
        guard let body = try? JSONSerialization.data(withJSONObject: object) else { return .unavailable("cannot encode the request") }
        var attempt = 0
        while true {
            roundTrips += 1
            do {
                let answer = try exchange(method: "POST", target: configuration.prefix + path,
                                          headers: [("Content-Type", "application/json")], body: body, kid: kid)
                guard isRetry(answer) || (resendOnServerError && answer.status >= 500), attempt < retry.maxRetries,
                      backOff(attempt: attempt, answer: answer) else { return .answer(answer) }
            } catch {
                guard attempt < retry.maxRetries else { return .unavailable("the gateway could not be reached (\(error))") }
                _ = backOff(attempt: attempt, answer: nil)
            }
            attempt += 1
        }
    }

    /// How a challenge request ended.
    enum ChallengeOutcome {
        case challenge(Data)
        case refused(GatewayAnswer)
        case unavailable(String)
    }

    /// `POST {prefix}/challenge` `{"keyId", "purpose"}`.
    func requestChallenge(kid: String, purpose: String, roundTrips: inout Int) -> ChallengeOutcome {
        switch postEndpoint("/challenge", ["keyId": kid, "purpose": purpose], kid: nil, roundTrips: &roundTrips) {
        case .unavailable(let detail): return .unavailable(detail)
        case .answer(let answer):
            guard answer.status == 201 || answer.status == 200 else {
                guard isRetry(answer) else { return .refused(answer) }
                if let wait = retryAfter(answer), !retry.waits(for: wait) {
                    return .unavailable(answer.describe("challenge") + "; the gateway asks to retry in \(Self.secondsText(wait)) s, longer than retryMaxDelay: not waited")
                }
                return .unavailable(answer.describe("challenge"))
            }
            guard let challenge = answer.challenge else { return .unavailable("the challenge answer holds no challenge") }
            return .challenge(challenge.bytes)
        }
    }
}
