import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayStore
import Synchronization

/// The gateway's request handling on the data listeners (DESIGN.md sections 1, 2 and 5), plugged
/// into the protocol-agnostic proxy core (`GatewayHTTP.HTTPHandler`).
///
/// Per request: the gateway's endpoints first (`<prefix>/challenge`, `/attest`, `/register`, `/renew`, `/forget`), then the
/// first matching route (`RouteTable`, on the normalized path the core validated), matched once at
/// the head and kept in the request's `GatewayRequestContext` for `handle` and the access log. Every route and
/// mode strips every header of the gateway's family from the request (any case, every copy) and sets
/// the forwarding family (`ForwardingHeaders`); `off` routes then forward as they are; `enforce` and
/// `monitor` routes run the `AssertionEnforcer` and forward with the verdict headers set by
/// replacement (and, with `verdict_token`, the signed token: `VerdictTokenIssuer`) - or, on
/// `enforce`, answer the refusal. Either answer carries the decision's next challenge
/// (`NextChallengeHeaders`); upstream copies of those fields are dropped on every route.
/// `<prefix>/jwks.json` serves the tokens' public keys.
final class GatewayHandler: HTTPHandler {
    typealias RequestContext = GatewayRequestContext
    typealias Destination = GatewayRequestContext.Destination

    /// The route tables in force (swapped by a reload); each request takes them once, at its head.
    let tables: CurrentTables
    let accessLog: AccessLog?
    let metrics: GatewayMetrics
    /// Lifecycle events that can flood (failed TLS handshakes), rate-limited.
    let events: RateLimitedEvents?
    /// Called with every head classified (tests count that a request is matched once); nil in production.
    let classifyObserver: (@Sendable (HTTPRequestHead) -> Void)?
    /// Requests the drain deadline cut (`HTTPError.drainDeadline`), for the `stopped` line.
    private let cut = Atomic<Int>(0)
    /// Largest body accepted by the gateway's own endpoints (attestation objects are about 5 KiB).
    static let endpointBodyLimit = 64 * 1024

    init(tables: CurrentTables, accessLog: AccessLog?, metrics: GatewayMetrics, events: RateLimitedEvents? = nil,
         classifyObserver: (@Sendable (HTTPRequestHead) -> Void)? = nil) {
        self.classifyObserver = classifyObserver
        self.events = events
        self.tables = tables
        self.accessLog = accessLog
        self.metrics = metrics
    }

    /// Requests cut by the drain deadline so far (answered by nobody: the gateway closed them).
    var requestsCutByDrain: Int { cut.load(ordering: .relaxed) }

    // MARK: - HTTPHandler

    /// Classifies the head (the only route match of the request) and decides: endpoints take POST
    /// within the rate limit, routes accept their `max_body`, the rest is refused now. The
    /// destination goes into the context.
    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<GatewayRequestContext> {
        let tables = self.tables.current(loopIndex: connection.loopIndex)
        let destination = classify(head, tables)
        let identity = RequestIdentity(head: head, connection: connection, forwarding: tables.forwarding,
                                       ids: metrics.requestIDs, logged: accessLog != nil && tables.logAccess)
        switch destination {
        case .challengeEndpoint, .attestEndpoint, .lifecycleEndpoint, .registerEndpoint:
            return endpointHead(head, connection: connection, destination, tables, identity,
                                route: destination.logRoute(in: tables) ?? "endpoint")
        case .unknownEndpoint:
            return refuse(.unknownEndpoint, destination, tables, identity, route: destination.logRoute(in: tables))
        case .jwksEndpoint:
            return jwksHead(head, destination, tables, identity)
        case .noRoute:
            return refuse(.noRoute, destination, tables, identity, route: nil)
        case .route(let index):
            let route = tables.routes[index]
            if head.expectsContinue, let refusal = missingEvidenceBeforeTheBody(head, route, tables) {
                // `Expect: 100-continue` without any evidence on an enforced route: refused now, so
                // the client never uploads a body the answer does not depend on (RFC 9110 section
                // 10.1.1: a final status instead of 100). The same answer and log as the enforcer's.
                return .respond(render(refusal, tables, identity), context: GatewayRequestContext(
                    destination: destination, tables: tables,
                    log: RequestLogContext(route: route.config.name, verdict: .missing, reason: refusal.code), identity: identity))
            }
            return .accept(bodyLimit: route.config.maxBody,
                           context: GatewayRequestContext(destination: destination, tables: tables, identity: identity))
        }
    }

    /// The refusal of a request on an `enforce` route (without `enforce_percent`, whose cohorts the
    /// enforcer counts) that carries none of the evidence headers: `AssertionEnforcer`'s
    /// `assertion_missing`, decidable from the head alone. Nil when any evidence header is present
    /// (the enforcer decides, after the body).
    private func missingEvidenceBeforeTheBody(_ head: HTTPRequestHead, _ route: CompiledRoute, _ tables: GatewayTables) -> Refusal? {
        guard route.config.mode == .enforce, route.config.enforcePercent == nil else { return nil }
        let names = tables.family.configuration.evidence
        for name in [names.keyID, names.challenge, names.assertion, names.signature] where head.headers.contains(name) { return nil }
        return .evidenceMissing([names.keyID, names.challenge, names.assertion])
    }

    /// Acts on the destination the head decision put in `context` (no second route match); every
    /// answer carries the access-log facts in its context.
    func handle(_ request: consuming HTTPRequest, context: GatewayRequestContext, responder: HTTPResponder<GatewayRequestContext>) {
        let tables = context.tables
        switch context.destination {
        case .challengeEndpoint:
            tables.endpoints.challenge(request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .attestEndpoint:
            tables.endpoints.attest(request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .lifecycleEndpoint(let action):
            tables.lifecycle.handle(action, request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .registerEndpoint:
            tables.registration.register(request) { response, log in
                responder.respond(context.identity?.echo(on: response) ?? response, context: context.logging(log))
            }
        case .unknownEndpoint, .jwksEndpoint:
            responder.respond(render(.unknownEndpoint, tables, context.identity))
        case .noRoute:
            responder.respond(render(.noRoute, tables, context.identity))
        case .route(let index):
            forwardOnRoute(tables.routes[index], request: consume request, context: context, responder: responder)
        }
    }

    /// The rendering of an error the proxy core found without a request context (the tables in
    /// force, no request id).
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        render(.http(error), tables.latestTables, nil)
    }

    /// The rendering of an error the proxy core found, on the request's tables and with its request
    /// id when the head was decided.
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?, context: GatewayRequestContext?) -> HTTPResponse {
        render(.http(error), context?.tables ?? tables.latestTables, context?.identity)
    }

    /// Counts the request and writes its access-log line with the facts its context holds (when the
    /// tables it ran on have `log.access`); counts requests the drain deadline cut.
    func requestCompleted(_ record: HTTPAccessRecord, context: GatewayRequestContext?) {
        let log = context?.reportedLog
        metrics.record(record, context: log, decided: context != nil)
        if record.error == .drainDeadline { cut.add(1, ordering: .relaxed) }
        guard let accessLog else { return }
        let tables = context?.tables ?? self.tables.current(loopIndex: record.connection.loopIndex)
        if tables.logAccess { accessLog.write(record, context: log, identity: context?.identity) }
    }

    func connectionStarted(_ connection: HTTPConnectionInfo) { metrics.connection(connection, started: true) }

    func connectionEnded(_ connection: HTTPConnectionInfo) { metrics.connection(connection, started: false) }

    /// Counted by listener, result and version; a failure is also logged, at most once a second
    /// (the next line carries how many were suppressed), except a peer that closed before the end
    /// (`closed`: a load balancer's TCP health check connects and closes without a ClientHello) and
    /// a drain: counted only.
    func tlsHandshakeFinished(_ report: TLSHandshakeReport) {
        metrics.record(report)
        guard let failure = report.failure, failure != "draining", failure != "closed" else { return }
        events?.emit("tls_handshake_failed", [("listener", report.localAddress), ("client", report.remoteAddress),
                                              ("reason", failure)])
    }

    // MARK: - Routing

    private static let challengeSuffix = Array("/challenge".utf8)
    private static let attestSuffix = Array("/attest".utf8)
    private static let renewSuffix = Array("/renew".utf8)
    private static let forgetSuffix = Array("/forget".utf8)
    private static let registerSuffix = Array("/register".utf8)
    private static let jwksSuffix = Array("/jwks.json".utf8)

    /// Where a request goes: the endpoints take precedence over routes (Config/REFERENCE.md).
    /// Called once per request, by `headDecision`.
    private func classify(_ head: HTTPRequestHead, _ tables: GatewayTables) -> Destination {
        classifyObserver?(head)
        let path = head.path
        if path.starts(with: tables.endpointsPrefix) {
            let rest = path.dropFirst(tables.endpointsPrefix.count)
            if rest.isEmpty || rest.first == UInt8(ascii: "/") {
                if rest.elementsEqual(GatewayHandler.challengeSuffix) { return .challengeEndpoint }
                if rest.elementsEqual(GatewayHandler.attestSuffix) { return .attestEndpoint }
                if rest.elementsEqual(GatewayHandler.renewSuffix) { return .lifecycleEndpoint(.renew) }
                if rest.elementsEqual(GatewayHandler.forgetSuffix) { return .lifecycleEndpoint(.forget) }
                if rest.elementsEqual(GatewayHandler.registerSuffix) { return .registerEndpoint }
                if rest.elementsEqual(GatewayHandler.jwksSuffix), tables.verdictTokens != nil { return .jwksEndpoint }
                return .unknownEndpoint
            }
        }
        let method = head.method.bytes
        let index = method.withUnsafeBytes { methodBytes in
            path.withUnsafeBytes { pathBytes in tables.routeTable.match(method: methodBytes, path: pathBytes) }
        }
        guard let index else { return .noRoute }
        return .route(index)
    }

    /// Order matters: the family is read and stripped from the fields as the client sent them; the
    /// forward made from what is left drops the fields the client named in `Connection`
    /// (`HTTPForward.init`); only then does the gateway set its own fields (forwarding, verdict), so
    /// a client's connection options can never remove a field the gateway sets.
    private func forwardOnRoute(_ route: CompiledRoute, request: consuming HTTPRequest, context head: GatewayRequestContext,
                                responder: HTTPResponder<GatewayRequestContext>) {
        let decided = head.decided
        let tables = decided.tables
        var received = request.head.headers
        let mode = route.config.mode
        let family = tables.family
        guard mode != .off else {
            // Taken out of the request, which the connection handed over (`HTTPHandler.handle`): the
            // only reference, so stripping and adding fields edit the list in place (room reserved
            // for the forwarding family and the request id, usually within the parser's reservation).
            request.head.headers = HTTPHeaders()
            received.reserveAdditional(fields: 4, bytes: 96)
            family.strip(&received)
            let responseField = prepareForwardFields(&received, request: request, tables: tables, decided: decided)
            // Made complete in the call: a local forward edited through `inout` cost one more whole copy.
            responder.forward(HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                          optionsRemoved: consume received, body: request.body,
                                          responseHeadFilter: family.dropUpstreamCopies,
                                          responseField: responseField, connectTimeout: route.connectTimeout,
                                          responseTimeout: route.responseTimeout),
                              context: head.logging(RequestLogContext(route: route.config.name)))
            return
        }
        // The enforcer binds fields of the request as received, so the request keeps them: the
        // forward's list is copied here, once, with room for what the answer adds (forwarding
        // family, verdict fields); the answer then takes it over (`EnforcedRequest.takeStripped`).
        received.reserveAdditional(fields: 16, bytes: 512)
        let evidence = family.stripAndExtract(&received)
        // Gradual enforcement (`enforce_percent`): the keyId's cohort decides whether a refusal is
        // answered (enforced) or forwarded with its verdict (monitored); a request without a usable
        // keyId follows `missing_evidence`.
        var answersRefusals = mode == .enforce
        var cohortName: String?
        if mode == .enforce, let percent = route.config.enforcePercent {
            if let raw = evidence.keyId, let keyId = Base64.decode(raw), keyId.count == KeyID.byteCount {
                answersRefusals = RouteConfiguration.cohortBucket(keyId: keyId) < percent
                cohortName = answersRefusals ? "enforced" : "monitored"
            } else {
                // No cohort: `none`, so that the header and the metric never mix the clients that sent
                // no evidence with the monitored half of real keys.
                answersRefusals = route.config.missingEvidence == .enforce
                cohortName = "none"
            }
        }
        // Signed verdicts whose generated keys were not read yet (the store was down at start): the
        // answer would be a 503 after the commit, with the challenge and counter spent. Refused here,
        // before anything is consumed; the signer is asked to read the store at once.
        if answersRefusals, route.config.onStoreError != .failOpen, let tokens = tables.verdictTokens, !tokens.canSign() {
            responder.respond(render(.storeUnavailable, tables, head.identity),
                              context: head.logging(RequestLogContext(route: route.config.name, reason: "store_unavailable")))
            return
        }
        let pending = EnforcedRequest(request: request, context: head, stripped: received, route: route,
                                      responder: responder, enforced: answersRefusals, cohort: cohortName)
        tables.enforcer.evaluate(evidence, request: pending.request, route: route, enforced: answersRefusals) { [self] decision in
            answer(pending, decision)
        }
    }

    /// Answers an enforced or monitored request once the enforcer decided it: the refusal (when
    /// enforced), or the forward with the verdict fields.
    private func answer(_ pending: EnforcedRequest, _ decision: AssertionEnforcer.Decision) {
        let route = pending.route, request = pending.request, responder = pending.responder
        let decided = pending.context.decided
        let tables = decided.tables
        let loop = request.connection.loopIndex
        var log = RequestLogContext(route: route.config.name, verdict: decision.report.verdict,
                                    reason: decision.report.reason, keyId: decision.report.keyId)
        log.tier = decision.report.tier
        let context = pending.context.logging(log)
        if !decision.report.signalDecisions.isEmpty {
            metrics.signalDecisions(decision.report.signalDecisions, route: route.config.name, loop: loop)
        }
        if let cohort = pending.cohort {
            metrics.cohort(route: route.config.name, cohort: cohort, verdict: decision.report.verdict.rawValue, loop: loop)
        }
        if pending.enforced, let refusal = decision.refusal {
            var response = render(refusal, tables, context.identity)
            if let next = decision.next { NextChallengeHeaders.set(next, on: &response.headers) }
            responder.respond(response, context: context)
            return
        }
        // The forward is made here, once the decision is in, from the request's own fields (moved,
        // not copied), with room for the forwarding family and the verdict fields.
        var headers = pending.takeStripped()
        let responseField = prepareForwardFields(&headers, request: request, tables: tables, decided: decided)
        var report = decision.report
        report.cohort = pending.cohort
        let names = tables.family.configuration.injected  // read here, on the permitted path only
        report.apply(to: &headers, names: names)
        if let tokens = tables.verdictTokens,
           tokens.attach(to: &headers, report: report, request: request, riskHeader: names.riskMetric) == .noKey,
           pending.enforced, route.config.onStoreError != .failOpen {
            // No signing key yet (generated keys not read from the store): as a store outage.
            responder.respond(render(.storeUnavailable, tables, context.identity), context: context)
            return
        }
        var failureAnswer: HTTPForward.UpstreamFailureAnswer?
        if decision.report.verdict == .valid, let keyId = decision.report.keyId {
            failureAnswer = upstreamFailureAnswer(keyId: keyId, next: decision.next, tables: tables, identity: context.identity)
        }
        // Made complete in the call: a local forward edited through `inout` cost one more whole copy.
        responder.forward(HTTPForward(upstream: route.upstream, method: request.head.method, target: request.head.target,
                                      optionsRemoved: consume headers, body: request.body,
                                      responseHeadFilter: NextChallengeHeaders.filter(decision.next, family: tables.family),
                                      responseField: responseField, upstreamFailureAnswer: failureAnswer,
                                      connectTimeout: route.connectTimeout, responseTimeout: route.responseTimeout),
                          context: context)
    }

    /// How a 502 / 504 is answered once the request's challenge was consumed (verdict `valid`): the
    /// evidence can never pass again, so `refresh_challenge` with a fresh challenge for the key (as the
    /// 401 challenge refusals carry; without one when the store cannot issue it), never `retry`. The
    /// request id is echoed as on every answer. With `next_challenge` on, the fresh challenge is the
    /// next challenge the commit already stored (no store step here), also sent as
    /// `NextChallengeHeaders`.
    private func upstreamFailureAnswer(keyId: KeyID, next: ChallengeIssuer.Issued?, tables: GatewayTables,
                                       identity: RequestIdentity?) -> HTTPForward.UpstreamFailureAnswer {
        let issuer = tables.enforcer.issuer
        let errorHeader = tables.family.configuration.error
        return { error, respond in
            let refusal = Refusal.upstreamAfterConsumption(error)
            if let next {
                var answer = refusal
                answer.freshChallenge = (next.bytes, next.expiresAt)
                var response = answer.response(errorHeader: errorHeader)
                NextChallengeHeaders.set(next, on: &response.headers)
                respond(identity?.echo(on: response) ?? response)
                return
            }
            issuer.issue(keyId: keyId, purpose: .assert) { issued in
                var answer = refusal
                if case .success(let fresh) = issued { answer.freshChallenge = (fresh.bytes, fresh.expiresAt) }
                let response = answer.response(errorHeader: errorHeader)
                respond(identity?.echo(on: response) ?? response)
            }
        }
    }

    /// Makes the received `headers` (the family already stripped; the list the forward's own, with
    /// room reserved by the caller for what the gateway adds) the fields of a forward, for
    /// `HTTPForward(upstream:method:target:optionsRemoved:...)`: the fields their `Connection`
    /// options name removed, before the gateway adds its own, so that a client cannot name those;
    /// then the forwarding family (`ForwardingHeaders`: believed from trusted proxies only), the
    /// request id and the `traceparent` check
    /// (`RequestIdentity`). Returns the request id's field for the response
    /// (`HTTPForward.responseField`), nil without an identity.
    private func prepareForwardFields(_ headers: inout HTTPHeaders, request: HTTPRequest, tables: GatewayTables,
                                      decided: GatewayRequestContext.Decided) -> (name: String, value: String)? {
        HopByHop.removeConnectionOptions(&headers)
        tables.forwarding.apply(to: &headers, connection: request.connection)
        // Read in place from the shared head decision (binding the whole identity would copy it).
        guard let requestID = decided.identity?.requestID else { return nil }
        decided.identity?.apply(to: &headers)
        return (RequestIdentity.requestIDField, requestID)
    }

    /// `{prefix}/jwks.json` answers GET and HEAD with the verdict tokens' public keys.
    private func jwksHead(_ head: HTTPRequestHead, _ destination: Destination, _ tables: GatewayTables,
                          _ identity: RequestIdentity) -> HTTPHeadDecision<GatewayRequestContext> {
        guard head.method == .get || head.method == .head, let tokens = tables.verdictTokens else {
            return refuse(.methodNotAllowed, destination, tables, identity, route: destination.logRoute(in: tables))
        }
        return .respond(identity.echo(on: tokens.jwksResponse()), context: GatewayRequestContext(
            destination: destination, tables: tables, log: destination.logRoute(in: tables).map { RequestLogContext(route: $0) },
            identity: identity))
    }

    /// The gateway's endpoints take POST, within the client's rate limit.
    private func endpointHead(_ head: HTTPRequestHead, connection: HTTPConnectionInfo, _ destination: Destination,
                              _ tables: GatewayTables, _ identity: RequestIdentity,
                              route: String) -> HTTPHeadDecision<GatewayRequestContext> {
        guard head.method == .post else { return refuse(.methodNotAllowed, destination, tables, identity, route: route) }
        if let limiter = tables.endpointLimiter,
           let retryAfter = limiter.acquire(tables.forwarding.clientAddress(headers: head.headers, connection: connection)) {
            return refuse(.rateLimited(retryAfter: retryAfter), destination, tables, identity, route: route)
        }
        return .accept(bodyLimit: GatewayHandler.endpointBodyLimit,
                       context: GatewayRequestContext(destination: destination, tables: tables, identity: identity))
    }

    /// An answer before the body is read, with its reason for the access log.
    private func refuse(_ refusal: Refusal, _ destination: Destination, _ tables: GatewayTables, _ identity: RequestIdentity,
                        route: String?) -> HTTPHeadDecision<GatewayRequestContext> {
        .respond(render(refusal, tables, identity), context: GatewayRequestContext(
            destination: destination, tables: tables,
            log: RequestLogContext(route: route ?? "none", verdict: nil, reason: refusal.code), identity: identity))
    }

    /// The refusal's answer (the error header of `tables`), with the request id when known.
    private func render(_ refusal: Refusal, _ tables: GatewayTables, _ identity: RequestIdentity?) -> HTTPResponse {
        let response = refusal.response(errorHeader: tables.family.configuration.error)
        return identity?.echo(on: response) ?? response
    }
}
