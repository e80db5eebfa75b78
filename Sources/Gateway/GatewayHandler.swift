import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayStore

/// The gateway's request handling on the data listeners (DESIGN.md sections 1, 2 and 5), plugged
/// into the protocol-agnostic proxy core (`GatewayHTTP.HTTPHandler`).
///
/// Per request: the gateway's endpoints first (`<prefix>/challenge`, `<prefix>/attest`), then the
/// first matching route (`RouteTable`, on the normalized path the core validated). Every route and
/// mode strips every header of the gateway's family from the request (any case, every copy) and sets
/// the forwarding family (`ForwardingHeaders`); `off` routes then forward as they are; `enforce` and
/// `monitor` routes run the `AssertionEnforcer` and forward with the verdict headers set by
/// replacement - or, on `enforce`, answer the refusal.
final class GatewayHandler: HTTPHandler {
    let routeTable: RouteTable
    let routes: [CompiledRoute]
    let endpoints: GatewayEndpoints
    let enforcer: AssertionEnforcer
    let family: HeaderFamily
    /// `X-Forwarded-*`, `Forwarded`, `X-Real-IP` on forwarded requests (`trusted_proxies`).
    let forwarding: ForwardingHeaders
    let endpointsPrefix: [UInt8]
    let accessLog: AccessLog?
    let metrics: GatewayMetrics
    /// Lifecycle events that can flood (failed TLS handshakes), rate-limited.
    let events: RateLimitedEvents?
    /// Per-client limit of the endpoints (`endpoints.rate_limit`), if configured.
    let endpointLimiter: ClientRateLimiter?
    /// Largest body accepted by the gateway's own endpoints (attestation objects are about 5 KiB).
    static let endpointBodyLimit = 64 * 1024

    init(routeTable: RouteTable, routes: [CompiledRoute], endpoints: GatewayEndpoints, enforcer: AssertionEnforcer,
         family: HeaderFamily, forwarding: ForwardingHeaders, endpointsPrefix: String, accessLog: AccessLog?,
         metrics: GatewayMetrics, events: RateLimitedEvents? = nil, endpointLimiter: ClientRateLimiter? = nil) {
        self.events = events
        self.routeTable = routeTable
        self.routes = routes
        self.endpoints = endpoints
        self.enforcer = enforcer
        self.family = family
        self.forwarding = forwarding
        self.endpointsPrefix = Array(endpointsPrefix.utf8)
        self.accessLog = accessLog
        self.metrics = metrics
        self.endpointLimiter = endpointLimiter
    }

    // MARK: - HTTPHandler

    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision {
        switch classify(head) {
        case .challengeEndpoint:
            return endpointHead(head, connection: connection, route: "endpoint:challenge")
        case .attestEndpoint:
            return endpointHead(head, connection: connection, route: "endpoint:attest")
        case .unknownEndpoint:
            return refuse(.unknownEndpoint, route: "endpoint:unknown")
        case .noRoute:
            return refuse(.noRoute, route: nil)
        case .route(let index):
            return .accept(bodyLimit: routes[index].config.maxBody)
        }
    }

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        switch classify(request.head) {
        case .challengeEndpoint:
            endpoints.challenge(request) { response, context in responder.respond(response, annotation: context) }
        case .attestEndpoint:
            endpoints.attest(request) { response, context in responder.respond(response, annotation: context) }
        case .unknownEndpoint:
            responder.respond(render(.unknownEndpoint))
        case .noRoute:
            responder.respond(render(.noRoute))
        case .route(let index):
            forwardOnRoute(routes[index], request: request, responder: responder)
        }
    }

    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        render(.http(error))
    }

    func requestCompleted(_ record: HTTPAccessRecord) {
        let context = record.annotation as? RequestLogContext
        metrics.record(record, context: context)
        accessLog?.write(record, context: context)
    }

    /// Counted by listener, result and version; a failure is also logged, at most once a second
    /// (the next line carries how many were suppressed).
    func tlsHandshakeFinished(_ report: TLSHandshakeReport) {
        metrics.record(report)
        guard let failure = report.failure, failure != "draining" else { return }
        events?.emit("tls_handshake_failed", [("listener", report.localAddress), ("client", report.remoteAddress),
                                              ("reason", failure)])
    }

    // MARK: - Routing

    private enum Destination {
        case challengeEndpoint, attestEndpoint, unknownEndpoint, noRoute
        case route(Int)
    }

    private static let challengeSuffix = Array("/challenge".utf8)
    private static let attestSuffix = Array("/attest".utf8)

    /// Where a request goes: the endpoints take precedence over routes (Config/REFERENCE.md).
    private func classify(_ head: HTTPRequestHead) -> Destination {
        let path = head.path
        if path.starts(with: endpointsPrefix) {
            let rest = path.dropFirst(endpointsPrefix.count)
            if rest.isEmpty || rest.first == UInt8(ascii: "/") {
                if rest.elementsEqual(GatewayHandler.challengeSuffix) { return .challengeEndpoint }
                if rest.elementsEqual(GatewayHandler.attestSuffix) { return .attestEndpoint }
                return .unknownEndpoint
            }
        }
        let method = head.method.bytes
        let index = method.withUnsafeBytes { methodBytes in
            path.withUnsafeBytes { pathBytes in routeTable.match(method: methodBytes, path: pathBytes) }
        }
        guard let index else { return .noRoute }
        return .route(index)
    }

    /// Order matters: the family is read and stripped from the fields as the client sent them; the
    /// forward made from what is left drops the fields the client named in `Connection`
    /// (`HTTPForward.init`); only then does the gateway set its own fields (forwarding, verdict), so
    /// a client's connection options can never remove a field the gateway sets.
    private func forwardOnRoute(_ route: CompiledRoute, request: HTTPRequest, responder: HTTPResponder) {
        var received = request.head.headers
        let mode = route.config.mode
        guard mode != .off else {
            family.strip(&received)
            var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                      headers: received, body: request.body)
            addForwardingHeaders(&forward, request: request)
            responder.forward(forward, annotation: RequestLogContext(route: route.config.name))
            return
        }
        let evidence = family.stripAndExtract(&received)
        var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                  headers: received, body: request.body)
        addForwardingHeaders(&forward, request: request)
        let prepared = forward
        let names = family.configuration.injected
        enforcer.evaluate(evidence, request: request, route: route) { [self] decision in
            let context = RequestLogContext(route: route.config.name, verdict: decision.report.verdict,
                                            reason: decision.report.reason)
            if mode == .enforce, let refusal = decision.refusal {
                responder.respond(render(refusal), annotation: context)
                return
            }
            var permitted = prepared
            decision.report.apply(to: &permitted.headers, names: names)
            responder.forward(permitted, annotation: context)
        }
    }

    /// The forwarding family (`ForwardingHeaders`: believed from trusted proxies only).
    private func addForwardingHeaders(_ forward: inout HTTPForward, request: HTTPRequest) {
        forwarding.apply(to: &forward.headers, connection: request.connection)
    }

    /// The gateway's endpoints take POST, within the client's rate limit.
    private func endpointHead(_ head: HTTPRequestHead, connection: HTTPConnectionInfo, route: String) -> HTTPHeadDecision {
        guard head.method == .post else { return refuse(.methodNotAllowed, route: route) }
        if let limiter = endpointLimiter, let retryAfter = limiter.acquire(connection.remoteHost) {
            return refuse(.rateLimited(retryAfter: retryAfter), route: route)
        }
        return .accept(bodyLimit: GatewayHandler.endpointBodyLimit)
    }

    /// An answer before the body is read, with its reason for the access log.
    private func refuse(_ refusal: Refusal, route: String?) -> HTTPHeadDecision {
        .respondAnnotated(render(refusal), annotation: RequestLogContext(route: route ?? "none", verdict: nil, reason: refusal.code))
    }

    private func render(_ refusal: Refusal) -> HTTPResponse {
        refusal.response(errorHeader: family.configuration.error)
    }
}
