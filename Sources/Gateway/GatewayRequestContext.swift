/// What the gateway keeps of one request from its head decision to its access-log line: the
/// `HTTPHandler.RequestContext` of `GatewayHandler` (reaching it typed from the proxy core).
struct GatewayRequestContext: Sendable {
    /// Where a request goes, decided once from its head: the endpoints take precedence over routes
    /// (Config/REFERENCE.md).
    enum Destination: Sendable, Equatable {
        case challengeEndpoint, attestEndpoint, unknownEndpoint, noRoute
        /// `<prefix>/renew` or `<prefix>/forget`.
        case lifecycleEndpoint(KeyLifecycleAction)
        /// `<prefix>/register` (device keys).
        case registerEndpoint
        /// `{prefix}/jwks.json`: the verdict tokens' public keys (`VerdictTokenIssuer`).
        case jwksEndpoint
        /// The index of the first matching route in `tables.routes`.
        case route(Int)
    }

    /// Where the request goes (matched once, at the head; `handle` acts on it without matching again).
    let destination: Destination
    /// The route tables the head was matched against: the request is handled, forwarded and logged on
    /// them even when a reload put newer ones in force meanwhile (and keeps their upstream pools open).
    let tables: GatewayTables
    /// The access-log facts (route, verdict, reason), set with the gateway's answer (at the head for
    /// a refusal, else with the response or the forward); nil when the server answered by itself
    /// before the gateway did (413, 408, a client gone...), which the log shows as no route.
    var log: RequestLogContext?
    /// Request id, trace id and user agent, taken from the head.
    var identity: RequestIdentity?

    init(destination: Destination, tables: GatewayTables, log: RequestLogContext? = nil, identity: RequestIdentity? = nil) {
        self.destination = destination
        self.tables = tables
        self.log = log
        self.identity = identity
    }

    /// This context with `log` set (destination, tables and identity kept).
    func logging(_ log: RequestLogContext) -> GatewayRequestContext {
        var copy = self
        copy.log = log
        return copy
    }
}
