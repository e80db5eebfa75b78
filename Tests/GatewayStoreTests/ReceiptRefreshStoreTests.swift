import Foundation
@testable import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The receipt refresher's store operations (issue 12) with the same semantics on `MemoryStore` and
/// `RedisStore` (real redis-server): the fleet schedule, the per-key lease, the atomic receipt
/// replacement, the metric state, and the fraud metric coming back with each commit.
final class ReceiptRefreshStoreTests: XCTestCase {
    private var stores: [any AttestStore & ReceiptRefreshStore] = []

    override func tearDown() {
        for store in stores { store.close() }
        stores = []
        super.tearDown()
    }

    private func memory() -> MemoryStore {
        let store = MemoryStore()
        stores.append(store)
        return store
    }

    private func redis() throws -> RedisStore {
        let store = try RedisStore(configuration: RedisStore.Configuration(url: try RedisURL(parsing: SharedRedis.server().url)))
        stores.append(store)
        return store
    }

    private func run(_ store: any AttestStore & ReceiptRefreshStore) throws {
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord(receipt: Array("attest-receipt".utf8))
        let keyId = record.keyId
        try suite.registerExpectingAccepted(record)

        // A commit before any refresh: no metric.
        let challenge = try suite.issueAssert(keyId)
        guard case .accepted(let first) = try suite.commitOutcome(keyId, challenge, counter: 1, window: 0, now: suite.baseNow) else {
            return XCTFail("commit refused")
        }
        XCTAssertEqual(first.risk, RiskSnapshot(metric: nil, observedAt: nil, state: nil))

        // Replacement: receipt, metric, time, expiry and state in one step.
        let receipt = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        XCTAssertEqual(try suite.wait("store", { store.storeRefreshedReceipt(keyId, receipt: receipt, riskMetric: 6, observedAt: 1_000,
                                                                               receiptExpiresAt: 9_000, completion: $0) }).get(), true)
        var stored = try XCTUnwrap(try suite.wait("fetch", { store.fetchKey(keyId, completion: $0) }).get())
        XCTAssertEqual(stored.receipt, receipt)
        XCTAssertEqual(stored.receiptRiskMetric, 6)
        XCTAssertEqual(stored.riskObservedAt, 1_000)
        XCTAssertEqual(stored.receiptExpiresAt, 9_000)
        XCTAssertEqual(stored.riskState, .fresh)
        XCTAssertEqual(stored.counter, 1, "the counter is untouched")
        let second = try suite.issueAssert(keyId)
        guard case .accepted(let committed) = try suite.commitOutcome(keyId, second, counter: 2, window: 0, now: suite.baseNow) else {
            return XCTFail("commit refused")
        }
        XCTAssertEqual(committed.risk, RiskSnapshot(metric: 6, observedAt: 1_000, state: .fresh, receiptExpiresAt: 9_000),
                       "the commit reads the metric")

        // A replacement without metric or expiry clears them.
        XCTAssertEqual(try suite.wait("store", { store.storeRefreshedReceipt(keyId, receipt: [1], riskMetric: nil, observedAt: 2_000,
                                                                               receiptExpiresAt: nil, completion: $0) }).get(), true)
        stored = try XCTUnwrap(try suite.wait("fetch", { store.fetchKey(keyId, completion: $0) }).get())
        XCTAssertNil(stored.receiptRiskMetric)
        XCTAssertNil(stored.receiptExpiresAt)

        // State changes keep receipt and metric.
        XCTAssertEqual(try suite.wait("mark", { store.markRisk(keyId, state: .stale, completion: $0) }).get(), true)
        stored = try XCTUnwrap(try suite.wait("fetch", { store.fetchKey(keyId, completion: $0) }).get())
        XCTAssertEqual(stored.riskState, .stale)
        XCTAssertEqual(stored.receipt, [1])

        // Unknown keys: nothing is created.
        let stranger = try suite.randomKeyId()
        XCTAssertEqual(try suite.wait("store", { store.storeRefreshedReceipt(stranger, receipt: [1], riskMetric: 1, observedAt: 1,
                                                                               receiptExpiresAt: nil, completion: $0) }).get(), false)
        XCTAssertEqual(try suite.wait("mark", { store.markRisk(stranger, state: .stopped, completion: $0) }).get(), false)
        XCTAssertNil(try suite.wait("fetch", { store.fetchKey(stranger, completion: $0) }).get())

        // Schedule: due by time, earliest first, moved and removed.
        let later = try suite.randomKeyId()
        try suite.wait("schedule", { store.scheduleRefresh(later, dueAt: 5_000, completion: $0) }).get()
        try suite.wait("schedule", { store.scheduleRefresh(keyId, dueAt: 3_000, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due", { store.dueRefreshes(now: 2_999, limit: 10, completion: $0) }).get().filter { [keyId, later].contains($0) }, [])
        XCTAssertEqual(try suite.wait("due", { store.dueRefreshes(now: 3_000, limit: 10, completion: $0) }).get().filter { [keyId, later].contains($0) }, [keyId])
        XCTAssertEqual(try suite.wait("due", { store.dueRefreshes(now: 6_000, limit: 10_000, completion: $0) }).get().filter { [keyId, later].contains($0) }, [keyId, later])
        try suite.wait("schedule", { store.scheduleRefresh(keyId, dueAt: 8_000, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due", { store.dueRefreshes(now: 6_000, limit: 10_000, completion: $0) }).get().filter { [keyId, later].contains($0) }, [later])
        try suite.wait("unschedule", { store.unscheduleRefresh(later, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due", { store.dueRefreshes(now: 9_000, limit: 10_000, completion: $0) }).get().filter { [keyId, later].contains($0) }, [keyId])
        XCTAssertEqual(try suite.wait("due time", { store.refreshDueTime(keyId, completion: $0) }).get(), 8_000)
        try suite.wait("schedule NX", { store.scheduleRefresh(keyId, dueAt: 1, onlyIfAbsent: true, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due time", { store.refreshDueTime(keyId, completion: $0) }).get(), 8_000, "NX keeps the schedule")
        let fresh = try suite.randomKeyId()
        try suite.wait("schedule NX", { store.scheduleRefresh(fresh, dueAt: 7, onlyIfAbsent: true, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due time", { store.refreshDueTime(fresh, completion: $0) }).get(), 7, "NX adds an absent key")
        try suite.wait("schedule", { store.scheduleRefresh(keyId, dueAt: 1_800_000_123_456, completion: $0) }).get()
        XCTAssertEqual(try suite.wait("due time", { store.refreshDueTime(keyId, completion: $0) }).get(), 1_800_000_123_456)
        try suite.wait("unschedule", { store.unscheduleRefresh(keyId, completion: $0) }).get()
        XCTAssertNil(try suite.wait("due time", { store.refreshDueTime(keyId, completion: $0) }).get())

        // Lease: one owner at a time; the owner may extend it.
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(keyId, owner: "a", ttl: 60_000, completion: $0) }).get(), true)
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(keyId, owner: "b", ttl: 60_000, completion: $0) }).get(), false)
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(keyId, owner: "a", ttl: 60_000, completion: $0) }).get(), true)
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(stranger, owner: "b", ttl: 60_000, completion: $0) }).get(), true,
                       "leases are per key")
        // Only the owner releases.
        try suite.wait("release", { store.releaseRefreshLease(keyId, owner: "b", completion: $0) }).get()
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(keyId, owner: "b", ttl: 60_000, completion: $0) }).get(), false)
        try suite.wait("release", { store.releaseRefreshLease(keyId, owner: "a", completion: $0) }).get()
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(keyId, owner: "b", ttl: 60_000, completion: $0) }).get(), true)
        // A short lease lapses (polled, no fixed sleep).
        let brief = try suite.randomKeyId()
        XCTAssertEqual(try suite.wait("lease", { store.acquireRefreshLease(brief, owner: "a", ttl: 50, completion: $0) }).get(), true)
        waitFor("the 50 ms lease to lapse") {
            (try? suite.wait("lease", { store.acquireRefreshLease(brief, owner: "b", ttl: 60_000, completion: $0) }).get()) == true
        }
    }

    func testMemoryStore() throws { try run(memory()) }

    func testRedisStore() throws {
        let store = try redis()
        try run(store)
        // The lease lives under the key's hash tag (same Redis Cluster slot as its record).
        XCTAssertEqual(String(decoding: store.schema.refreshLeaseName(try KeyID([UInt8](repeating: 0, count: 32))), as: UTF8.self),
                       "aa:{AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA}:risklease")
    }

    func testRedisRecordWithAnUnknownRiskStateIsCorruptNotAccepted() throws {
        let store = try redis()
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        _ = try SharedRedis.server().cli("HSET", String(decoding: store.schema.keyRecordName(record.keyId), as: UTF8.self), "riskst", "bogus")
        guard case .failure = try suite.wait("fetch", { store.fetchKey(record.keyId, completion: $0) }) else {
            return XCTFail("a corrupt riskst must be an error, not a record")
        }
    }

    func testRefresherScriptSHAsMatchTheirBodies() throws {
        for script in RedisScript.receiptRefresh + [RedisScript.commit] {
            let result = try ChildProcess.run("python3", ["-c", "import sys,hashlib;print(hashlib.sha1(sys.stdin.buffer.read()).hexdigest())"],
                                              stdin: Data(script.body))
            XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), String(decoding: script.sha1, as: UTF8.self))
        }
    }
}
