import Dispatch
@testable import Gateway
import GatewayConfig
@testable import GatewayHTTP
import Synchronization
import XCTest

/// The gateway matches a request's route once, at the head, and carries the match in its typed
/// context (`GatewayRequestContext`) to `handle` and to the access log: driven here the way a
/// connection drives it (head decision, handle with the head's context and a responder, report).
final class RouteMatchedOnceTests: XCTestCase {
    /// Counts `GatewayHandler.classify` calls.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        var count: Int { value.load(ordering: .relaxed) }
    }

    /// The connection's side of `HTTPResponder`: what it delivers.
    final class Sink: HTTPResponseSink, Sendable {
        private let answers = Mutex<[(HTTPAnswer, GatewayRequestContext?)]>([])
        private let delivered = DispatchSemaphore(value: 0)

        func deliver(_ answer: HTTPAnswer, context: HTTPContextBox?, sequence: UInt64) {
            // The handler's typed responder boxes the context as its own type (`HTTPTypedContextBox`).
            let typed = context.map { HTTPTypedContextBox<GatewayRequestContext>.unbox($0) }
            answers.withLock { $0.append((answer, typed)) }
            delivered.signal()
        }

        /// The first answer, once delivered (at most 5 s).
        func answer() -> (HTTPAnswer, GatewayRequestContext?)? {
            guard delivered.wait(timeout: .now() + 5) == .success else { return nil }
            return answers.withLock { $0.first }
        }
    }

    private let info = HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:9", localAddress: "127.0.0.1:8")
    private var runtime: GatewayRuntime!
    private var handler: GatewayHandler!
    private let counter = Counter()

    override func setUpWithError() throws {
        let yaml = """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            environment: development
        upstreams:
          app: http://127.0.0.1:9
        routes:
          - name: open
            path_prefix: /open
            upstream: app
            mode: off
          - name: protected
            path_prefix: /protected
            upstream: app
            mode: enforce
        log:
          access: false
        """
        runtime = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"), loopCount: 1)
        let h = try XCTUnwrap(runtime.handler)
        let counter = self.counter
        handler = GatewayHandler(tables: h.tables, accessLog: nil, metrics: h.metrics,
                                 classifyObserver: { _ in counter.value.add(1, ordering: .relaxed) })
    }

    override func tearDown() {
        handler = nil
        runtime = nil
    }

    /// One request as a connection serves it: the head decision, then (when accepted) `handle` with
    /// the head's context, then the report with the last context. Returns the decision, the answer
    /// and the context reported.
    private func serve(_ target: String, handleTarget: String? = nil) throws
        -> (decision: HTTPHeadDecision<GatewayRequestContext>, answer: HTTPAnswer?, reported: GatewayRequestContext?) {
        var headers = HTTPHeaders()
        try headers.add(name: "Host", value: "gateway.test")
        let head = try HTTPRequestHead(method: .get, target: target, headers: headers)
        let decision = handler.headDecision(for: head, connection: info)
        guard case .accept(_, let context) = decision else {
            handler.requestCompleted(record(head, status: 404), context: decision.context)
            return (decision, nil, decision.context)
        }
        let handled = try handleTarget.map { try HTTPRequestHead(method: .get, target: $0, headers: headers) } ?? head
        let sink = Sink()
        handler.handle(HTTPRequest(head: handled, connection: info), context: context,
                       responder: HTTPResponder(HTTPAnswerChannel(sink: sink, sequence: 1)))
        let (answer, replaced) = try XCTUnwrap(sink.answer(), "answered")
        let reported = replaced ?? context
        handler.requestCompleted(record(head, status: 200), context: reported)
        return (decision, answer, reported)
    }

    private func record(_ head: HTTPRequestHead, status: Int) -> HTTPAccessRecord {
        HTTPAccessRecord(connection: info, method: head.method, target: head.target, status: status, error: nil,
                         requestBodyBytes: 0, responseBodyBytes: 0, latencyNanoseconds: 1_000, upstream: nil, aborted: false)
    }

    func testAForwardedRequestIsMatchedOnce() throws {
        let served = try serve("/open/a")
        XCTAssertEqual(counter.count, 1, "classified at the head only")
        guard case .accept(_, let context) = served.decision else { return XCTFail("accepted") }
        XCTAssertEqual(context.destination, .route(0))
        guard case .forward(let forward)? = served.answer else { return XCTFail("forwarded: \(String(describing: served.answer))") }
        XCTAssertEqual(forward.upstream.configuration.name, "app")
        XCTAssertEqual(served.reported?.log?.route, "open")
        XCTAssertEqual(handler.metrics.requests(route: "open", status: 200), 1, "the typed context reached the metrics")
    }

    func testARequestRefusedByItsRouteIsMatchedOnce() throws {
        let served = try serve("/protected/a")
        XCTAssertEqual(counter.count, 1, "classified at the head only")
        guard case .response(let response)? = served.answer else { return XCTFail("refused: \(String(describing: served.answer))") }
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(served.reported?.destination, .route(1))
        XCTAssertEqual(served.reported?.log?.route, "protected")
        XCTAssertEqual(served.reported?.log?.verdict, .missing)
        XCTAssertNotNil(served.reported?.log?.reason)
    }

    func testARequestRefusedAtTheHeadIsMatchedOnce() throws {
        let served = try serve("/nowhere")
        XCTAssertEqual(counter.count, 1)
        guard case .respond(let response, let context) = served.decision else { return XCTFail("refused at the head") }
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(context.destination, .noRoute)
        XCTAssertEqual(context.log?.route, "none")
        XCTAssertEqual(context.log?.reason, "no_route")
        XCTAssertEqual(handler.metrics.requests(route: "none", status: 404), 1)
    }

    func testHandleActsOnTheHeadsMatchWithoutMatchingAgain() throws {
        // A request whose head matched route `open`, handed to `handle` with another path: the
        // destination in the context decides, nothing is matched again.
        let served = try serve("/open/a", handleTarget: "/nowhere")
        XCTAssertEqual(counter.count, 1)
        guard case .forward? = served.answer else { return XCTFail("forwarded on the head's route") }
        XCTAssertEqual(served.reported?.log?.route, "open")
    }
}
