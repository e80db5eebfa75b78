import Foundation
import XCTest

/// Redis stopped under a running gateway: fail-closed routes answer 503 `store_unavailable`
/// (`Retry-After`, action `retry`), fail-open routes forward with verdict `unverified`, readiness
/// stays 200 (default: the replica still serves its `off`, `monitor` and `fail_open` routes) and its
/// body says the store is unavailable; Redis restarted from its append-only file: the gateway
/// recovers by itself and no counter is lost. (`admin.ready_requires_store`: StoreRequiredReadinessTests.)
final class StoreOutageTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }

    override func tearDown() {
        // Every test leaves Redis running, whatever happened.
        if let redis = env?.redis, (try? redis.cli("PING")) != "PONG" { try? redis.start() }
        super.tearDown()
    }

    func testRedisStoppedFailsClosedOrOpenThenRecoversFromAOFWithoutLosingCounters() throws {
        let redis = try XCTUnwrap(env.redis)
        let device = try env.attestedDevice(.ref)
        for counter: UInt32 in 1...3 {
            let signed = try env.signedRequest(device, target: "/v1/protected/before", counter: counter)
            XCTAssertEqual(try env.send(signed).status, 200)
        }
        XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "3")
        let pending = try env.signedRequest(device, target: "/v1/protected/during", body: Array("retry me".utf8), counter: 4)
        let open = try env.signedRequest(device, target: "/v1/failopen/during", body: Array("open".utf8), counter: 5)

        redis.stop()
        let closed = try env.send(pending)
        assertRefusal(closed, status: 503, code: "store_unavailable", action: "retry")
        XCTAssertNotNil(closed.header("Retry-After").flatMap(Int.init), "503 carries Retry-After: \(closed)")
        XCTAssertNotEqual(closed.action, "reattest")

        let forwarded = try env.send(open)
        XCTAssertEqual(forwarded.status, 200, "fail_open forwards: \(forwarded)")
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Verdict"), ["unverified"])
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Reason"), ["store_unavailable"])
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Key-Id"), [], "no keyId unless valid")
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Counter"), [])
        XCTAssertEqual(forwarded.echo?.bodySHA256, sha256Hex(Array("open".utf8)))

        assertRefusal(try env.requestChallenge(keyId: device.keyId, purpose: "assert"), status: 503, code: "store_unavailable",
                      action: "retry")
        let ready = try Curl.get("http://127.0.0.1:\(env.adminPort)/readyz")
        XCTAssertEqual(ready.status, 200, "the replica stays in its Service: \(ready.text)")
        XCTAssertEqual(StoreOutageTests.readiness(ready.text)?.store, "unavailable", ready.text)

        // Restart from the AOF on the same port; the gateway is not restarted.
        try redis.start()
        XCTAssertTrue(eventually { StoreOutageTests.storeIsOK(admin: "http://127.0.0.1:\(env.adminPort)") },
                      "the store is reported ok once every loop's connection is back")
        // `ok` means every loop's connection is back: store writes on new connections (spread over
        // the loops) go through at once, no waiting.
        for attempt in 0..<4 {
            XCTAssertEqual(try env.requestChallenge(keyId: device.keyId, purpose: "assert").status, 201, "write \(attempt)")
        }
        XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "3", "the acknowledged counter survived the restart")

        // The request refused with 503 is retried as it was: its challenge survived too.
        let retried = try env.send(pending)
        XCTAssertEqual(retried.status, 200, "\(retried)")
        XCTAssertEqual(retried.echo?.values("App-Attest-Counter"), ["4"])
        XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "4")

        // No counter was lost: an old counter is still a replay.
        let old = try env.signedRequest(device, target: "/v1/protected/after", counter: 3)
        assertRefusal(try env.send(old), status: 401, code: "counter_replay")
        let next = try env.signedRequest(device, target: "/v1/protected/after", counter: 6)
        XCTAssertEqual(try env.send(next).status, 200)
    }

    func testReadinessStaysUpWithRedisDownAndSaysSoWithoutErrorText() throws {
        let redis = try XCTUnwrap(env.redis)
        let admin = "http://127.0.0.1:\(env.adminPort)"
        XCTAssertTrue(eventually { StoreOutageTests.storeIsOK(admin: admin) })
        let up = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(up.status, 200, up.text)
        XCTAssertEqual(StoreOutageTests.readiness(up.text)?.ready, true, up.text)
        redis.stop()
        // The loss is seen when Redis closes the connections (no request needed).
        XCTAssertTrue(eventually { StoreOutageTests.readiness((try? Curl.get("\(admin)/readyz"))?.text ?? "")?.store == "unavailable" },
                      "the body reports the outage")
        let down = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(down.status, 200, "default readiness does not follow the store: \(down.text)")
        XCTAssertEqual(StoreOutageTests.readiness(down.text)?.ready, true, down.text)
        StoreOutageTests.assertNoErrorText(down.text)
        // A route in mode off still serves: the replica is rightly in its Service.
        XCTAssertEqual(try env.send("GET", "/v1/open/during").status, 200)
        let metrics = try Curl.get("\(admin)/metrics").text
        XCTAssertTrue(metrics.contains("attest_gateway_store_connections{state=\"down\"} "), metrics)
        XCTAssertFalse(metrics.contains("attest_gateway_store_connections{state=\"down\"} 0\n"), "some connection is down")
        let health = try Curl.get("\(admin)/healthz")
        XCTAssertEqual(health.status, 200, "the process itself is alive")
        StoreOutageTests.assertNoErrorText(health.text)
        try redis.start()
        XCTAssertTrue(eventually { StoreOutageTests.storeIsOK(admin: admin) })
        let back = try Curl.get("\(admin)/metrics").text
        XCTAssertTrue(back.contains("attest_gateway_store_connections{state=\"ready\"} 2\n"), "both loops' connections: \(back)")
        XCTAssertTrue(back.contains("attest_gateway_store_connections{state=\"down\"} 0\n"), back)
    }

    /// Whether `/readyz` of the admin listener at `admin` (`http://127.0.0.1:PORT`) reports the store
    /// `ok`: every loop's connection to it is up. For `eventually` after a store outage.
    static func storeIsOK(admin: String) -> Bool {
        readiness((try? Curl.get("\(admin)/readyz"))?.text ?? "")?.store == "ok"
    }

    /// The `/readyz` body: exactly `ready` (bool), `status` and `store` (words); nil otherwise.
    static func readiness(_ text: String) -> (ready: Bool, status: String, store: String)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              Set(object.keys) == ["ready", "status", "store"],
              let ready = object["ready"] as? Bool, let status = object["status"] as? String, let store = object["store"] as? String
        else { return nil }
        return (ready, status, store)
    }

    /// No raw store error in a body shown to unauthenticated callers: only stable words.
    static func assertNoErrorText(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        for fragment in ["refused", "errno", "connect", "127.0.0.1", "closed by", "detail", "timeout", "ERR"] {
            XCTAssertFalse(text.contains(fragment), "\(fragment) in \(text)", file: file, line: line)
        }
    }
}
