import GatewayHTTP
import GatewayRedis
import GatewayRules
import GatewayStore
import Synchronization

/// The admin listener (issue 3 "Operations", issue 9 "Readiness that matches the routes"):
/// - `GET /healthz`: the process serves requests: 200 `{"status":"ok"}`, or 503 while draining.
/// - `GET /readyz`: by default 200 `{"ready":true,"status":"ready","store":WORD}` while listening and
///   not draining, whatever the store's state: routes in mode `off` or `monitor` and `fail_open` routes
///   still serve during a store outage, so the replica stays in its Service. `WORD` is
///   `StoreHealth.Summary` (`ok`, `connecting`, `unavailable`). With `admin.ready_requires_store:
///   true`: 200 only when every event loop's store connection answers a PING (`pingEveryConnection`),
///   else 503 `{"ready":false,"status":"not_ready","store":"unavailable"}`. Draining: 503
///   `{"ready":false,"status":"draining",...}`. Never any store error text (unauthenticated callers):
///   the details are in the `store_unavailable` log line.
/// - `GET /metrics`: Prometheus text.
/// - `GET /jwks.json`: the verdict tokens' public keys (`VerdictTokenIssuer.jwks`), when
///   `verdict_token` is configured; 404 otherwise.
///
/// No per-request context (`Void`): nothing is logged per admin request.
final class AdminHandler: HTTPHandler {
    typealias RequestContext = Void

    let store: any AttestStore
    let metrics: GatewayMetrics
    let keys: KeyCache
    /// The access log, for its dropped-lines counter (nil when access logging is off).
    let accessLog: AccessLog?
    /// Each loop's store connection health (readiness body, metrics).
    let storeHealth: StoreHealth
    /// `admin.ready_requires_store`.
    let readyRequiresStore: Bool
    /// Configuration reload counters (nil: not exposed).
    let reloads: ConfigReloadStatistics?
    /// The receipt refresher (its outcome counters; nil: none).
    let receiptRefresher: ReceiptRefresher?
    private let draining = Atomic<Bool>(false)
    /// `GET /jwks.json`: the verdict tokens' public keys of the tables in force (nil answer: 404).
    let jwks: (@Sendable () -> HTTPResponse?)?

    init(store: any AttestStore, metrics: GatewayMetrics, keys: KeyCache, accessLog: AccessLog? = nil,
         storeHealth: StoreHealth, readyRequiresStore: Bool = false, reloads: ConfigReloadStatistics? = nil,
         jwks: (@Sendable () -> HTTPResponse?)? = nil, receiptRefresher: ReceiptRefresher? = nil) {
        self.jwks = jwks
        self.receiptRefresher = receiptRefresher
        self.storeHealth = storeHealth
        self.readyRequiresStore = readyRequiresStore
        self.accessLog = accessLog
        self.reloads = reloads
        self.store = store
        self.metrics = metrics
        self.keys = keys
    }

    /// Marks the gateway as draining (SIGTERM): health and readiness answer 503 from now on.
    func beginDraining() { draining.store(true, ordering: .releasing) }

    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<Void> {
        guard head.method == .get || head.method == .head else {
            return .respond(AdminHandler.json(405, [("error", "method_not_allowed")]))
        }
        return .accept(bodyLimit: 0)
    }

    func handle(_ request: HTTPRequest, context: Void, responder: HTTPResponder<Void>) {
        let isDraining = draining.load(ordering: .acquiring)
        switch request.head.pathString {
        case "/healthz":
            responder.respond(isDraining ? AdminHandler.json(503, [("status", "draining")])
                                         : AdminHandler.json(200, [("status", "ok")]))
        case "/readyz":
            let summary = storeHealth.summary
            if isDraining {
                responder.respond(AdminHandler.readiness(503, ready: false, status: "draining", store: summary.rawValue))
                return
            }
            guard readyRequiresStore else {
                responder.respond(AdminHandler.readiness(200, ready: true, status: "ready", store: summary.rawValue))
                return
            }
            if storeHealth.tracked && summary != .ok {
                responder.respond(AdminHandler.readiness(503, ready: false, status: "not_ready", store: summary.rawValue))
                return
            }
            let answer: @Sendable (Result<Void, StoreUnavailable>) -> Void = { result in
                switch result {
                case .success:
                    responder.respond(AdminHandler.readiness(200, ready: true, status: "ready", store: "ok"))
                case .failure:
                    responder.respond(AdminHandler.readiness(503, ready: false, status: "not_ready", store: "unavailable"))
                }
            }
            if let redis = store as? RedisStore {
                redis.pingEveryConnection(completion: answer)
            } else {
                store.ping(completion: answer)
            }
        case "/metrics":
            var headers = HTTPHeaders()
            try? headers.add(name: "Content-Type", value: "text/plain; version=0.0.4")
            var text = metrics.prometheusText(extra: [
                ("attest_gateway_key_cache_entries", "Parsed public keys held in memory.", keys.count),
            ])
            text += storeHealth.prometheusText()
            if let accessLog {
                text += "# HELP attest_gateway_access_log_dropped_lines_total Access log lines dropped because the output could not keep up.\n"
                text += "# TYPE attest_gateway_access_log_dropped_lines_total counter\n"
                text += "attest_gateway_access_log_dropped_lines_total \(accessLog.droppedLines)\n"
            }
            if let reloads { text += reloads.prometheusText() }
            if let receiptRefresher { text += receiptRefresher.prometheusText() }
            responder.respond(HTTPResponse(status: 200, headers: headers, body: Array(text.utf8)))
        case "/jwks.json" where jwks?() != nil:
            responder.respond(jwks?() ?? AdminHandler.json(404, [("error", "not_found")]))
        default:
            responder.respond(AdminHandler.json(404, [("error", "not_found")]))
        }
    }

    /// The `/readyz` body: `{"ready":BOOL,"status":STATUS,"store":WORD}`.
    private static func readiness(_ code: Int, ready: Bool, status: String, store: String) -> HTTPResponse {
        var json = JSONWriter(capacity: 64)
        json.beginObject()
        json.field("ready", ready)
        json.field("status", status)
        json.field("store", store)
        json.endObject()
        return response(code, json.bytes)
    }

    /// A JSON object of string members, in order.
    private static func json(_ status: Int, _ members: [(String, String)]) -> HTTPResponse {
        var json = JSONWriter(capacity: 64)
        json.beginObject()
        for (name, value) in members { json.field(name, value) }
        json.endObject()
        return response(status, json.bytes)
    }

    private static func response(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
