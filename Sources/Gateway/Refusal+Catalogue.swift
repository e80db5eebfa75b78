import AppAttest
import GatewayHTTP
import GatewayStore

/// The gateway's refusals by cause, each with its status, stable code and action
/// (DESIGN.md section 2). One place, so that the same cause always answers the same way.
extension Refusal {
    /// 401: the request lacks App Attest evidence (`assertion_missing`); `missing` names the headers.
    static func evidenceMissing(_ missing: [String]) -> Refusal {
        Refusal(status: 401, code: "assertion_missing", action: .refreshChallenge,
                detail: "missing \(missing.joined(separator: ", ")): get a challenge and send an assertion")
    }

    /// 400: an evidence header appeared more than once.
    static func headerDuplicated(_ name: String) -> Refusal {
        Refusal(status: 400, code: "header_duplicated", action: .deny, detail: "\(name) must appear once")
    }

    /// 400: a bound header appeared more than once (any spelling a backend reads as it: case, `_`
    /// for `-`), so the signed value would be ambiguous.
    static func boundHeaderDuplicated(_ name: String) -> Refusal {
        Refusal(status: 400, code: "bound_header_duplicated", action: .deny,
                detail: "\(name) is bound into the assertion and must appear at most once, in its own spelling (an _ for a - counts as a copy)")
    }

    /// 400: the keyId is not base64 of 32 bytes.
    static let keyIdInvalid = Refusal(status: 400, code: "key_id_invalid", action: .deny,
                                      detail: "the keyId must be base64 (standard or URL-safe) of 32 bytes")

    /// 400: a binary field is not standard or URL-safe base64.
    static func encodingInvalid(_ field: String) -> Refusal {
        Refusal(status: 400, code: "encoding_invalid", action: .deny,
                detail: "\(field) is not base64 (standard or URL-safe, padded or not)")
    }

    /// 400: the challenge does not decode to 16...64 bytes (so it cannot be one the gateway issued).
    static let challengeInvalid = Refusal(status: 400, code: "challenge_invalid", action: .refreshChallenge,
                                          detail: "the challenge must be base64 of 16 to 64 bytes as issued")

    /// 401: the client-supplied client data differs from what the gateway rebuilt from the request.
    static let clientDataMismatch = Refusal(
        status: 401, code: "client_data_mismatch", action: .deny,
        detail: "App-Attest-Client-Data differs from the client data rebuilt from this request (method, target, body, challenge)")

    /// 401 (403 for environment): a verification step failed.
    static func verification(_ reason: ReasonCode, detail: String) -> Refusal {
        switch reason {
        case .envMismatch:
            return Refusal(status: 403, code: reason.rawValue, action: .deny, detail: detail)
        case .encodingInvalid, .keyIdInvalid, .publicKeyInvalid, .backingUnknown, .integrityInvalid:
            return Refusal(status: 400, code: reason.rawValue, action: .deny, detail: detail)
        case .counterReplay:
            return Refusal(status: 401, code: reason.rawValue, action: .deny, detail: detail)
        default:
            return Refusal(status: 401, code: reason.rawValue, action: .deny,
                           detail: detail.isEmpty ? "verification failed: \(reason.rawValue)" : detail)
        }
    }

    /// The answer for a store verdict (a refusal, not an outage).
    static func store(_ refusal: StoreRefusal) -> Refusal {
        switch refusal {
        case .challengeUnknown:
            return Refusal(status: 401, code: refusal.code, action: .refreshChallenge,
                           detail: "unknown or already used challenge for this key: use the fresh one")
        case .challengeExpired:
            return Refusal(status: 401, code: refusal.code, action: .refreshChallenge,
                           detail: "the challenge expired: use the fresh one")
        case .challengeWrongPurpose:
            return Refusal(status: 401, code: refusal.code, action: .refreshChallenge,
                           detail: "the challenge was issued for another purpose: use the fresh one")
        case .keyUnknown:
            return Refusal(status: 401, code: refusal.code, action: .reattest,
                           detail: "the gateway has no attested key with this keyId: attest a key first")
        case .keyExpired:
            return Refusal(status: 401, code: refusal.code, action: .reattest,
                           detail: "the key's registration expired: register again (a device key may register itself again; an App Attest key needs a new key)")
        case .keyRevoked:
            return Refusal(status: 403, code: refusal.code, action: .deny, detail: "the key was revoked")
        case .keyExists:
            return Refusal(status: 409, code: refusal.code, action: .deny,
                           detail: "this key is already registered (live or revoked) and a registration never replaces it: a live key signs requests, a revoked one is refused")
        case .counterReplay:
            return Refusal(status: 401, code: refusal.code, action: .deny,
                           detail: "the assertion's counter is not above the last accepted one (replay)")
        }
    }

    /// 503: the store is unreachable; fail-closed.
    static let storeUnavailable = Refusal(status: 503, code: "store_unavailable", action: .retry,
                                          detail: "the gateway's store is unavailable; retry later", retryAfter: 1)

    /// 403: the key's app is not allowed here.
    static func appNotAllowed(_ appId: String) -> Refusal {
        Refusal(status: 403, code: "app_not_allowed", action: .deny, detail: "app \(appId) is not allowed on this route")
    }

    /// 403: the key's environment is not allowed here.
    static func environmentNotAllowed(_ environment: String) -> Refusal {
        Refusal(status: 403, code: "env_mismatch", action: .deny,
                detail: "keys attested in the \(environment) environment are not accepted here")
    }

    /// 404: no route takes this request.
    static let noRoute = Refusal(status: 404, code: "no_route", action: .deny, detail: "no route for this method and path")

    /// 405: the gateway endpoint takes POST only.
    static let methodNotAllowed = Refusal(status: 405, code: "method_not_allowed", action: .deny,
                                          detail: "this endpoint takes POST")

    /// 404: unknown path under the endpoints prefix.
    static let unknownEndpoint = Refusal(status: 404, code: "unknown_endpoint", action: .deny,
                                         detail: "the gateway serves <prefix>/challenge, <prefix>/attest, <prefix>/register, <prefix>/renew and <prefix>/forget")

    /// 400: the endpoint body is not the expected JSON object.
    static func jsonInvalid(_ detail: String) -> Refusal {
        Refusal(status: 400, code: "json_invalid", action: .deny, detail: detail)
    }

    /// 403: a verified assertion's iOS 27 signal fails the route's or app's `signals` policy under
    /// action `enforce` (`validation_category_not_allowed`, `bundle_version_too_old`).
    static func signalRefused(code: String, detail: String) -> Refusal {
        Refusal(status: 403, code: code, action: .deny, detail: detail)
    }

    /// 429: the fleet-wide `endpoints.fleet_attest_rate` is used up for this window.
    static func attestRateLimited(retryAfter: Int) -> Refusal {
        Refusal(status: 429, code: "attest_rate_limited", action: .retry,
                detail: "the fleet's attestation rate is used up: retry after \(retryAfter) s", retryAfter: retryAfter)
    }

    /// 429: too many requests from this client.
    static func rateLimited(retryAfter: Int) -> Refusal {
        Refusal(status: 429, code: "rate_limited", action: .retry, detail: "too many requests; slow down", retryAfter: retryAfter)
    }

    /// 500: an internal failure that is not the client's fault.
    static func internalError(_ detail: String) -> Refusal {
        Refusal(status: 500, code: "internal_error", action: .retry, detail: detail, retryAfter: 1)
    }

    /// The answer for an error the proxy core detected itself (malformed HTTP, limits, timeouts,
    /// upstream failures).
    static func http(_ error: HTTPError) -> Refusal {
        let action: RefusalAction
        var retryAfter: Int?
        switch error.status {
        case 408, 502, 504: action = .retry
        case 503: action = .retry; retryAfter = 1
        case 500: action = .retry
        default: action = .deny
        }
        return Refusal(status: error.status, code: error.code, action: action, detail: Refusal.describe(error),
                       retryAfter: retryAfter)
    }

    /// 502 / 504 on a request whose assertion was accepted and whose challenge was therefore consumed
    /// (`enforce` and `monitor` routes, verdict `valid`): the same evidence can never pass again, so
    /// the action is `refresh_challenge` (with a fresh challenge when one could be issued), not `retry`.
    static func upstreamAfterConsumption(_ error: HTTPError) -> Refusal {
        var refusal = http(error)
        refusal.action = .refreshChallenge
        refusal.retryAfter = nil
        refusal.detail += "; the request's challenge was used: sign the retry with the fresh one"
        return refusal
    }

    private static func describe(_ error: HTTPError) -> String {
        switch error {
        case .bodyTooLarge: return "the request body is larger than this route accepts"
        case .headerTooLarge, .tooManyHeaders: return "the request header section is too large"
        case .headerTimeout: return "the request headers did not arrive in time"
        case .bodyTimeout: return "the request body did not arrive in time"
        case .contentLengthWithTransferEncoding: return "Content-Length and Transfer-Encoding together are refused"
        case .duplicateContentLength: return "more than one Content-Length"
        case .badTransferEncoding: return "only Transfer-Encoding: chunked is accepted"
        case .hostInvalid: return "the request needs exactly one Host field (HTTP/1.1) whose value is host[:port]"
        case .methodInvalid: return "the method must not hold lower-case letters (GET, POST, PROPFIND, ...)"
        case .upstreamUnavailable, .upstreamReset, .upstreamBadResponse: return "the upstream could not be reached or failed"
        case .upstreamConnectTimeout, .upstreamTimeout: return "the upstream did not answer in time"
        case .upstreamTLSFailed: return "the TLS handshake with the upstream failed"
        case .upstreamUnresolved: return "no endpoint of the upstream resolves (DNS) yet; the gateway keeps trying"
        case .shuttingDown: return "the gateway is shutting down"
        default:
            if error.code.hasPrefix("target_") {
                return "the request-target is not in normal form (no //, ., .., encoded / or unreserved characters)"
            }
            return "malformed request (\(error.code))"
        }
    }

    /// The HTTP response: JSON body, `App-Attest-Error` (name from configuration), `Retry-After`,
    /// `Cache-Control: no-store`.
    func response(errorHeader: String) -> HTTPResponse {
        var headers = HTTPHeaders(reservingFields: 4, bytes: 128)
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        try? headers.add(name: errorHeader, value: code)
        if let retryAfter { try? headers.add(name: "Retry-After", value: String(retryAfter)) }
        if status == 405 { try? headers.add(name: "Allow", value: "POST") }
        return HTTPResponse(status: status, headers: headers, body: jsonBody)
    }
}
