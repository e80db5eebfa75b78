import GatewayStore

/// What the gateway adds to a request's access-log line beyond the proxy core's facts (status,
/// bytes, latency): the route, the App Attest verdict and the keyId the assertion named. Never a
/// challenge, assertion or body.
struct RequestLogContext: Sendable {
    /// Route name (`routes[N]` or its `name`), or `endpoint:challenge` / `endpoint:attest`.
    var route: String
    /// The verdict on enforce/monitor routes; nil on `off` routes and endpoints.
    var verdict: Verdict?
    /// The reason code of a refusal or a non-valid verdict.
    var reason: String?
    /// The keyId of the assertion's `App-Attest-Key-Id` (or of an endpoint request's body) once it
    /// decoded (valid or not: it names a key, it is no secret), logged base64url as `attestctl keys`
    /// takes it.
    var keyId: KeyID?
    /// The key's trust tier (`attested`, `device`) on a `valid` verdict, also when below the route's
    /// `min_tier` on a `monitor` route (DESIGN.md section 8).
    var tier: String?

    init(route: String, verdict: Verdict? = nil, reason: String? = nil, keyId: KeyID? = nil) {
        self.route = route
        self.verdict = verdict
        self.reason = reason
        self.keyId = keyId
    }
}
