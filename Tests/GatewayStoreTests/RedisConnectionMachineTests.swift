import GatewayStore
@testable import GatewayRedis
import XCTest

/// The connection state machine without sockets: events in, actions out.
final class RedisConnectionMachineTests: XCTestCase {
    typealias Machine = RedisConnectionMachine<Int>
    private let ms: UInt64 = 1_000_000
    private let ok = RedisReply.status(Array("OK".utf8))

    private func makeMachine(handshake: [(command: [UInt8], expected: RedisReply)]? = nil, maximumPending: Int = 100) -> Machine {
        Machine(handshake: handshake ?? [(Array("AUTH".utf8), ok), (Array("LOAD".utf8), .bulk(Array("sha".utf8)))],
                commandTimeout: 200 * ms, connectTimeout: 1_000 * ms, maximumPending: maximumPending,
                backoff: ReconnectBackoff(base: 50 * ms, cap: 1_000 * ms), seed: 7)
    }

    /// A readable summary of actions.
    private func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .connect: return "connect"
            case .write(let bytes): return "write \(String(decoding: bytes, as: UTF8.self))"
            case .deliver(let token, let reply): return "deliver \(token) \(reply)"
            case .fail(let token, let error): return "fail \(token) \(error.reason)"
            case .closeSocket: return "close"
            }
        }
    }

    private func connectAndHandshake(_ machine: inout Machine, now: UInt64 = 0) {
        XCTAssertEqual(describe(machine.start(now: now)), ["connect"])
        XCTAssertEqual(describe(machine.connected(now: now)), ["write AUTHLOAD"])
        XCTAssertEqual(describe(machine.received(ok, now: now)), [])
        _ = machine.received(.bulk(Array("sha".utf8)), now: now)
        XCTAssertEqual(machine.state, .ready)
    }

    func testCommandsWaitForTheHandshakeThenPipelineInOrder() {
        var machine = makeMachine()
        XCTAssertEqual(describe(machine.start(now: 0)), ["connect"])
        XCTAssertEqual(describe(machine.submit(1, bytes: Array("A".utf8), now: 0)), [], "waits while connecting")
        XCTAssertEqual(describe(machine.connected(now: 1)), ["write AUTHLOAD"], "handshake only: never run unauthenticated")
        XCTAssertEqual(describe(machine.submit(2, bytes: Array("B".utf8), now: 2)), [])
        XCTAssertEqual(describe(machine.received(ok, now: 3)), [])
        XCTAssertEqual(describe(machine.received(.bulk(Array("sha".utf8)), now: 4)), ["write AB"])
        XCTAssertEqual(describe(machine.submit(3, bytes: Array("C".utf8), now: 5)), ["write C"])
        XCTAssertEqual(machine.pendingCount, 3)
        XCTAssertEqual(describe(machine.received(.integer(1), now: 6)), ["deliver 1 integer(1)"])
        XCTAssertEqual(describe(machine.received(.error(Array("OOM x".utf8)), now: 6)), ["deliver 2 error([79, 79, 77, 32, 120])"])
        XCTAssertEqual(describe(machine.received(.integer(3), now: 6)), ["deliver 3 integer(3)"])
        XCTAssertEqual(machine.pendingCount, 0)
    }

    /// A command given to a connection that never tried yet (made, its `start` still queued) starts
    /// the connection and waits for it; once an attempt failed, commands fail fast during the back-off.
    /// (A Redis Cluster store's first map request went out on new connections and failed "not
    /// connected yet": the store stayed unavailable until the next refresh, 5 s later.)
    func testACommandBeforeTheFirstAttemptConnectsAndWaits() {
        var machine = makeMachine()
        XCTAssertEqual(describe(machine.submit(1, bytes: Array("A".utf8), now: 0)), ["connect"])
        XCTAssertEqual(machine.state, .connecting(deadline: 1_000 * ms))
        XCTAssertEqual(describe(machine.start(now: 1)), [], "the queued start finds it connecting")
        XCTAssertEqual(describe(machine.connected(now: 2)), ["write AUTHLOAD"])
        XCTAssertEqual(describe(machine.received(ok, now: 3)), [])
        XCTAssertEqual(describe(machine.received(.bulk(Array("sha".utf8)), now: 4)), ["write A"])
        XCTAssertEqual(describe(machine.received(.integer(1), now: 5)), ["deliver 1 integer(1)"])
        // Failing variant: after a failed attempt the back-off still fails commands fast.
        var failed = makeMachine()
        _ = failed.start(now: 0)
        _ = failed.connectFailed(now: 10, detail: "refused")
        XCTAssertEqual(describe(failed.submit(2, bytes: [1], now: 11)), ["fail 2 notConnected"])
    }

    func testHandshakeRefusalFailsWaitingCommandsAndBacksOff() {
        var machine = makeMachine()
        _ = machine.start(now: 0)
        _ = machine.submit(1, bytes: [1], now: 0)
        _ = machine.connected(now: 0)
        let actions = describe(machine.received(.error(Array("WRONGPASS invalid".utf8)), now: 10))
        XCTAssertEqual(actions, ["close", "fail 1 notConnected"])
        guard case .backoff(let until) = machine.state else { return XCTFail("\(machine.state)") }
        XCTAssertTrue(until >= 10 + 25 * ms && until <= 10 + 50 * ms, "first backoff in [base/2, base]")
        XCTAssertTrue(machine.lastError.contains("WRONGPASS"))
        XCTAssertEqual(describe(machine.submit(2, bytes: [2], now: 11)), ["fail 2 notConnected"], "fail fast while down")
        XCTAssertEqual(describe(machine.tick(now: until - 1)), [])
        XCTAssertEqual(describe(machine.tick(now: until)), ["connect"])
    }

    func testUnexpectedHandshakeReplyIsRefused() {
        var machine = makeMachine()
        _ = machine.start(now: 0)
        _ = machine.connected(now: 0)
        _ = machine.received(ok, now: 0)
        XCTAssertEqual(describe(machine.received(.bulk(Array("other-sha".utf8)), now: 0)), ["close"])
        guard case .backoff = machine.state else { return XCTFail("\(machine.state)") }
    }

    func testTimeoutFailsEveryPendingCommandAndResets() {
        var machine = makeMachine()
        connectAndHandshake(&machine)
        _ = machine.submit(1, bytes: [1], now: 100 * ms)
        _ = machine.submit(2, bytes: [2], now: 150 * ms)
        XCTAssertEqual(machine.nextDeadline, 300 * ms)
        XCTAssertEqual(describe(machine.tick(now: 299 * ms)), [])
        XCTAssertEqual(describe(machine.tick(now: 300 * ms)), ["close", "fail 1 timeout", "fail 2 timeout"])
        guard case .backoff = machine.state else { return XCTFail("\(machine.state)") }
        XCTAssertEqual(machine.pendingCount, 0)
    }

    func testLateReplyAfterResetIsIgnored() {
        var machine = makeMachine()
        connectAndHandshake(&machine)
        _ = machine.submit(1, bytes: [1], now: 0)
        _ = machine.tick(now: 200 * ms)
        XCTAssertEqual(describe(machine.received(.integer(1), now: 201 * ms)), [], "a reply from the old socket delivers nothing")
    }

    func testConnectionLostFailsPendingAsUnknownOutcome() {
        var machine = makeMachine()
        connectAndHandshake(&machine)
        _ = machine.submit(1, bytes: [1], now: 0)
        XCTAssertEqual(describe(machine.connectionLost(now: 1, detail: "EOF")), ["close", "fail 1 connectionLost"])
    }

    func testConnectFailureAndConnectTimeout() {
        var machine = makeMachine()
        _ = machine.start(now: 0)
        _ = machine.submit(1, bytes: [1], now: 0)
        XCTAssertEqual(describe(machine.connectFailed(now: 5, detail: "refused")), ["fail 1 notConnected"])
        guard case .backoff(let until) = machine.state else { return XCTFail() }
        XCTAssertEqual(describe(machine.tick(now: until)), ["connect"])
        XCTAssertEqual(machine.nextDeadline, until + 1_000 * ms)
        XCTAssertEqual(describe(machine.tick(now: until + 1_000 * ms)), ["close"])
        guard case .backoff(let second) = machine.state else { return XCTFail() }
        XCTAssertTrue(second - (until + 1_000 * ms) >= 50 * ms, "second failure waits longer (>= base)")
    }

    func testWaitingCommandTimesOutWhileConnecting() {
        var machine = makeMachine()
        _ = machine.start(now: 0)
        _ = machine.submit(1, bytes: [1], now: 0)
        XCTAssertEqual(machine.nextDeadline, 200 * ms)
        XCTAssertEqual(describe(machine.tick(now: 200 * ms)), ["fail 1 timeout"])
        XCTAssertEqual(machine.state, .connecting(deadline: 1_000 * ms))
    }

    func testQueueIsBounded() {
        var machine = makeMachine(maximumPending: 2)
        _ = machine.start(now: 0)
        XCTAssertEqual(describe(machine.submit(1, bytes: [1], now: 0)), [])
        XCTAssertEqual(describe(machine.submit(2, bytes: [2], now: 0)), [])
        XCTAssertEqual(describe(machine.submit(3, bytes: [3], now: 0)), ["fail 3 overloaded"])
        _ = machine.connected(now: 0)
        _ = machine.received(ok, now: 0)
        _ = machine.received(.bulk(Array("sha".utf8)), now: 0)
        XCTAssertEqual(describe(machine.submit(4, bytes: [4], now: 0)), ["fail 4 overloaded"])
        _ = machine.received(.integer(1), now: 0)
        XCTAssertEqual(describe(machine.submit(5, bytes: Array("E".utf8), now: 0)), ["write E"])
    }

    func testReplyWithoutPendingCommandResets() {
        var machine = makeMachine(handshake: [])
        _ = machine.start(now: 0)
        XCTAssertEqual(describe(machine.connected(now: 0)), [])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(describe(machine.received(.integer(1), now: 0)), ["close"])
    }

    func testCloseFailsEverythingAndStaysClosed() {
        var machine = makeMachine()
        connectAndHandshake(&machine)
        _ = machine.submit(1, bytes: [1], now: 0)
        XCTAssertEqual(describe(machine.close()), ["fail 1 closed", "close"])
        XCTAssertEqual(describe(machine.submit(2, bytes: [2], now: 0)), ["fail 2 closed"])
        XCTAssertEqual(describe(machine.tick(now: .max)), [])
        XCTAssertEqual(machine.state, .closed)
    }

    func testBackoffGrowsAndIsCappedAcrossFailures() {
        var machine = makeMachine()
        var now: UInt64 = 0
        _ = machine.start(now: now)
        var delays = [UInt64]()
        for _ in 0..<10 {
            _ = machine.connectFailed(now: now, detail: "refused")
            guard case .backoff(let until) = machine.state else { return XCTFail() }
            delays.append(until - now)
            now = until
            _ = machine.tick(now: now)
        }
        XCTAssertTrue(delays.allSatisfy { $0 <= 1_000 * ms }, "capped: \(delays)")
        XCTAssertTrue(delays.suffix(4).allSatisfy { $0 >= 500 * ms }, "reaches the cap region: \(delays)")
        XCTAssertGreaterThan(Set(delays.suffix(4)).count, 1, "jittered")
        connectAndHandshakeAfterFailures(&machine, now: now)
        XCTAssertEqual(machine.failedAttempts, 0)
    }

    private func connectAndHandshakeAfterFailures(_ machine: inout Machine, now: UInt64) {
        _ = machine.connected(now: now)
        _ = machine.received(ok, now: now)
        _ = machine.received(.bulk(Array("sha".utf8)), now: now)
        XCTAssertEqual(machine.state, .ready)
    }
}
