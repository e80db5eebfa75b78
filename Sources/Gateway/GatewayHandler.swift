import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayStore

/// The gateway's request handling on the data listeners (DESIGN.md sections 1, 2 and 5), plugged
/// into the protocol-agnostic proxy core (`GatewayHTTP.HTTPHandler`).
///
/// Per request: the gateway's endpoints first (`<prefix>/challenge`, `<prefix>/attest`), then the
/// first matching route (`RouteTable`, on the normalized path the core validated), matched once at
/// the head and kept in the request's `GatewayRequestContext` for `handle` and the access log. Every route and
/// mode strips every header of the gateway's family from the request (any case, every copy) and sets
/// the forwarding family (`ForwardingHeaders`); `off` routes then forward as they are; `enforce` and
/// `monitor` routes run the `AssertionEnforcer` and forward with the verdict headers set by
/// replacement - or, on `enforce`, answer the refusal.
final class GatewayHandler: HTTPHandler {
    typealias RequestContext = GatewayRequestContext
    typealias Destination = GatewayRequestContext.Destination

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
    /// Called with every head classified (tests count that a request is matched once); nil in production.
    let classifyObserver: (@Sendable (HTTPRequestHead) -> Void)?
    /// Largest body accepted by the gateway's own endpoints (attestation objects are about 5 KiB).
    static let endpointBodyLimit = 64 * 1024

    init(routeTable: RouteTable, routes: [CompiledRoute], endpoints: GatewayEndpoints, enforcer: AssertionEnforcer,
         family: HeaderFamily, forwarding: ForwardingHeaders, endpointsPrefix: String, accessLog: AccessLog?,
         metrics: GatewayMetrics, events: RateLimitedEvents? = nil, endpointLimiter: ClientRateLimiter? = nil,
         classifyObserver: (@Sendable (HTTPRequestHead) -> Void)? = nil) {
        self.classifyObserver = classifyObserver
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

    /// Classifies the head (the only route match of the request) and decides: endpoints take POST
    /// within the rate limit, routes accept their `max_body`, the rest is refused now. The
    /// destination goes into the context.
    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<GatewayRequestContext> {
        let destination = classify(head)
        let identity = RequestIdentity(head: head, connection: connection, trusted: forwarding.trusted, ids: metrics.requestIDs)
        switch destination {
        case .challengeEndpoint:
            return endpointHead(head, connection: connection, destination, identity, route: "endpoint:challenge")
        case .attestEndpoint:
            return endpointHead(head, connection: connection, destination, identity, route: "endpoint:attest")
        case .unknownEndpoint:
            return refuse(.unknownEndpoint, destination, identity, route: "endpoint:unknown")
        case .noRoute:
            return refuse(.noRoute, destination, identity, route: nil)
        case .route(let index):
            return .accept(bodyLimit: routes[index].config.maxBody,
                           context: GatewayRequestContext(destination: destination, identity: identity))
        }
    }

    /// Acts on the destination the head decision put in `context` (no second route match); every
    /// answer carries the access-log facts in its context.
    func handle(_ request: HTTPRequest, context: GatewayRequestContext, responder: HTTPResponder<GatewayRequestContext>) {
        switch context.destination {
        case .challengeEndpoint:
            endpoints.challenge(request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .attestEndpoint:
            endpoints.attest(request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .unknownEndpoint:
            responder.respond(render(.unknownEndpoint, context.identity))
        case .noRoute:
            responder.respond(render(.noRoute, context.identity))
        case .route(let index):
            forwardOnRoute(routes[index], request: request, context: context, responder: responder)
        }
    }

    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        render(.http(error), nil)
    }

    /// The rendering of an error the proxy core found, with the request id when the head was decided.
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?, context: GatewayRequestContext?) -> HTTPResponse {
        render(.http(error), context?.identity)
    }

    /// Counts the request and writes its access-log line with the facts its context holds.
    func requestCompleted(_ record: HTTPAccessRecord, context: GatewayRequestContext?) {
        let log = context?.log
        metrics.record(record, context: log, decided: context != nil)
        accessLog?.write(record, context: log, identity: context?.identity)
    }

    func connectionStarted(_ connection: HTTPConnectionInfo) { metrics.connection(connection, started: true) }

    func connectionEnded(_ connection: HTTPConnectionInfo) { metrics.connection(connection, started: false) }

    /// Counted by listener, result and version; a failure is also logged, at most once a second
    /// (the next line carries how many were suppressed).
    func tlsHandshakeFinished(_ report: TLSHandshakeReport) {
        metrics.record(report)
        guard let failure = report.failure, failure != "draining" else { return }
        events?.emit("tls_handshake_failed", [("listener", report.localAddress), ("client", report.remoteAddress),
                                              ("reason", failure)])
    }

    // MARK: - Routing

    private static let challengeSuffix = Array("/challenge".utf8)
    private static let attestSuffix = Array("/attest".utf8)

    /// Where a request goes: the endpoints take precedence over routes (Config/REFERENCE.md).
    /// Called once per request, by `headDecision`.
    private func classify(_ head: HTTPRequestHead) -> Destination {
        classifyObserver?(head)
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
    private func forwardOnRoute(_ route: CompiledRoute, request: HTTPRequest, context decided: GatewayRequestContext,
                                responder: HTTPResponder<GatewayRequestContext>) {
        var received = request.head.headers
        let mode = route.config.mode
        guard mode != .off else {
            family.strip(&received)
            var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                      headers: received, body: request.body)
            addForwardingHeaders(&forward, request: request, identity: decided.identity)
            responder.forward(forward, context: decided.logging(RequestLogContext(route: route.config.name)))
            return
        }
        let evidence = family.stripAndExtract(&received)
        var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                  headers: received, body: request.body)
        addForwardingHeaders(&forward, request: request, identity: decided.identity)
        let prepared = forward
        let names = family.configuration.injected
        enforcer.evaluate(evidence, request: request, route: route) { [self] decision in
            let context = decided.logging(RequestLogContext(route: route.config.name, verdict: decision.report.verdict,
                                                              reason: decision.report.reason, keyId: decision.report.keyId))
            if mode == .enforce, let refusal = decision.refusal {
                responder.respond(render(refusal, context.identity), context: context)
                return
            }
            var permitted = prepared
            decision.report.apply(to: &permitted.headers, names: names)
            responder.forward(permitted, context: context)
        }
    }

    /// The forwarding family (`ForwardingHeaders`: believed from trusted proxies only), the request
    /// id both ways and the `traceparent` check (`RequestIdentity`).
    private func addForwardingHeaders(_ forward: inout HTTPForward, request: HTTPRequest, identity: RequestIdentity?) {
        forwarding.apply(to: &forward.headers, connection: request.connection)
        if let identity {
            identity.apply(to: &forward.headers)
            forward.responseField = (RequestIdentity.requestIDField, identity.requestID)
        }
    }

    /// The gateway's endpoints take POST, within the client's rate limit.
    private func endpointHead(_ head: HTTPRequestHead, connection: HTTPConnectionInfo, _ destination: Destination,
                              _ identity: RequestIdentity, route: String) -> HTTPHeadDecision<GatewayRequestContext> {
        guard head.method == .post else { return refuse(.methodNotAllowed, destination, identity, route: route) }
        if let limiter = endpointLimiter, let retryAfter = limiter.acquire(connection.remoteHost) {
            return refuse(.rateLimited(retryAfter: retryAfter), destination, identity, route: route)
        }
        return .accept(bodyLimit: GatewayHandler.endpointBodyLimit,
                       context: GatewayRequestContext(destination: destination, identity: identity))
    }

    /// An answer before the body is read, with its reason for the access log.
    private func refuse(_ refusal: Refusal, _ destination: Destination, _ identity: RequestIdentity,
                        route: String?) -> HTTPHeadDecision<GatewayRequestContext> {
        .respond(render(refusal, identity), context: GatewayRequestContext(
            destination: destination, log: RequestLogContext(route: route ?? "none", verdict: nil, reason: refusal.code),
            identity: identity))
    }

    /// The refusal's answer, with the request id when known.
    private func render(_ refusal: Refusal, _ identity: RequestIdentity?) -> HTTPResponse {
        let response = refusal.response(errorHeader: family.configuration.error)
        return identity?.echo(on: response) ?? response
    }
}
