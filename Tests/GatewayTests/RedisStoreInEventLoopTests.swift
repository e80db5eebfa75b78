import Dispatch
import Foundation
@testable import Gateway
import GatewayIO
import GatewayHTTP
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import Synchronization
import XCTest

/// `RedisStore` living in the gateway's event loops (`Configuration.loops`, as `GatewayRuntime`
/// runs it): the connection's socket sits in the loop's
/// poller and its commands are flushed at the loop's end of turn. Against a real redis-server: the
/// shared conformance suite with every call made on a loop; many commands of one turn answered in
/// order on the calling loop, never inside the call; a Redis restart failing commands as unavailable
/// and then recovering.
final class RedisStoreInEventLoopTests: XCTestCase {
    private var group: EventLoopGroup?
    private var store: RedisStore?

    override func tearDown() {
        store?.close()
        store = nil
        group?.shutdown()
        group = nil
        super.tearDown()
    }

    private func makeStore(_ server: RedisServer) throws -> (RedisStore, [EventLoop]) {
        let group = EventLoopGroup(loopCount: 2, timerResolution: 0.01)
        self.group = group
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: server.url))
        configuration.loops = group.loops
        configuration.connectTimeout = 500
        configuration.commandTimeout = 1_000
        configuration.reconnectBaseDelay = 20
        configuration.reconnectMaximumDelay = 100
        let store = try RedisStore(configuration: configuration)
        self.store = store
        return (store, group.loops)
    }

    func testConformanceSuiteWithEveryCallMadeOnALoop() throws {
        let server = try RedisServer()
        let (store, loops) = try makeStore(server)
        let suite = StoreConformance(store: LoopHoppingStore(store, loops: loops.map(\.queue)))
        for check in StoreConformance.checks {
            do { try check.run(suite) } catch { XCTFail("\(check.name): \(error)") }
        }
    }

    func testCommandsOfOneTurnAreAnsweredInOrderOnTheCallingLoop() throws {
        let server = try RedisServer()
        let (store, loops) = try makeStore(server)
        try StoreReadiness.waitUntilReady(store)
        let keyId = try KeyID([UInt8](repeating: 9, count: 32))
        for loop in loops {
            let count = 300
            let answers = Mutex<[(index: Int, onLoop: Bool, insideCall: Bool, ok: Bool)]>([])
            let inCall = Mutex(false)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                inCall.withLock { $0 = true }
                for i in 0..<count {
                    let challenge = try! Challenge([UInt8](repeating: UInt8(i % 256), count: 16) + [UInt8(i / 256), 0x5A])
                    store.issueChallenge(challenge, keyId: keyId, purpose: .assert, expiresAt: 2_000_000_000_000,
                                         now: 1_000_000_000_000) { result in
                        let entry = (index: i, onLoop: loop.inEventLoop, insideCall: inCall.withLock { $0 },
                                     ok: (try? result.get()) != nil)
                        if answers.withLock({ $0.append(entry); return $0.count }) == count { done.signal() }
                    }
                }
                inCall.withLock { $0 = false }
            }
            XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "every command of the turn is answered")
            let all = answers.withLock { $0 }
            XCTAssertEqual(all.map(\.index), Array(0..<count), "pipelined replies in order")
            XCTAssertTrue(all.allSatisfy(\.onLoop), "completions run on the loop that called")
            XCTAssertTrue(all.allSatisfy { !$0.insideCall }, "no completion inside the submitting call")
            XCTAssertTrue(all.allSatisfy(\.ok), "every challenge was stored")
        }
    }

    func testRedisRestartFailsClosedThenRecovers() throws {
        let server = try RedisServer()
        let (store, loops) = try makeStore(server)
        try StoreReadiness.waitUntilReady(store)
        server.stop()
        let down = CompletionBox<Bool>()
        loops[0].execute { store.ping { down.put((try? $0.get()) != nil) } }
        XCTAssertEqual(down.take(timeout: 10), false, "Redis down: the command fails (unavailable), no silent success")
        try server.start()
        try StoreReadiness.waitUntilReady(store)
        let up = CompletionBox<Bool>()
        loops[1].execute { store.ping { up.put((try? $0.get()) != nil) } }
        XCTAssertEqual(up.take(timeout: 10), true, "reconnected in the loop after the restart")
    }
}
