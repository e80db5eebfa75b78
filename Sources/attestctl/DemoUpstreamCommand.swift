import AttestCrypto
import Dispatch
import Foundation
import GatewayHTTP
import GatewayIO
import GatewayRules

/// `attestctl demo-upstream [--listen HOST:PORT]`: a tiny "legacy backend" for the quickstart. It
/// answers every request with JSON describing what reached it - method, target, body size and
/// SHA-256, and the gateway's `App-Attest-*` headers - so one can see what the backend would see.
/// Runs until SIGTERM / SIGINT. Built on the gateway's own HTTP core (GatewayHTTP).
enum DemoUpstreamCommand {
    static func run(_ arguments: [String]) -> Int32 {
        var listen = "127.0.0.1:8081"
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--listen" where i + 1 < arguments.count:
                listen = arguments[i + 1]
                i += 2
            default:
                FileHandle.standardError.write(Data("usage: attestctl demo-upstream [--listen HOST:PORT]\n".utf8))
                return 2
            }
        }
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            FileHandle.standardError.write(Data("attestctl demo-upstream: --listen wants HOST:PORT\n".utf8))
            return 2
        }
        let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let group = EventLoopGroup(loopCount: 1)
        let server = HTTPServer(configuration: HTTPServerConfiguration(listeners: [.tcp(host: host, port: port)]),
                                group: group, handler: DemoUpstreamHandler())
        do {
            let bound = try server.start()
            FileHandle.standardOutput.write(Data("demo upstream listening on \(bound.map(\.address).joined(separator: ", "))\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("attestctl demo-upstream: cannot listen on \(listen): \(error)\n".utf8))
            return 1
        }
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let queue = DispatchQueue(label: "demo-upstream.signals")
        let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
        for source in sources {
            source.setEventHandler { server.shutdown(gracePeriod: 2) { exit(0) } }
            source.resume()
        }
        withExtendedLifetime(sources) { dispatchMain() }
    }
}

/// Echoes what arrived as JSON (see `DemoUpstreamCommand`).
final class DemoUpstreamHandler: HTTPHandler {
    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<Void> {
        .accept(bodyLimit: 16 << 20)
    }

    func handle(_ request: HTTPRequest, context: Void, responder: HTTPResponder<Void>) {
        var gateway: [String: String] = [:]
        for field in request.head.headers where field.nameHasPrefix("App-Attest-") {
            gateway[field.name] = field.value
        }
        // Keys in sorted order.
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.field("bodyBytes", request.body.count)
        json.field("bodySHA256", SHA256.hash(request.body).map { String(format: "%02x", $0) }.joined())
        json.beginObject("gatewayHeaders")
        for name in gateway.keys.sorted() { json.field(name, gateway[name] ?? "") }
        json.endObject()
        json.field("method", request.head.method.description)
        json.field("target", request.head.targetString)
        json.field("upstream", "attestctl demo-upstream")
        json.endObject()
        let body = json.bytes
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "application/json")
        responder.respond(HTTPResponse(status: 200, headers: headers, body: body))
    }
}
