import Foundation
import Synchronization
@testable import Gateway
import GatewayConfig
import GatewayTestSupport
import XCTest

/// Several endpoints per upstream (issue 9): real upstream processes (upstream.py), a real gateway
/// in process, curl as the client. Balancing spreads requests, a dead endpoint is ejected and every
/// request still succeeds, all endpoints dead is a 502.
final class UpstreamBalancingTests: XCTestCase {
    private var upstreams: [UpstreamProcess] = []
    /// The dead endpoints' ports, held unanswered until tearDown.
    private var reserved: [ReservedPort] = []
    private var gateway: GatewayUnderTest?
    private var work: URL?
    /// Runtimes a test built itself (`started`), stopped at tearDown.
    private var runtimes: [GatewayRuntime] = []

    override func tearDown() {
        gateway?.stop()
        for runtime in runtimes {
            let done = DispatchSemaphore(value: 0)
            runtime.shutdown { done.signal() }
            _ = done.wait(timeout: .now() + 10)
        }
        runtimes = []
        for u in upstreams { u.stop() }
        reserved = []
        if let work { try? FileManager.default.removeItem(at: work) }
        super.tearDown()
    }

    /// Starts `live` upstream processes and a gateway whose upstream `app` lists them (and
    /// `dead` ports nobody listens on, first) under `upstreamExtra` settings.
    private func start(live: Int, dead: Int = 0, upstreamExtra: String = "") throws -> GatewayUnderTest {
        upstreams = try (0..<live).map { _ in try UpstreamProcess() }
        reserved = try (0..<dead).map { _ in try ReservedPort() }  // held: nothing answers there
        let urls = reserved.map { "http://127.0.0.1:\($0.port)" } + upstreams.map { "http://127.0.0.1:\($0.port)" }
        let yaml = """
        listen: 127.0.0.1:0
        admin: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            environment: development
        upstreams:
          app:
            endpoints: [\(urls.joined(separator: ", "))]
        \(upstreamExtra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
        let dir = try E2EPaths.temporaryDirectory("balance")
        work = dir
        let made = try GatewayUnderTest(yaml: yaml, baseDirectory: dir.path, clock: .system)
        gateway = made
        return made
    }

    /// Starts `runtime` (stopped at tearDown) and returns its first data port.
    private func started(_ runtime: GatewayRuntime) throws -> UInt16 {
        runtimes.append(runtime)
        return try XCTUnwrap(try runtime.start().data.first?.port)
    }

    /// An upstream `ghost` whose name never resolves (`.invalid`, RFC 6761) on `/ghost`, and `app` at
    /// `app` on everything else (route `routeName`).
    private static func ghostYAML(app: String, routeName: String = "main") -> String {
        """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          ghost: {endpoints: [http://ghost.gateway-test.invalid:8080]}
          app: \(app)
        routes:
          - path_prefix: /ghost
            upstream: ghost
            mode: off
          - name: \(routeName)
            path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
    }

    private func get(_ gateway: GatewayUnderTest, _ target: String = "/x") throws -> HTTPReply {
        try Curl.request(port: gateway.port, method: "GET", target: target)
    }

    func testRoundRobinSpreadsRequestsOverEveryEndpoint() throws {
        let gw = try start(live: 3, upstreamExtra: "balance: round_robin")
        for i in 0..<30 { XCTAssertEqual(try get(gw, "/r/\(i)").status, 200) }
        let counts = try upstreams.map { try $0.requestCount() }
        XCTAssertEqual(counts.reduce(0, +), 30, "\(counts)")
        for (i, c) in counts.enumerated() { XCTAssertGreaterThanOrEqual(c, 5, "endpoint \(i) took its share: \(counts)") }
    }

    func testLeastRequestSpreadsRequestsOverEveryEndpoint() throws {
        let gw = try start(live: 3, upstreamExtra: "balance: least_request")
        for i in 0..<30 { XCTAssertEqual(try get(gw, "/l/\(i)").status, 200) }
        let counts = try upstreams.map { try $0.requestCount() }
        XCTAssertEqual(counts.reduce(0, +), 30, "\(counts)")
        for (i, c) in counts.enumerated() { XCTAssertGreaterThanOrEqual(c, 5, "endpoint \(i) took its share: \(counts)") }
    }

    /// Least request prefers the endpoint with fewer exchanges in progress: while a slow request
    /// holds one endpoint, every quick one goes to the other (round robin would send half of them
    /// there).
    func testLeastRequestAvoidsTheBusyEndpoint() throws {
        let gw = try start(live: 2, upstreamExtra: "balance: least_request")
        let slow = DispatchGroup()
        DispatchQueue.global().async(group: slow) { _ = try? Curl.request(port: gw.port, method: "GET", target: "/slow?delay=3000") }
        XCTAssertTrue(eventually(timeout: 10) { (gw.runtime.upstreamEndpoints("app") ?? []).map(\.active).reduce(0, +) == 1 },
                      "the slow request is in flight: \(gw.runtime.upstreamEndpoints("app") ?? [])")
        let busy = try XCTUnwrap(gw.runtime.upstreamEndpoints("app")?.firstIndex { $0.active == 1 })
        for i in 0..<6 { XCTAssertEqual(try get(gw, "/q/\(i)").status, 200) }
        XCTAssertEqual(try upstreams[busy].requestCount(), 1, "only the slow request reached the busy endpoint")
        XCTAssertEqual(try upstreams[1 - busy].requestCount(), 6)
        XCTAssertEqual(slow.wait(timeout: .now() + 20), .success)
        XCTAssertEqual((gw.runtime.upstreamEndpoints("app") ?? []).map(\.active), [0, 0])
    }

    /// A dead endpoint first in the list: every request succeeds (its connect fails and the request
    /// goes to another endpoint), it is ejected after `consecutive_errors`, then takes no request.
    func testDeadEndpointIsEjectedAndEveryRequestSucceeds() throws {
        let gw = try start(live: 2, dead: 1, upstreamExtra: "ejection: {consecutive_errors: 2, base_time: 1m}")
        for i in 0..<20 { XCTAssertEqual(try get(gw, "/d/\(i)").status, 200, "request \(i)") }
        let status = try XCTUnwrap(gw.runtime.upstreamEndpoints("app"))
        XCTAssertEqual(status.map(\.ejected), [true, false, false], "\(status)")
        XCTAssertEqual(status.map(\.available), [false, true, true], "\(status)")
        let counts = try upstreams.map { try $0.requestCount() }
        XCTAssertEqual(counts.reduce(0, +), 20, "\(counts)")
        let before = gw.runtime.upstreamStatistics("app")
        XCTAssertEqual(before?.ejections, 1, "ejected once, for a minute")
        for i in 0..<10 { XCTAssertEqual(try get(gw, "/e/\(i)").status, 200) }
        XCTAssertEqual(gw.runtime.upstreamStatistics("app")?.connectRetries, before?.connectRetries,
                       "an ejected endpoint is not tried")
    }

    /// Without ejection (consecutive_errors 0) the dead endpoint keeps its turn, and every request
    /// still succeeds on another endpoint.
    func testWithoutEjectionADeadEndpointIsRetriedElsewhere() throws {
        let gw = try start(live: 1, dead: 1, upstreamExtra: "ejection: {consecutive_errors: 0}")
        for i in 0..<6 { XCTAssertEqual(try get(gw, "/n/\(i)").status, 200) }
        XCTAssertEqual(gw.runtime.upstreamEndpoints("app")?.map(\.ejected), [false, false])
        XCTAssertGreaterThanOrEqual(gw.runtime.upstreamStatistics("app")?.connectRetries ?? 0, 2)
    }

    func testEveryEndpointDeadIsBadGateway() throws {
        let gw = try start(live: 0, dead: 2)
        let reply = try get(gw)
        XCTAssertEqual(reply.status, 502, "\(reply)")
        XCTAssertEqual(reply.errorCode, "upstream_unavailable")
    }

    /// A name that does not resolve (`.invalid` never does, RFC 6761) does not stop the start: the
    /// gateway reports it, answers 503 upstream_unresolved for that upstream, and other upstreams
    /// work. (UpstreamDNSTests follow a name appearing and moving, in a namespace of their own.)
    func testUnresolvableNameAtStartAnswers503AndTheGatewayRuns() throws {
        let up = try UpstreamProcess()
        upstreams = [up]
        let recorder = EventRecorder()
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: Self.ghostYAML(app: "http://127.0.0.1:\(up.port)"),
                                                                            baseDirectory: "/tmp"), loopCount: 2,
                                         events: { name, _ in recorder.record(name) })
        let port = try started(runtime)
        XCTAssertTrue(recorder.all.contains("upstream_unresolved"), "\(recorder.all)")
        let ghost = try Curl.request(port: port, method: "GET", target: "/ghost/x")
        XCTAssertEqual(ghost.status, 503, "\(ghost)")
        XCTAssertEqual(ghost.errorCode, "upstream_unresolved")
        XCTAssertEqual(ghost.header("Retry-After"), "1")
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x").status, 200, "the other upstream works")
        XCTAssertEqual(runtime.upstreamEndpoints("ghost")?.map(\.addresses), [[]])
    }

    /// A reload that brings in an upstream name that does not resolve now fails and changes nothing
    /// (README "Signals, reload and handover"): a typo never replaces a working upstream (before, the
    /// reload applied and every request answered 503 upstream_unresolved). A name the running
    /// configuration already had, unresolved since the start, does not block other reloads.
    func testReloadBringingInANameThatDoesNotResolveChangesNothing() throws {
        let up = try UpstreamProcess()
        upstreams = [up]
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reload-dns-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("gateway.yaml")
        func write(app: String, routeName: String) throws {
            try Self.ghostYAML(app: app, routeName: routeName).write(to: file, atomically: true, encoding: .utf8)
        }
        let working = "http://127.0.0.1:\(up.port)"
        try write(app: working, routeName: "main")
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.load(path: file.path), loopCount: 1, events: { _, _ in })
        let port = try started(runtime)
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x").status, 200)

        try write(app: "http://typo.gateway-test.invalid:8081", routeName: "main")
        let failed = runtime.reload()
        XCTAssertFalse(failed.succeeded, "\(failed)")
        XCTAssertEqual(failed.errors.map(\.path), ["upstreams.app"], "\(failed.errors)")
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x").status, 200, "the working upstream stays")

        try write(app: working, routeName: "renamed")
        let applied = runtime.reload()
        XCTAssertTrue(applied.succeeded, "the start's unresolved ghost does not block a reload: \(applied.errors)")
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x").status, 200)
    }

    /// A malformed upstream response is a 502 `upstream_bad_response` for the client, and the
    /// operator gets the parser's reason in an `upstream_bad_response` line (rate-limited by
    /// `RateLimitedEvents`, tested on its own with a manual clock).
    func testMalformedUpstreamResponseIsLoggedWithItsReason() throws {
        let up = try UpstreamProcess()
        upstreams = [up]
        let yaml = """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app: http://127.0.0.1:\(up.port)
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
        let lines = Mutex<[(String, [(String, String)])]>([])
        let port = try started(try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"), loopCount: 1,
                                                  events: { name, fields in lines.withLock { $0.append((name, fields)) } }))
        for _ in 0..<3 {
            let reply = try Curl.request(port: port, method: "GET", target: "/x?malformed=1")  // bare LF line endings
            XCTAssertEqual(reply.status, 502, "\(reply)")
            XCTAssertEqual(reply.errorCode, "upstream_bad_response")
        }
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x").status, 200)
        let bad = lines.withLock { $0.filter { $0.0 == "upstream_bad_response" } }
        XCTAssertTrue((1...3).contains(bad.count), "\(bad)")
        let fields = Dictionary(bad.first?.1 ?? [], uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(fields["upstream"], "app")
        XCTAssertEqual(fields["detail"], "bare_line_ending")
    }

    /// A listener whose accept queue is full: connects to it neither complete nor fail (the SYN is
    /// dropped), so only a connect timeout ends them.
    final class BlackholeListener {
        let port: UInt16
        private var fds: [Int32] = []

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            fds.append(fd)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 0) == 0 && getsockname(fd, $0, &len) == 0 }
            }
            guard bound else { throw ChildProcessError.notReady("blackhole listener: errno \(errno)") }
            port = UInt16(bigEndian: addr.sin_port)
            fds.append(try LoopbackSocket.connect(port: port))  // fills the accept queue (backlog 0)
        }

        deinit { for fd in fds { close(fd) } }
    }

    /// A route's connect_timeout applies (the upstream's is a minute): 504 upstream_connect_timeout.
    func testRouteConnectTimeoutApplies() throws {
        let hole = try BlackholeListener()
        let yaml = """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          hole: {url: http://127.0.0.1:\(hole.port), connect_timeout: 1m}
        routes:
          - path_prefix: /
            upstream: hole
            mode: off
            connect_timeout: 200ms
        log:
          access: false
        """
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"), loopCount: 1)
        defer { let done = DispatchSemaphore(value: 0); runtime.shutdown { done.signal() }; _ = done.wait(timeout: .now() + 10) }
        let port = try XCTUnwrap(try runtime.start().data.first?.port)
        let reply = try Curl.request(port: port, method: "GET", target: "/x")
        XCTAssertEqual(reply.status, 504, "\(reply)")
        XCTAssertEqual(reply.errorCode, "upstream_connect_timeout")
    }

    /// An endpoint whose connects time out: each request is retried on the live endpoint and
    /// succeeds; the silent endpoint is ejected after its errors.
    func testConnectTimeoutsCountAsErrorsAndRequestsSucceedElsewhere() throws {
        let hole = try BlackholeListener()
        upstreams = [try UpstreamProcess()]
        let yaml = """
        listen: 127.0.0.1:0
        admin: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app:
            endpoints: [http://127.0.0.1:\(hole.port), http://127.0.0.1:\(upstreams[0].port)]
            connect_timeout: 200ms
            ejection: {consecutive_errors: 2, base_time: 1m}
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
        let dir = try E2EPaths.temporaryDirectory("balance")
        work = dir
        let gw = try GatewayUnderTest(yaml: yaml, baseDirectory: dir.path, clock: .system)
        gateway = gw
        for i in 0..<6 { XCTAssertEqual(try get(gw, "/t/\(i)").status, 200, "request \(i)") }
        XCTAssertEqual(gw.runtime.upstreamEndpoints("app")?.map(\.ejected), [true, false])
        XCTAssertEqual(try upstreams[0].requestCount(), 6)
    }
}
