import GatewayHTTP
import GatewayRules
import GatewayStore
import Synchronization

/// The admin listener (issue 3 "Operations"): `GET /healthz` (the process serves requests: 200, or
/// 503 while draining), `GET /readyz` (the store answers a ping: 200, else 503 with the reason; 503
/// while draining so load balancers stop sending) and `GET /metrics` (Prometheus text).
///
/// No per-request context (`Void`): nothing is logged per admin request.
final class AdminHandler: HTTPHandler {
    typealias RequestContext = Void

    let store: any AttestStore
    let metrics: GatewayMetrics
    let keys: KeyCache
    /// The access log, for its dropped-lines counter (nil when access logging is off).
    let accessLog: AccessLog?
    /// Configuration reload counters (nil: not exposed).
    let reloads: ConfigReloadStatistics?
    private let draining = Atomic<Bool>(false)

    init(store: any AttestStore, metrics: GatewayMetrics, keys: KeyCache, accessLog: AccessLog? = nil,
         reloads: ConfigReloadStatistics? = nil) {
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
            if isDraining {
                responder.respond(AdminHandler.json(503, [("status", "draining")]))
                return
            }
            store.ping { result in
                switch result {
                case .success:
                    responder.respond(AdminHandler.json(200, [("status", "ready"), ("store", "ok")]))
                case .failure(let error):
                    responder.respond(AdminHandler.json(503, [("status", "not_ready"), ("store", "unavailable"),
                                                              ("detail", error.description)]))
                }
            }
        case "/metrics":
            var headers = HTTPHeaders()
            try? headers.add(name: "Content-Type", value: "text/plain; version=0.0.4")
            var text = metrics.prometheusText(extra: [
                ("attest_gateway_key_cache_entries", "Parsed public keys held in memory.", keys.count),
            ])
            if let accessLog {
                text += "# HELP attest_gateway_access_log_dropped_lines_total Access log lines dropped because the output could not keep up.\n"
                text += "# TYPE attest_gateway_access_log_dropped_lines_total counter\n"
                text += "attest_gateway_access_log_dropped_lines_total \(accessLog.droppedLines)\n"
            }
            if let reloads { text += reloads.prometheusText() }
            responder.respond(HTTPResponse(status: 200, headers: headers, body: Array(text.utf8)))
        default:
            responder.respond(AdminHandler.json(404, [("error", "not_found")]))
        }
    }

    /// A JSON object of string members, in order.
    private static func json(_ status: Int, _ members: [(String, String)]) -> HTTPResponse {
        var json = JSONWriter(capacity: 64)
        json.beginObject()
        for (name, value) in members { json.field(name, value) }
        json.endObject()
        let body = json.bytes
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
