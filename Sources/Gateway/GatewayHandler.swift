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
        switch destination {
        case .challengeEndpoint:
            return endpointHead(head, connection: connection, destination, route: "endpoint:challenge")
        case .attestEndpoint:
            return endpointHead(head, connection: connection, destination, route: "endpoint:attest")
        case .unknownEndpoint:
            return refuse(.unknownEndpoint, destination, route: "endpoint:unknown")
        case .noRoute:
            return refuse(.noRoute, destination, route: nil)
        case .route(let index):
            return .accept(bodyLimit: routes[index].config.maxBody, context: GatewayRequestContext(destination: destination))
        }
    }

    /// Acts on the destination the head decision put in `context` (no second route match); every
    /// answer carries the access-log facts in its context.
    func handle(_ request: HTTPRequest, context: GatewayRequestContext, responder: HTTPResponder<GatewayRequestContext>) {
        switch context.destination {
        case .challengeEndpoint:
            endpoints.challenge(request) { response, log in
                responder.respond(response, context: GatewayRequestContext(destination: context.destination, log: log))
            }
        case .attestEndpoint:
            endpoints.attest(request) { response, log in
                responder.respond(response, context: GatewayRequestContext(destination: context.destination, log: log))
            }
        case .unknownEndpoint:
            responder.respond(render(.unknownEndpoint))
        case .noRoute:
            responder.respond(render(.noRoute))
        case .route(let index):
            forwardOnRoute(routes[index], request: request, destination: context.destination, responder: responder)
        }
    }

    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        render(.http(error))
    }

    /// Counts the request and writes its access-log line with the facts its context holds.
    func requestCompleted(_ record: HTTPAccessRecord, context: GatewayRequestContext?) {
        let log = context?.log
        metrics.record(record, context: log)
        accessLog?.write(record, context: log)
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
    private func forwardOnRoute(_ route: CompiledRoute, request: HTTPRequest, destination: Destination,
                                responder: HTTPResponder<GatewayRequestContext>) {
        var received = request.head.headers
        let mode = route.config.mode
        guard mode != .off else {
            family.strip(&received)
            var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                      headers: received, body: request.body)
            forward.connectTimeout = route.connectTimeout
            forward.responseTimeout = route.responseTimeout
            addForwardingHeaders(&forward, request: request)
            responder.forward(forward, context: GatewayRequestContext(destination: destination,
                                                                      log: RequestLogContext(route: route.config.name)))
            return
        }
        let evidence = family.stripAndExtract(&received)
        var forward = HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                  headers: received, body: request.body)
        forward.connectTimeout = route.connectTimeout
        forward.responseTimeout = route.responseTimeout
        addForwardingHeaders(&forward, request: request)
        let prepared = forward
        let names = family.configuration.injected
        enforcer.evaluate(evidence, request: request, route: route) { [self] decision in
            let context = GatewayRequestContext(
                destination: destination,
                log: RequestLogContext(route: route.config.name, verdict: decision.report.verdict, reason: decision.report.reason))
            if mode == .enforce, let refusal = decision.refusal {
                responder.respond(render(refusal), context: context)
                return
            }
            var permitted = prepared
            decision.report.apply(to: &permitted.headers, names: names)
            if decision.report.verdict == .valid, let keyId = decision.report.keyId {
                permitted.upstreamFailureAnswer = upstreamFailureAnswer(keyId: keyId)
            }
            responder.forward(permitted, context: context)
        }
    }

    /// How a 502 / 504 is answered once the request's challenge was consumed (verdict `valid`): the
    /// evidence can never pass again, so `refresh_challenge` with a fresh challenge for the key (as the
    /// 401 challenge refusals carry; without one when the store cannot issue it), never `retry`.
    private func upstreamFailureAnswer(keyId: KeyID) -> HTTPForward.UpstreamFailureAnswer {
        let issuer = enforcer.issuer
        let errorHeader = family.configuration.error
        return { error, respond in
            let refusal = Refusal.upstreamAfterConsumption(error)
            issuer.issue(keyId: keyId, purpose: .assert) { issued in
                var answer = refusal
                if case .success(let fresh) = issued { answer.freshChallenge = (fresh.bytes, fresh.expiresAt) }
                respond(answer.response(errorHeader: errorHeader))
            }
        }
    }

    /// The forwarding family (`ForwardingHeaders`: believed from trusted proxies only).
    private func addForwardingHeaders(_ forward: inout HTTPForward, request: HTTPRequest) {
        forwarding.apply(to: &forward.headers, connection: request.connection)
    }

    /// The gateway's endpoints take POST, within the client's rate limit.
    private func endpointHead(_ head: HTTPRequestHead, connection: HTTPConnectionInfo, _ destination: Destination,
                              route: String) -> HTTPHeadDecision<GatewayRequestContext> {
        guard head.method == .post else { return refuse(.methodNotAllowed, destination, route: route) }
        if let limiter = endpointLimiter,
           let retryAfter = limiter.acquire(forwarding.clientAddress(headers: head.headers, connection: connection)) {
            return refuse(.rateLimited(retryAfter: retryAfter), destination, route: route)
        }
        return .accept(bodyLimit: GatewayHandler.endpointBodyLimit, context: GatewayRequestContext(destination: destination))
    }

    /// An answer before the body is read, with its reason for the access log.
    private func refuse(_ refusal: Refusal, _ destination: Destination, route: String?) -> HTTPHeadDecision<GatewayRequestContext> {
        .respond(render(refusal), context: GatewayRequestContext(
            destination: destination, log: RequestLogContext(route: route ?? "none", verdict: nil, reason: refusal.code)))
    }

    private func render(_ refusal: Refusal) -> HTTPResponse {
        refusal.response(errorHeader: family.configuration.error)
    }
}
