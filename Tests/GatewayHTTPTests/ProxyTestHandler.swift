import Dispatch
import Foundation
import GatewayHTTP
import Synchronization

/// A real handler for the socket tests: routes by path prefix, like the gateway will.
///
/// - `/local/...`   answered here (echoes method, target, body length and body; `?delay=ms` answers from another thread later)
/// - `/reject/...`  refused at the head (404) without reading the body
/// - `/limited/...` body limit 16 bytes, then forwarded to the TCP upstream
/// - `/unix/...`    forwarded to the Unix socket upstream
/// - `/dead/...`    forwarded to a port nobody listens on
/// - `/slow/...`    forwarded to a pool with a 300 ms response timeout
/// - `/blackhole/...` forwarded to a pool whose connects never complete (connect timeout 300 ms)
/// - `/drop/...`    the handler drops its responder without answering
/// - anything else  forwarded to the TCP upstream (body limit 8 MiB)
/// Forwarding strips every `X-Strip-*` field (any case) and sets `X-Gateway: 1`, and asks for
/// `X-Forwarded-By: proxy-test` on the relayed response (`HTTPForward.responseField`).
/// Connections reported by `connectionStarted` / `connectionEnded` are recorded (`connectionEvents`).
final class ProxyTestHandler: HTTPHandler {
    let upstream: UpstreamPool?
    let unixUpstream: UpstreamPool?
    let deadUpstream: UpstreamPool?
    let slowUpstream: UpstreamPool?
    let blackholeUpstream: UpstreamPool?
    private let records = Mutex<[HTTPAccessRecord]>([])
    private let heads = Mutex<Int>(0)
    private let handshakes = Mutex<[TLSHandshakeReport]>([])
    private let connections = Mutex<[(started: Bool, connection: HTTPConnectionInfo)]>([])

    init(upstream: UpstreamPool?, unixUpstream: UpstreamPool? = nil, deadUpstream: UpstreamPool? = nil,
         slowUpstream: UpstreamPool? = nil, blackholeUpstream: UpstreamPool? = nil) {
        self.upstream = upstream
        self.unixUpstream = unixUpstream
        self.deadUpstream = deadUpstream
        self.slowUpstream = slowUpstream
        self.blackholeUpstream = blackholeUpstream
    }

    var completed: [HTTPAccessRecord] { records.withLock { $0 } }
    var headDecisions: Int { heads.withLock { $0 } }
    /// Every TLS handshake reported so far, in order.
    var tlsHandshakes: [TLSHandshakeReport] { handshakes.withLock { $0 } }

    /// Every connection start and end reported so far, in order.
    var connectionEvents: [(started: Bool, connection: HTTPConnectionInfo)] { connections.withLock { $0 } }

    func connectionStarted(_ connection: HTTPConnectionInfo) { connections.withLock { $0.append((true, connection)) } }

    func connectionEnded(_ connection: HTTPConnectionInfo) { connections.withLock { $0.append((false, connection)) } }

    func tlsHandshakeFinished(_ report: TLSHandshakeReport) {
        handshakes.withLock { $0.append(report) }
    }

    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<Void> {
        heads.withLock { $0 += 1 }
        let path = head.pathString
        if path.hasPrefix("/reject/") {
            return .respond(HTTPResponse(status: 404, body: Array("no such route\n".utf8)))
        }
        if path.hasPrefix("/limited/") { return .accept(bodyLimit: 16) }
        return .accept(bodyLimit: 8 << 20)
    }

    func handle(_ request: HTTPRequest, context: Void, responder: HTTPResponder<Void>) {
        let path = request.head.pathString
        if path.hasPrefix("/local/") {
            var headers = HTTPHeaders()
            try? headers.add(name: "X-Method", value: request.head.method.description)
            try? headers.add(name: "X-Target", value: request.head.targetString)
            try? headers.add(name: "X-Body-Length", value: String(request.body.count))
            try? headers.add(name: "X-Trailers", value: request.trailers.map { "\($0.name)=\($0.value)" }.joined(separator: ","))
            let response = HTTPResponse(status: 200, headers: headers, body: request.body)
            if let delay = request.head.queryString?.split(separator: "=").last.flatMap({ Int($0) }) {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { responder.respond(response) }
            } else {
                responder.respond(response)
            }
            return
        }
        if path.hasPrefix("/drop/") { return }
        let pool: UpstreamPool?
        if path.hasPrefix("/unix/") {
            pool = unixUpstream
        } else if path.hasPrefix("/dead/") {
            pool = deadUpstream
        } else if path.hasPrefix("/slow/") {
            pool = slowUpstream
        } else if path.hasPrefix("/blackhole/") {
            pool = blackholeUpstream
        } else {
            pool = upstream
        }
        guard let pool else {
            responder.fail(.upstreamUnavailable)
            return
        }
        var forward = HTTPForward(request, to: pool)
        forward.headers.removeAll(namePrefix: "x-strip-")
        try? forward.headers.replaceOrAdd(name: "X-Gateway", value: "1")
        forward.responseField = ("X-Forwarded-By", "proxy-test")
        responder.forward(forward)
    }

    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "application/json")
        try? headers.add(name: "X-Error", value: error.code)
        return HTTPResponse(status: error.status, headers: headers, body: Array("{\"error\":\"\(error.code)\"}".utf8))
    }

    func requestCompleted(_ record: HTTPAccessRecord, context: Void?) {
        records.withLock { $0.append(record) }
    }
}
