import Foundation
import GatewayTestSupport
import XCTest

/// Draining still takes the replica out of service: after SIGTERM, while a request is in flight,
/// `/readyz` answers 503 `{"ready":false,"status":"draining",...}` and `/healthz` 503 (the built
/// binary, default readiness).
final class ReadinessDrainTests: XCTestCase {
    func testReadinessIs503WhileDraining() throws {
        let gateway = try GatewayBinaryTests.RunningGateway(access: false)
        let admin = "http://127.0.0.1:\(gateway.adminPort)"
        let ready = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(ready.status, 200, ready.text)
        XCTAssertEqual(StoreOutageTests.readiness(ready.text)?.store, "ok", "the memory store is always ok: \(ready.text)")
        let before = try gateway.upstream.requestCount()
        let client = try ChildProcess("curl", ["-s", "--max-time", "20", "-o", "/dev/null",
                                               "http://127.0.0.1:\(gateway.port)/v1/open/slow?delay=3000"])
        defer { client.stop() }
        XCTAssertTrue(eventually { (try? gateway.upstream.requestCount()) ?? before > before }, "the slow request is in flight")
        kill(gateway.process.pid, SIGTERM)
        var draining: (status: Int, text: String)?
        XCTAssertTrue(eventually {
            draining = try? Curl.get("\(admin)/readyz")
            return draining?.status == 503
        }, "readiness turns 503 while draining")
        let body = StoreOutageTests.readiness(draining?.text ?? "")
        XCTAssertEqual(body?.ready, false, draining?.text ?? "")
        XCTAssertEqual(body?.status, "draining")
        XCTAssertEqual(try Curl.get("\(admin)/healthz").status, 503)
        XCTAssertEqual(gateway.process.wait(), 0)
    }
}
