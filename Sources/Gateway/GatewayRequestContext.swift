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

        /// The name the access log and the metrics give this destination: the route's name, or
        /// `endpoint:challenge`, `endpoint:attest`, `endpoint:renew`, ...; nil for no route.
        func logRoute(in tables: GatewayTables) -> String? {
            switch self {
            case .route(let index): return index < tables.routes.count ? tables.routes[index].config.name : nil
            case .challengeEndpoint: return "endpoint:challenge"
            case .attestEndpoint: return "endpoint:attest"
            case .lifecycleEndpoint(let action): return action.route
            case .registerEndpoint: return "endpoint:register"
            case .unknownEndpoint: return "endpoint:unknown"
            case .jwksEndpoint: return "endpoint:jwks"
            case .noRoute: return nil
            }
        }
    }

    /// What the head decision found, immutable and shared by every copy of the context: a copy of
    /// the context retains this one object (and the log's fields) instead of each field below.
    final class Decided: Sendable {
        /// Where the request goes (matched once, at the head; `handle` acts on it without matching again).
        let destination: Destination
        /// The route tables the head was matched against: the request is handled, forwarded and logged
        /// on them even when a reload put newer ones in force meanwhile (and keeps their upstream pools open).
        let tables: GatewayTables
        /// Request id, trace id and user agent, taken from the head.
        let identity: RequestIdentity?

        init(destination: Destination, tables: GatewayTables, identity: RequestIdentity?) {
            self.destination = destination
            self.tables = tables
            self.identity = identity
        }
    }

    /// The head decision's facts (destination, tables, identity).
    let decided: Decided
    /// The access-log facts (route, verdict, reason), set with the gateway's answer (at the head for
    /// a refusal, else with the response or the forward); nil when the server answered by itself
    /// before the gateway did (413, 408, a client gone...): `reportedLog` then names the destination.
    var log: RequestLogContext?

    /// What the access log and the metrics record: `log`, or when the server answered before the
    /// gateway did (a 413 over the route's `max_body`, a 408), the destination the head decision
    /// found (route name or endpoint), so that such answers count against their route, not "none".
    var reportedLog: RequestLogContext? {
        if let log { return log }
        return destination.logRoute(in: tables).map { RequestLogContext(route: $0) }
    }

    /// Where the request goes (`Decided.destination`).
    var destination: Destination { decided.destination }
    /// The route tables the head was matched against (`Decided.tables`).
    var tables: GatewayTables { decided.tables }
    /// Request id, trace id and user agent (`Decided.identity`).
    var identity: RequestIdentity? { decided.identity }

    init(destination: Destination, tables: GatewayTables, log: RequestLogContext? = nil, identity: RequestIdentity? = nil) {
        decided = Decided(destination: destination, tables: tables, identity: identity)
        self.log = log
    }

    private init(decided: Decided, log: RequestLogContext) {
        self.decided = decided
        self.log = log
    }

    /// This context with `log` set (the head decision's facts shared, not copied; the previous log
    /// is not copied either).
    func logging(_ log: consuming RequestLogContext) -> GatewayRequestContext {
        GatewayRequestContext(decided: decided, log: log)
    }
}
