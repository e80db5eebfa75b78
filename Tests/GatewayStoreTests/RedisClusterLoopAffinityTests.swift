import Dispatch
import GatewayIO
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import Synchronization
import XCTest

/// `RedisStore` on the shared Redis Cluster with `Configuration.loops` (how the gateway runs it: one
/// router per event loop, with one connection per node on the loop's queue): the conformance suite
/// with every call made from a loop queue, and completions on the calling loop, never inside the call,
/// for a turn's worth of commands whose keys spread over every primary.
final class RedisClusterLoopAffinityTests: XCTestCase {
    private let group = EventLoopGroup(loopCount: 2, timerResolution: 0.01)
    private var loops: [DispatchQueue] { group.loops.map(\.queue) }
    private let loopKey = DispatchSpecificKey<Int>()
    private var store: RedisStore?

    override func setUp() {
        super.setUp()
        for (i, loop) in loops.enumerated() { loop.setSpecific(key: loopKey, value: i) }
    }

    override func tearDown() {
        store?.close()
        store = nil
        group.shutdown()
        super.tearDown()
    }

    private func makeStore() throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: SharedRedisCluster.cluster().url))
        configuration.loops = group.loops
        let store = try RedisStore(configuration: configuration)
        self.store = store
        return store
    }

    func testConformanceSuiteWithEveryCallMadeOnALoop() throws {
        let suite = StoreConformance(store: LoopHoppingStore(try makeStore(), loops: loops))
        for check in StoreConformance.checks {
            do { try check.run(suite) } catch { XCTFail("\(check.name): \(error)") }
        }
    }

    func testCompletionsRunOnTheCallingLoopAfterTheCall() throws {
        let store = try makeStore()
        try StoreReadiness.waitUntilReady(store)
        for (index, loop) in loops.enumerated() {
            let results = Mutex<[(loop: Int?, insideCall: Bool, ok: Bool)]>([])
            let done = DispatchSemaphore(value: 0)
            let inCall = Mutex(false)
            let count = 300
            loop.async { [loopKey] in
                // One queue turn: 300 commands for 300 keys (every primary), one write per node.
                inCall.withLock { $0 = true }
                for i in 0..<count {
                    let keyId = try! KeyID([UInt8](repeating: UInt8(i % 256), count: 31) + [UInt8(i / 256)])
                    let challenge = try! Challenge([UInt8](repeating: 9, count: 16))
                    store.issueChallenge(challenge, keyId: keyId, purpose: .assert, expiresAt: 2_000_000_000_000,
                                         now: 1_000_000_000_000) { result in
                        let entry = (loop: DispatchQueue.getSpecific(key: loopKey), insideCall: inCall.withLock { $0 },
                                     ok: (try? result.get()) != nil)
                        if results.withLock({ $0.append(entry); return $0.count }) == count { done.signal() }
                    }
                }
                inCall.withLock { $0 = false }
            }
            XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "every command of the turn is answered")
            let all = results.withLock { $0 }
            XCTAssertEqual(all.count, count)
            XCTAssertTrue(all.allSatisfy { $0.loop == index }, "completions run on the loop that called (loop \(index))")
            XCTAssertTrue(all.allSatisfy { !$0.insideCall }, "no completion runs inside the submitting call")
            XCTAssertTrue(all.allSatisfy(\.ok), "every challenge was stored")
        }
    }
}
