import Foundation
import XCTest

/// Redis stopped under a running gateway: fail-closed routes answer 503 `store_unavailable`
/// (`Retry-After`, action `retry`), fail-open routes forward with verdict `unverified`, readiness
/// turns 503; Redis restarted from its append-only file: the gateway recovers by itself and no
/// counter is lost.
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
        XCTAssertEqual(try Curl.get("http://127.0.0.1:\(env.adminPort)/readyz").status, 503)

        // Restart from the AOF on the same port; the gateway is not restarted.
        try redis.start()
        XCTAssertTrue(eventually { (try? Curl.get("http://127.0.0.1:\(env.adminPort)/readyz").status) == 200 },
                      "readiness comes back once Redis answers")
        // Readiness pings one loop's connection; every loop reconnects on its own backoff. Wait for the
        // behaviour the retry needs: four store writes in a row on new connections (assigned to the
        // loops round-robin, so every loop served at least one).
        XCTAssertTrue(eventually {
            (0..<4).allSatisfy { _ in (try? env.requestChallenge(keyId: device.keyId, purpose: "assert").status) == 201 }
        }, "every event loop's store connection is back")
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

    func testReadinessFollowsRedisWhileHealthStaysUp() throws {
        let redis = try XCTUnwrap(env.redis)
        let admin = "http://127.0.0.1:\(env.adminPort)"
        XCTAssertEqual(try Curl.get("\(admin)/readyz").status, 200)
        redis.stop()
        let down = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertTrue(down.text.contains("unavailable"), down.text)
        XCTAssertEqual(try Curl.get("\(admin)/healthz").status, 200, "the process itself is alive")
        try redis.start()
        XCTAssertTrue(eventually { (try? Curl.get("\(admin)/readyz").status) == 200 })
    }
}
