import AppAttest
import Foundation
@testable import Gateway
import GatewayConfig
import GatewayTestSupport
import XCTest

/// `endpoints.rate_limit`: the token bucket itself (moved clock) and a real gateway answering 429
/// over a socket to curl.
final class RateLimitTests: XCTestCase {
    final class Clock: @unchecked Sendable {  // written by the test between calls only
        var now: Int64 = 1_000_000
    }

    func testBucketAllowsBurstThenRefillsAtTheRate() {
        let time = Clock()
        let limiter = ClientRateLimiter(requestsPerSecond: 2, burst: 3, clock: GatewayClock { time.now })
        XCTAssertNil(limiter.acquire("a"))
        XCTAssertNil(limiter.acquire("a"))
        XCTAssertNil(limiter.acquire("a"))
        XCTAssertEqual(limiter.acquire("a"), 1, "burst spent: retry after about half a second, rounded up")
        XCTAssertNil(limiter.acquire("b"), "clients are limited separately")
        time.now += 500
        XCTAssertNil(limiter.acquire("a"), "one token back after 1/rate seconds")
        XCTAssertNotNil(limiter.acquire("a"))
        time.now += 60_000
        for _ in 0..<3 { XCTAssertNil(limiter.acquire("a")) }
        XCTAssertNotNil(limiter.acquire("a"), "never more than the burst")
    }

    func testTableIsBounded() {
        let time = Clock()
        let limiter = ClientRateLimiter(requestsPerSecond: 10, burst: 1, clock: GatewayClock { time.now }, maximumClients: 100)
        for i in 0..<100 { XCTAssertNil(limiter.acquire("client-\(i)")) }
        time.now += 1_000
        XCTAssertNil(limiter.acquire("newcomer"))
        // The idle, refilled buckets were swept: an old client starts from a full bucket, as a new one would.
        XCTAssertNil(limiter.acquire("client-1"))
    }

    /// More distinct clients than the table holds, none idle long enough to be full again: the least
    /// recently seen are dropped down to half the bound, so the table stays bounded and a sweep runs
    /// once per half-table of new clients, not on every request (before: nothing was dropped, and every
    /// later request swept the whole table under the lock). Recent clients keep their spent buckets.
    func testAFloodOfClientsDropsTheLeastRecentlySeen() {
        let time = Clock()
        let limiter = ClientRateLimiter(requestsPerSecond: 1, burst: 1000, clock: GatewayClock { time.now }, maximumClients: 100)
        for i in 0..<100 {
            time.now += 1
            XCTAssertNil(limiter.acquire("client-\(i)"))
        }
        XCTAssertEqual(limiter.clientCount, 100)
        time.now += 1
        XCTAssertNil(limiter.acquire("client-100"))
        XCTAssertEqual(limiter.clientCount, 51, "half the bound kept, plus the newcomer")
        for i in 101..<140 {
            time.now += 1
            XCTAssertNil(limiter.acquire("client-\(i)"))
        }
        XCTAssertEqual(limiter.clientCount, 90, "no sweep until the bound is reached again")
        // A recent client that spent its burst is still limited; an evicted one starts full again.
        let recent = ClientRateLimiter(requestsPerSecond: 1, burst: 1, clock: GatewayClock { time.now }, maximumClients: 4)
        for name in ["old", "b", "c"] {
            time.now += 1
            XCTAssertNil(recent.acquire(name))
        }
        time.now += 1
        XCTAssertNil(recent.acquire("d"))  // the table reaches the bound: "old" and "b" are dropped
        XCTAssertNotNil(recent.acquire("d"), "the newcomer's bucket is spent and kept")
        XCTAssertNil(recent.acquire("old"), "the least recently seen client was dropped: a full bucket again")
    }

    func testGatewayAnswers429OverTheLimit() throws {
        try ChildProcess.require("curl")
        let yaml = """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            environment: development
        endpoints:
          rate_limit: {requests_per_second: 1, burst: 2}
        upstreams:
          app: http://127.0.0.1:9
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
        let frozen = Clock()
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"),
                                         clock: GatewayClock { frozen.now }, loopCount: 1)
        let listeners = try runtime.start()
        defer {
            let done = DispatchSemaphore(value: 0)
            runtime.shutdown { done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the runtime shut down within 10 s")
        }
        let port = try XCTUnwrap(listeners.data.first?.port)
        let body = "{\"keyId\":\"\(Base64.encode([UInt8](repeating: 9, count: 32)))\",\"purpose\":\"attest\"}"
        func post() throws -> String {
            try ChildProcess.run("curl", ["-s", "-i", "-X", "POST", "--data-binary", body,
                                          "http://127.0.0.1:\(port)/app-attest/v1/challenge"]).output
        }
        XCTAssertTrue(try post().hasPrefix("HTTP/1.1 201"))
        XCTAssertTrue(try post().hasPrefix("HTTP/1.1 201"))
        let refused = try post()
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 429"), refused)
        XCTAssertTrue(refused.contains("Retry-After: 1"), refused)
        XCTAssertTrue(refused.contains("App-Attest-Error: rate_limited"), refused)
        XCTAssertTrue(refused.contains("\"action\":\"retry\""), refused)
    }

    /// Behind a trusted balancer every client has its own bucket (keyed on the derived client
    /// address, the rightmost untrusted X-Forwarded-For hop); a client not behind a trusted proxy
    /// cannot pick a fresh bucket by sending X-Forwarded-For.
    func testBucketsAreKeyedOnTheDerivedClientAddress() throws {
        _ = try ChildProcess.require("curl")  // installed by scripts/setup --tests: missing is a failure
        func gateway(trusted: String) throws -> (GatewayRuntime, UInt16) {
            let yaml = """
            listen: 127.0.0.1:0
            trusted_proxies: [\(trusted)]
            store: memory
            apps:
              - app_id: ABCDE12345.com.example.app
                environment: development
            endpoints:
              rate_limit: {requests_per_second: 1, burst: 1}
            upstreams:
              app: http://127.0.0.1:9
            routes:
              - path_prefix: /
                upstream: app
                mode: off
            log:
              access: false
            """
            let frozen = Clock()
            let runtime = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"),
                                             clock: GatewayClock { frozen.now }, loopCount: 1)
            return (runtime, try XCTUnwrap(try runtime.start().data.first?.port))
        }
        let body = "{\"keyId\":\"\(Base64.encode([UInt8](repeating: 9, count: 32)))\",\"purpose\":\"attest\"}"
        func post(_ port: UInt16, _ xff: String) throws -> String {
            try ChildProcess.run("curl", ["-s", "-i", "-X", "POST", "-H", "X-Forwarded-For: \(xff)", "--data-binary", body,
                                          "http://127.0.0.1:\(port)/app-attest/v1/challenge"]).output
        }
        let (behind, port) = try gateway(trusted: "127.0.0.1")
        defer { let done = DispatchSemaphore(value: 0); behind.shutdown { done.signal() }; _ = done.wait(timeout: .now() + 10) }
        XCTAssertTrue(try post(port, "203.0.113.1").hasPrefix("HTTP/1.1 201"))
        XCTAssertTrue(try post(port, "203.0.113.1").hasPrefix("HTTP/1.1 429"), "same client, same bucket")
        XCTAssertTrue(try post(port, "203.0.113.2").hasPrefix("HTTP/1.1 201"), "another client behind the balancer")
        XCTAssertTrue(try post(port, "198.51.100.9, 203.0.113.2").hasPrefix("HTTP/1.1 429"),
                      "a spoofed leftmost entry does not buy a new bucket")

        let (direct, directPort) = try gateway(trusted: "10.0.0.0/8")
        defer { let done = DispatchSemaphore(value: 0); direct.shutdown { done.signal() }; _ = done.wait(timeout: .now() + 10) }
        XCTAssertTrue(try post(directPort, "203.0.113.1").hasPrefix("HTTP/1.1 201"))
        XCTAssertTrue(try post(directPort, "203.0.113.2").hasPrefix("HTTP/1.1 429"),
                      "an untrusted peer's X-Forwarded-For is ignored: one bucket per TCP peer")
    }
}
