import Foundation
import XCTest

/// `admin.ready_requires_store: true`: `/readyz` answers 503 while the store is down, and 200 only
/// once every event loop's store connection works again: right after the first 200, every request
/// of a run on an enforced route gets its store writes through (the gateway runs two loops).
final class StoreRequiredReadinessTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var admin: String { "{address: \"127.0.0.1:0\", ready_requires_store: true}" }

    override func tearDown() {
        if let redis = env?.redis, (try? redis.cli("PING")) != "PONG" { try? redis.start() }
        super.tearDown()
    }

    func testReadinessIs503UntilEveryLoopReconnectedThenEveryWriteGoesThrough() throws {
        let redis = try XCTUnwrap(env.redis)
        let admin = "http://127.0.0.1:\(env.adminPort)"
        XCTAssertTrue(eventually { (try? Curl.get("\(admin)/readyz").status) == 200 }, "ready with Redis up")
        let up = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(StoreOutageTests.readiness(up.text)?.store, "ok", up.text)
        let device = try env.attestedDevice(.sim)

        redis.stop()
        XCTAssertTrue(eventually { (try? Curl.get("\(admin)/readyz").status) == 503 }, "not ready with Redis down")
        let down = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(down.status, 503, down.text)
        let body = StoreOutageTests.readiness(down.text)
        XCTAssertEqual(body?.ready, false, down.text)
        XCTAssertEqual(body?.status, "not_ready", down.text)
        XCTAssertEqual(body?.store, "unavailable", down.text)
        StoreOutageTests.assertNoErrorText(down.text)
        XCTAssertEqual(try Curl.get("\(admin)/healthz").status, 200, "alive, only not ready")
        assertRefusal(try env.requestChallenge(keyId: device.keyId, purpose: "assert"), status: 503, code: "store_unavailable",
                      action: "retry")

        try redis.start()
        var probes = 0
        XCTAssertTrue(eventually(timeout: 30) {
            probes += 1
            return (try? Curl.get("\(admin)/readyz").status) == 200
        }, "ready again once Redis answers")
        // At once, no waiting: each signed request is two store writes (challenge, commit), on new
        // connections spread over the loops.
        for counter: UInt32 in 1...8 {
            let signed = try env.signedRequest(device, target: "/v1/protected/after-\(counter)", counter: counter)
            let reply = try env.send(signed)
            XCTAssertEqual(reply.status, 200, "request \(counter) after readiness (\(probes) probes): \(reply)")
        }
        XCTAssertEqual(try env.storedCounter(device), 8)
    }
}
