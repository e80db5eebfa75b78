import GatewayRules
import GatewayStore
@testable import GatewayRedis
import XCTest

/// Cluster routing as values, without sockets: key slots (CRC16 and hash tags), the slot map read from
/// `CLUSTER SLOTS` and patched by `MOVED`, the cluster error replies, and the per-command decisions
/// (`RedisClusterAttempt`). CRC16 against Redis' own `CLUSTER KEYSLOT`: RedisClusterStoreTests.
final class RedisClusterRoutingTests: XCTestCase {
    private let ms: UInt64 = 1_000_000
    private func error(_ text: String) -> RedisReply { .error(Array(text.utf8)) }
    private func bulk(_ text: String) -> RedisReply { .bulk(Array(text.utf8)) }
    private func node(_ host: String, _ port: Int64) -> RedisReply { .array([bulk(host), .integer(port), bulk("id")]) }

    func testCRC16AndSlotsOfTheSpecification() {
        // Redis Cluster specification, "Keys distribution model": CRC16/XMODEM("123456789") = 0x31C3.
        XCTAssertEqual(RedisClusterSlot.crc16(Array("123456789".utf8)), 0x31C3)
        XCTAssertEqual(RedisClusterSlot.crc16([UInt8]()), 0)
        // Published slots (redis-cli CLUSTER KEYSLOT): foo 12182, bar 5061, and hash tags.
        XCTAssertEqual(RedisClusterSlot.of(key: Array("foo".utf8)), 12182)
        XCTAssertEqual(RedisClusterSlot.of(key: Array("bar".utf8)), 5061)
        XCTAssertEqual(RedisClusterSlot.of(key: Array("{user1000}.following".utf8)), RedisClusterSlot.of(key: Array("user1000".utf8)))
        XCTAssertEqual(RedisClusterSlot.of(key: Array("foo{}{bar}".utf8)), RedisClusterSlot.of(key: Array("foo{}{bar}".utf8).map { $0 }))
        // Empty tag: the whole key is hashed; only the first { counts.
        XCTAssertEqual(RedisClusterSlot.of(key: Array("foo{}{bar}".utf8)), Int(RedisClusterSlot.crc16(Array("foo{}{bar}".utf8)) & 0x3fff))
        XCTAssertEqual(RedisClusterSlot.of(key: Array("foo{{bar}}zap".utf8)), RedisClusterSlot.of(key: Array("{bar".utf8)))
        XCTAssertEqual(RedisClusterSlot.of(key: Array("foo{bar}{zap}".utf8)), RedisClusterSlot.of(key: Array("bar".utf8)))
        XCTAssertEqual(RedisClusterSlot.of(key: Array("{".utf8)), Int(RedisClusterSlot.crc16(Array("{".utf8)) & 0x3fff))
        // A failing variant: a different tag gives a different slot here.
        XCTAssertNotEqual(RedisClusterSlot.of(key: Array("aa:{abc}:key".utf8)), RedisClusterSlot.of(key: Array("aa:{abd}:key".utf8)))
    }

    func testEveryRecordOfAKeySharesItsSlot() throws {
        let schema = RedisKeySchema(prefix: Array("aa".utf8))
        for _ in 0..<50 {
            let keyId = try KeyID((0..<32).map { _ in UInt8.random(in: 0...255) })
            let challenge = try Challenge((0..<32).map { _ in UInt8.random(in: 0...255) })
            XCTAssertEqual(RedisClusterSlot.of(key: schema.keyRecordName(keyId)), RedisClusterSlot.of(key: schema.challengeName(keyId, challenge)))
            XCTAssertEqual(RedisClusterSlot.of(key: schema.keyRecordName(keyId)), RedisClusterSlot.of(key: keyId.base64URL))
        }
    }

    func testSlotTableFromClusterSlots() throws {
        let reply = RedisReply.array([
            .array([.integer(0), .integer(5460), node("127.0.0.1", 7000), node("127.0.0.1", 7003)]),
            .array([.integer(5461), .integer(10922), node("", 7001)]),
            .array([.integer(10923), .integer(16383), node("10.0.0.3", 7002), node("10.0.0.4", 7005), node("10.0.0.5", 7006)]),
        ])
        let table = try RedisSlotTable(clusterSlots: reply, fallbackHost: "10.9.9.9")
        XCTAssertEqual(table.coveredSlots, 16384)
        XCTAssertEqual(table.primary(ofSlot: 0), .tcp(host: "127.0.0.1", port: 7000))
        XCTAssertEqual(table.primary(ofSlot: 5460), .tcp(host: "127.0.0.1", port: 7000))
        XCTAssertEqual(table.primary(ofSlot: 5461), .tcp(host: "10.9.9.9", port: 7001), "an empty host is the host asked")
        XCTAssertEqual(table.primary(ofSlot: 16383), .tcp(host: "10.0.0.3", port: 7002))
        XCTAssertEqual(table.nodes.map(\.replicas.count), [1, 0, 2])

        var partial = try RedisSlotTable(clusterSlots: .array([.array([.integer(100), .integer(200), node("h", 1)])]), fallbackHost: "x")
        XCTAssertEqual(partial.coveredSlots, 101)
        XCTAssertNil(partial.primary(ofSlot: 99))
        // MOVED patches one slot; a primary left with no slot disappears.
        partial.move(slot: 99, to: .tcp(host: "h", port: 2))
        XCTAssertEqual(partial.primary(ofSlot: 99), .tcp(host: "h", port: 2))
        XCTAssertEqual(partial.primaries.count, 2)
        var single = try RedisSlotTable(clusterSlots: .array([.array([.integer(5), .integer(5), node("h", 1)])]), fallbackHost: "x")
        single.move(slot: 5, to: .tcp(host: "h", port: 2))
        XCTAssertEqual(single.primaries, [.tcp(host: "h", port: 2)])

        for malformed: RedisReply in [
            .integer(1), .array([.array([.integer(0), .integer(16384), node("h", 1)])]),
            .array([.array([.integer(10), .integer(5), node("h", 1)])]), .array([.array([.integer(0), .integer(1)])]),
            .array([.array([.integer(0), .integer(1), .array([bulk("h")])])]), .array([.array([.integer(0), .integer(1), node("h", 0)])]),
        ] {
            XCTAssertThrowsError(try RedisSlotTable(clusterSlots: malformed, fallbackHost: "x"), "\(malformed)")
        }
    }

    func testRedirectReplies() {
        XCTAssertEqual(RedisClusterRedirect(error("MOVED 3999 127.0.0.1:6381"), fallbackHost: "x"), .moved(slot: 3999, to: .tcp(host: "127.0.0.1", port: 6381)))
        XCTAssertEqual(RedisClusterRedirect(error("ASK 3999 10.0.0.1:7000"), fallbackHost: "x"), .ask(slot: 3999, to: .tcp(host: "10.0.0.1", port: 7000)))
        XCTAssertEqual(RedisClusterRedirect(error("MOVED 1 :7000"), fallbackHost: "10.1.1.1"), .moved(slot: 1, to: .tcp(host: "10.1.1.1", port: 7000)))
        XCTAssertEqual(RedisClusterRedirect(error("MOVED 1 ::1:7000"), fallbackHost: "x"), .moved(slot: 1, to: .tcp(host: "::1", port: 7000)))
        XCTAssertEqual(RedisClusterRedirect(error("TRYAGAIN Multiple keys request during rehashing of slot"), fallbackHost: "x"), .tryAgain)
        XCTAssertEqual(RedisClusterRedirect(error("CLUSTERDOWN The cluster is down"), fallbackHost: "x"), .clusterDown)
        for other in [error("ERR unknown"), error("MOVED"), error("MOVED x h:1"), error("MOVED 16384 h:1"), error("ASK 1 h"),
                      error("MOVED 1 h:0"), bulk("MOVED 1 h:1"), error("")] {
            XCTAssertNil(RedisClusterRedirect(other, fallbackHost: "x"), "\(other)")
        }
    }

    func testAttemptDecisions() {
        let now: UInt64 = 1_000 * ms
        var attempt = RedisClusterAttempt(slot: 42, now: now, timeout: 500 * ms)
        XCTAssertEqual(attempt.decide(.success(bulk("ok")), now: now, fallbackHost: "h"), .deliver)
        XCTAssertEqual(attempt.decide(.success(error("OOM no memory")), now: now, fallbackHost: "h"), .deliver, "other errors are the store's to judge")
        XCTAssertEqual(attempt.decide(.success(error("MOVED 42 h2:2")), now: now, fallbackHost: "h"), .moved(slot: 42, to: .tcp(host: "h2", port: 2)))
        XCTAssertEqual(attempt.decide(.success(error("ASK 42 h3:3")), now: now, fallbackHost: "h"), .ask(.tcp(host: "h3", port: 3)))
        XCTAssertEqual(attempt.decide(.success(error("TRYAGAIN x")), now: now, fallbackHost: "h"), .retry(delay: 10 * ms, refresh: false))
        XCTAssertEqual(attempt.decide(.success(error("CLUSTERDOWN x")), now: now, fallbackHost: "h"), .retry(delay: 20 * ms, refresh: true))
        XCTAssertEqual(attempt.decide(.failure(StoreUnavailable(.notConnected)), now: now, fallbackHost: "h"), .retry(delay: 40 * ms, refresh: true))
        XCTAssertEqual(attempt.unrouted(now: now), .retry(delay: 80 * ms, refresh: true))
        XCTAssertEqual(attempt.unrouted(now: now), .retry(delay: 100 * ms, refresh: true), "capped")
        // Outcome unknown: never resent.
        for reason: StoreUnavailable.Reason in [.connectionLost, .timeout, .protocolError] {
            XCTAssertEqual(attempt.decide(.failure(StoreUnavailable(reason)), now: now, fallbackHost: "h"), .fail(StoreUnavailable(reason), refresh: true))
        }
        for reason: StoreUnavailable.Reason in [.overloaded, .closed] {
            XCTAssertEqual(attempt.decide(.failure(StoreUnavailable(reason)), now: now, fallbackHost: "h"), .fail(StoreUnavailable(reason), refresh: false))
        }
        // Past the deadline: retries give up with the last failure.
        guard case .fail(let late, true) = attempt.decide(.failure(StoreUnavailable(.notConnected, detail: "down")), now: now + 450 * ms, fallbackHost: "h") else {
            return XCTFail("a retry past the deadline")
        }
        XCTAssertEqual(late.reason, .notConnected)
        guard case .fail(let down, true) = attempt.decide(.success(error("CLUSTERDOWN x")), now: now + 500 * ms, fallbackHost: "h") else {
            return XCTFail("CLUSTERDOWN past the deadline")
        }
        XCTAssertEqual(down.reason, .errorReply("CLUSTERDOWN"))
    }

    func testRedirectLoopsEnd() {
        var attempt = RedisClusterAttempt(slot: 1, now: 0, timeout: 500 * ms)
        for _ in 0..<RedisClusterAttempt.maximumRedirects {
            XCTAssertEqual(attempt.decide(.success(error("MOVED 1 a:1")), now: 0, fallbackHost: "h"), .moved(slot: 1, to: .tcp(host: "a", port: 1)))
        }
        guard case .fail(let error, _) = attempt.decide(.success(error("ASK 1 b:1")), now: 0, fallbackHost: "h") else {
            return XCTFail("a redirect loop is followed forever")
        }
        XCTAssertEqual(error.reason, .errorReply("ASK"))
    }

    /// ASK then TRYAGAIN (a multi-key script while its slot's keys are split between the migrating
    /// and the importing node) is retried until the command's deadline, not cut short by the redirect
    /// budget: each TRYAGAIN ends the row of redirects.
    func testAskThenTryAgainCyclesRunToTheDeadline() {
        var attempt = RedisClusterAttempt(slot: 1, now: 0, timeout: 500 * ms)
        var now: UInt64 = 0
        var cycles = 0
        while true {
            XCTAssertEqual(attempt.decide(.success(error("ASK 1 b:1")), now: now, fallbackHost: "h"), .ask(.tcp(host: "b", port: 1)))
            let decision = attempt.decide(.success(error("TRYAGAIN Multiple keys request during rehashing of slot")), now: now, fallbackHost: "h")
            guard case .retry(let delay, _) = decision else {
                guard case .fail(let failure, _) = decision else { return XCTFail("\(decision)") }
                XCTAssertEqual(failure.reason, .errorReply("TRYAGAIN"))
                break
            }
            now += delay
            cycles += 1
        }
        XCTAssertGreaterThan(cycles, RedisClusterAttempt.maximumRedirects, "more ASKs than the redirect budget")
        XCTAssertGreaterThanOrEqual(now, 400 * ms, "retried for about the whole command timeout")
    }

    func testTopologyRefreshesOneAtATime() {
        let topology = RedisClusterTopology(seeds: [.tcp(host: "h", port: 1)], minimumInterval: 50 * ms)
        XCTAssertTrue(topology.beginRefresh(now: 1_000 * ms))
        XCTAssertFalse(topology.beginRefresh(now: 2_000 * ms), "one in flight")
        topology.refreshFailed("x")
        XCTAssertEqual(topology.lastFailure, "x")
        XCTAssertFalse(topology.beginRefresh(now: 1_010 * ms), "too soon")
        XCTAssertTrue(topology.beginRefresh(now: 1_060 * ms))
        var table = RedisSlotTable()
        table.move(slot: 3, to: .tcp(host: "h", port: 2))
        XCTAssertEqual(topology.generation, 0)
        topology.publish(table)
        XCTAssertEqual(topology.generation, 1)
        XCTAssertNil(topology.lastFailure)
        XCTAssertEqual(topology.candidates(), [.tcp(host: "h", port: 2), .tcp(host: "h", port: 1)])
        XCTAssertTrue(topology.beginRefresh(now: 2_000 * ms))
        topology.publish(table)
        XCTAssertEqual(topology.generation, 1, "the same map is no new generation")
    }
}
