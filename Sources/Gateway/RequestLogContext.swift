/// What the gateway adds to a request's access-log line beyond the proxy core's facts (status,
/// bytes, latency): the route and the App Attest verdict. Never a challenge, assertion or body.
struct RequestLogContext: Sendable {
    /// Route name (`routes[N]` or its `name`), or `endpoint:challenge` / `endpoint:attest`.
    var route: String
    /// The verdict on enforce/monitor routes; nil on `off` routes and endpoints.
    var verdict: Verdict?
    /// The reason code of a refusal or a non-valid verdict.
    var reason: String?
}
