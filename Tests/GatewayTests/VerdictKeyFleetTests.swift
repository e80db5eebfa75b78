import Dispatch
import Foundation
@testable import Gateway
import GatewayConfig
import GatewayHTTP
import GatewayRedis
import GatewayStore
import GatewayTestSupport
import Synchronization
import XCTest

/// Generated verdict keys shared by a fleet: two "replicas" (signers with a Redis store each) on one
/// real redis-server agree on the first key set and on each rotation (compare-and-set), with the
/// time moved by a `MovableClock`, not waited for.
final class VerdictKeyFleetTests: XCTestCase {
    static let section = VerdictTokenConfiguration(
        keys: .generated(storeKey: "test:verdict-keys", rotation: .seconds(3600), publishAhead: .seconds(600)),
        lifetime: .seconds(60))

    private func refresh(_ signers: [VerdictTokenSigner]) {
        let group = DispatchGroup()
        let results = Mutex<[Bool]>([])
        for signer in signers {
            group.enter()
            DispatchQueue.global().async {
                signer.refresh { ok in
                    results.withLock { $0.append(ok) }
                    group.leave()
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success, "refresh did not complete")
        XCTAssertEqual(results.withLock { $0 }, Array(repeating: true, count: signers.count))
    }

    func testReplicasAgreeOnTheFirstKeySetAndOnEachRotation() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let clock = MovableClock()
        let stores = try (0..<2).map { _ in try RedisStore(url: redis.url) }
        defer { stores.forEach { $0.close() } }
        let replicas = try stores.map {
            try VerdictTokenSigner(configuration: Self.section, path: "verdict_token", clock: clock.gatewayClock, store: $0, events: nil)
        }
        // Each started its first refresh in init; one more each, concurrently.
        refresh(replicas)
        let first = replicas.map { $0.publishedKeys.map(\.kid) }
        XCTAssertEqual(first[0].count, 1, "one key set for the fleet: \(first)")
        XCTAssertEqual(first[0], first[1])
        XCTAssertEqual(try redis.cli("HGET", "test:verdict-keys", "v").trimmingCharacters(in: .whitespacesAndNewlines), "1",
                       "created once")
        let now = clock.now()
        XCTAssertEqual(replicas[0].currentKey(now: now)?.kid, first[0][0])

        // The next key's publication is due: both look at once, one writes.
        clock.advance(seconds: 3600 - 600)
        refresh(replicas)
        let second = replicas.map { $0.publishedKeys.map(\.kid) }
        XCTAssertEqual(second[0].count, 2, "\(second)")
        XCTAssertEqual(second[0], second[1])
        XCTAssertEqual(try redis.cli("HGET", "test:verdict-keys", "v").trimmingCharacters(in: .whitespacesAndNewlines), "2")
        XCTAssertEqual(replicas[1].currentKey(now: clock.now())?.kid, first[0][0], "published, not signing yet")
        clock.advance(seconds: 600)
        XCTAssertEqual(replicas[0].currentKey(now: clock.now())?.kid, second[0][1])
        XCTAssertEqual(replicas[1].currentKey(now: clock.now())?.kid, second[0][1])
        // The old key leaves once its last token expired (lifetime + a minute of skew).
        clock.advance(seconds: 121)
        refresh(replicas)
        XCTAssertEqual(replicas[0].publishedKeys.map(\.kid), [second[0][1]])
        XCTAssertEqual(replicas[1].publishedKeys.map(\.kid), [second[0][1]])

        // Failing variant: another store_key is another fleet, with keys of its own.
        var other = Self.section
        other.keys = .generated(storeKey: "test:other-fleet", rotation: .seconds(3600), publishAhead: .seconds(600))
        let stranger = try VerdictTokenSigner(configuration: other, path: "verdict_token", clock: clock.gatewayClock, store: stores[0], events: nil)
        refresh([stranger])
        XCTAssertEqual(stranger.publishedKeys.count, 1)
        XCTAssertFalse(replicas[0].publishedKeys.map(\.kid).contains(stranger.publishedKeys[0].kid))
    }

    /// Probe: the set gone from the store (Redis restarted without persistence, evicted, flushed):
    /// the first replica to look created a brand-new set, and the keys that had signed live tokens
    /// left every JWKS at once. Now the set is written again from the keys in memory, and logged.
    func testAMissingKeySetIsWrittenAgainFromTheKeysInMemory() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let clock = MovableClock()
        let stores = try (0..<2).map { _ in try RedisStore(url: redis.url) }
        defer { stores.forEach { $0.close() } }
        let logged = Mutex<[String]>([])
        let replicas = try stores.map {
            try VerdictTokenSigner(configuration: Self.section, path: "verdict_token", clock: clock.gatewayClock, store: $0,
                                   events: { name, _ in logged.withLock { $0.append(name) } })
        }
        refresh(replicas)
        clock.advance(seconds: 3600 - 600)
        refresh(replicas)
        let kids = replicas[0].publishedKeys.map(\.kid)
        XCTAssertEqual(kids.count, 2, "the signing key and the next one")
        XCTAssertEqual(try redis.cli("DEL", "test:verdict-keys"), "1")
        refresh([replicas[0]])
        XCTAssertEqual(replicas[0].publishedKeys.map(\.kid), kids, "the keys of live tokens stay published")
        refresh([replicas[1]])
        XCTAssertEqual(replicas[1].publishedKeys.map(\.kid), kids, "the other replica reads the set written again")
        XCTAssertTrue(logged.withLock { $0 }.contains("verdict_keys_restored"), "\(logged.withLock { $0 })")
        // The schedule goes on from the restored set: the next key signs on time.
        clock.advance(seconds: 600)
        XCTAssertEqual(replicas[1].currentKey(now: clock.now())?.kid, kids[1])
    }

    func testAnUnreachableStoreLeavesNoKeyUntilItAnswers() throws {
        let dead = try ReservedPort()
        let store = try RedisStore(url: "redis://127.0.0.1:\(dead.port)/0")
        defer { store.close() }
        let logged = Mutex<[String]>([])
        let signer = try VerdictTokenSigner(configuration: Self.section, path: "verdict_token", clock: .system, store: store,
                                            events: { name, _ in logged.withLock { $0.append(name) } })
        for _ in 0..<3 {
            let done = DispatchSemaphore(value: 0)
            let outcome = Mutex<Bool?>(nil)
            signer.refresh { ok in outcome.withLock { $0 = ok }; done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(outcome.withLock { $0 }, false)
        }
        XCTAssertEqual(logged.withLock { $0 }, ["verdict_keys_unavailable"], "one line per outage, not one per look")
        XCTAssertNil(signer.currentKey(now: GatewayClock.system.now()))
        XCTAssertTrue(signer.publishedKeys.isEmpty)
        // What the handler is told: no key (an enforce route answers 503, monitor forwards without a token).
        let issuer = VerdictTokenIssuer(headerName: "App-Attest-Verdict-Token", gateway: signer, apps: [:], signers: [signer])
        var headers = HTTPHeaders()
        XCTAssertEqual(issuer.attach(to: &headers, report: VerdictReport(.missing), request: try VerdictTokenTests.request(),
                                     riskHeader: "App-Attest-Risk-Metric"), .noKey)
        XCTAssertNil(headers.first("App-Attest-Verdict-Token"))
        XCTAssertEqual(String(decoding: issuer.jwks(), as: UTF8.self), "{\"keys\":[]}")
    }
}
