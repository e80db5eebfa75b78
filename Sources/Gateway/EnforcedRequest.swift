import GatewayHTTP
import Synchronization

/// What an `enforce` or `monitor` route keeps of a request while the `AssertionEnforcer` decides it:
/// the request, its context, its fields without the gateway's family, the route, the responder and
/// the cohort (`enforce_percent`). Immutable but for the stripped fields, which the answer takes out
/// once (`takeStripped`); the enforcer's completion captures this one object.
///
/// The enforcer hands its completion on through several closures (refusal, key fetch, commit), and
/// the optimizer rebuilds a specialized closure's captures wherever it escapes: with the request,
/// the context and the rest captured one by one, that copied the request (one retain per field) about
/// ten times per enforced request (seen under a `swift_retain` uprobe; `bench/percall` counts them);
/// with one object, each rebuild retains it once.
final class EnforcedRequest: Sendable {
    /// The request as received (the body for the forward, the connection for the forwarding fields,
    /// its fields for the enforcer's binding).
    let request: HTTPRequest
    /// The head decision's context (`GatewayRequestContext`), logged with the verdict.
    let context: GatewayRequestContext
    /// The request's fields with the gateway's family stripped (a copy with room for the forward's
    /// own fields): the forward starts from these. Taken out by the answer (the only reference
    /// then), so that the forward adds its fields in place rather than copying the list again; a
    /// `Mutex` because the completion may run on another thread than the one that made this object.
    private let stripped: Mutex<HTTPHeaders>
    /// The route matched at the head.
    let route: CompiledRoute
    /// Where the answer goes.
    let responder: HTTPResponder<GatewayRequestContext>
    /// The refusal is answered (the route enforces and, with `enforce_percent`, the keyId is in the
    /// enforced cohort); else the request is forwarded with its verdict.
    let enforced: Bool
    /// `enforced` or `monitored` with `enforce_percent`, nil without it.
    let cohort: String?

    init(request: HTTPRequest, context: GatewayRequestContext, stripped: HTTPHeaders, route: CompiledRoute,
         responder: HTTPResponder<GatewayRequestContext>, enforced: Bool, cohort: String?) {
        self.request = request
        self.context = context
        self.stripped = Mutex(stripped)
        self.route = route
        self.responder = responder
        self.enforced = enforced
        self.cohort = cohort
    }

    /// The stripped fields, moved out (an empty list for a second call: the answer takes them once).
    func takeStripped() -> HTTPHeaders {
        stripped.withLock { fields in
            var taken = HTTPHeaders()
            swap(&taken, &fields)
            return taken
        }
    }
}
