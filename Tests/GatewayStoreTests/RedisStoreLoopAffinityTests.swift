import Dispatch
import GatewayIO
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import Synchronization
import XCTest

/// `RedisStore` with `Configuration.loops` (how the gateway runs it: one pipelined connection per
/// event loop, on the loop's queue) against a real redis-server: the shared conformance suite with
/// every call made from a loop queue, completions on the calling loop and never inside the call, and
/// many commands of one queue turn (written with one send) answered in order.
final class RedisStoreLoopAffinityTests: XCTestCase {
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

    private func makeStore(url: String? = nil) throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: url ?? SharedRedis.server().url))
        configuration.loops = group.loops
        configuration.connectTimeout = 500
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
        let keyId = try KeyID([UInt8](repeating: 7, count: 32))
        for (index, loop) in loops.enumerated() {
            let results = Mutex<[(loop: Int?, insideCall: Bool, ok: Bool)]>([])
            let done = DispatchSemaphore(value: 0)
            let inCall = Mutex(false)
            let count = 300
            loop.async { [loopKey] in
                // One queue turn: 300 commands, coalesced into one write.
                inCall.withLock { $0 = true }
                for i in 0..<count {
                    let challenge = try! Challenge([UInt8](repeating: UInt8(i % 256), count: 16) + [UInt8(i / 256)])
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

    func testFailFastAnswersNeverCompleteInsideTheCall() throws {
        let dead = try ReservedPort()  // nothing listens there
        defer { withExtendedLifetime(dead) {} }
        let port = dead.port
        let store = try makeStore(url: "redis://127.0.0.1:\(port)")
        let failures = Mutex<[(loop: Int?, insideCall: Bool, failed: Bool)]>([])
        let count = 50
        let done = DispatchSemaphore(value: 0)
        // Wait until the store is in backoff (commands then fail fast).
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let box = CompletionBox<Bool>()
            store.ping { result in box.put((try? result.get()) != nil) }
            if box.take(timeout: 5) == false { break }
        }
        let inCall = Mutex(false)
        loops[1].async { [loopKey] in
            inCall.withLock { $0 = true }
            for _ in 0..<count {
                store.ping { result in
                    let entry = (loop: DispatchQueue.getSpecific(key: loopKey), insideCall: inCall.withLock { $0 },
                                 failed: (try? result.get()) == nil)
                    if failures.withLock({ $0.append(entry); return $0.count }) == count { done.signal() }
                }
            }
            inCall.withLock { $0 = false }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let all = failures.withLock { $0 }
        XCTAssertTrue(all.allSatisfy(\.failed), "Redis is down: every ping fails (fail-closed)")
        XCTAssertTrue(all.allSatisfy { $0.loop == 1 }, "fail-fast answers run on the calling loop")
        XCTAssertTrue(all.allSatisfy { !$0.insideCall }, "fail-fast answers never run inside the call")
    }
}
