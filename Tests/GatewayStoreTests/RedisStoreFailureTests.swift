import Foundation
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// Redis-specific behaviour on real redis-server processes: outages, restarts from the AOF, command
/// timeouts, NOSCRIPT, error replies (OOM, READONLY), AUTH/SELECT, Unix sockets, pipelining.
/// No timing assertions: loops that wait for recovery are bounded hang guards, not measurements.
final class RedisStoreFailureTests: XCTestCase {
    private func makeStore(_ url: String, commandTimeout: Int = 1_000, connectTimeout: Int = 1_000,
                           connections: Int = 1) throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: url))
        configuration.commandTimeout = commandTimeout
        configuration.connectTimeout = connectTimeout
        configuration.reconnectBaseDelay = 20
        configuration.reconnectMaximumDelay = 200
        configuration.connections = connections
        return try RedisStore(configuration: configuration)
    }

    private func unavailable<T>(_ result: Result<T, StoreUnavailable>, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) -> StoreUnavailable? {
        switch result {
        case .failure(let error): return error
        case .success(let value):
            XCTFail("\(what): expected store_unavailable, got \(value)", file: file, line: line)
            return nil
        }
    }

    func testRedisStoppedFailsFastThenReconnectsFromAOFWithoutLosingCounters() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        for counter in 1...20 as ClosedRange<UInt32> { try suite.commit(record.keyId, counter: counter) }
        let pending = try suite.issueAssert(record.keyId)

        server.stop()
        for attempt in 0..<20 {
            let result = try suite.wait("commit while down") {
                store.commitAssertion(keyId: record.keyId, challenge: pending, counter: 21 + UInt32(attempt), window: 0,
                                      now: suite.baseNow, completion: $0)
            }
            _ = unavailable(result, "commit while Redis is down")
        }
        _ = unavailable(try suite.wait("fetch while down") { store.fetchKey(record.keyId, completion: $0) }, "fetch")
        _ = unavailable(try suite.wait("issue while down") {
            store.issueChallenge(try suite.randomChallenge(), keyId: record.keyId, purpose: .assert,
                                 expiresAt: suite.baseNow + 1_000, now: suite.baseNow, completion: $0)
        }, "issue")
        let ping = unavailable(try suite.wait("ping while down") { store.ping(completion: $0) }, "ping")
        XCTAssertNotNil(ping)

        try server.start()  // same port, same folder: replays the append-only file
        try StoreReadiness.waitUntilReady(store)
        XCTAssertEqual(try suite.fetch(record.keyId)?.counter, 20, "every acknowledged counter survived the restart")
        try suite.expectCommit(record.keyId, pending, counter: 20, now: suite.baseNow, refused: .counterReplay)
        try suite.expectCommit(record.keyId, pending, counter: 21, now: suite.baseNow, accepted: true)
    }

    /// Redis stopped while commits are in flight: each completes as accepted or unavailable (never
    /// hangs), and after the restart from the AOF every acknowledged counter is still there (replays).
    func testStopWithCommitsInFlightLosesNoAcknowledgedCounter() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url, commandTimeout: 2_000)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        // Batches of pipelined commits keep flowing while another thread stops Redis; stop at the first
        // batch with a failure (the stop landed mid-flight) or after 20 batches.
        let stopped = DispatchSemaphore(value: 0)
        let stopper = Thread { server.stop(); stopped.signal() }
        var acknowledged = [UInt32]()
        var failures = 0
        var next: UInt32 = 1
        let issued = try (0..<20).map { _ in try (0..<300).map { _ in try suite.issueAssert(record.keyId) } }
        for batch in 0..<20 {
            if batch == 1 { stopper.start() }
            let challenges = issued[batch]
            let boxes = (0..<300).map { _ in CompletionBox<Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>>() }
            let first = next
            for i in 0..<300 {
                store.commitAssertion(keyId: record.keyId, challenge: challenges[i], counter: first + UInt32(i), window: 128,
                                      now: suite.baseNow) { boxes[i].put($0) }
            }
            next += 300
            for (i, box) in boxes.enumerated() {
                guard let result = box.take(timeout: 30) else { return XCTFail("commit never completed") }
                switch result {
                case .success(.accepted): acknowledged.append(first + UInt32(i))
                case .success(.refused(let reason)): XCTFail("commit refused: \(reason)")
                case .failure: failures += 1
                }
            }
            if failures > 0 { break }
        }
        stopped.wait()
        try server.start()
        try StoreReadiness.waitUntilReady(store)
        print("stop during traffic: \(acknowledged.count) commits acknowledged, \(failures) unavailable")
        XCTAssertGreaterThan(failures, 0, "the stop landed while commits were flowing")
        let stored = try XCTUnwrap(try suite.fetch(record.keyId))
        XCTAssertGreaterThanOrEqual(stored.counter, acknowledged.max() ?? 0)
        for counter in acknowledged.suffix(300) {  // the most recent ones: the ones a lost write would drop
            try suite.expectCommit(record.keyId, try suite.issueAssert(record.keyId), counter: counter, window: 128,
                                   now: suite.baseNow, refused: .counterReplay)
        }
    }

    func testConnectionRefusedFailsFastAsUnavailable() throws {
        let dead = try ReservedPort()  // bound, never listening: connections are refused
        defer { withExtendedLifetime(dead) {} }
        let store = try makeStore("redis://127.0.0.1:\(dead.port)/0", commandTimeout: 500)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let keyId = try suite.randomKeyId()
        for _ in 0..<10 {
            let error = unavailable(try suite.wait("commit") {
                store.commitAssertion(keyId: keyId, challenge: try suite.randomChallenge(), counter: 1, window: 0,
                                      now: suite.baseNow, completion: $0)
            }, "commit without Redis")
            if let error { XCTAssertTrue([.notConnected, .timeout].contains(error.reason), "\(error)") }
        }
    }

    func testCommandTimeoutWhileRedisIsPausedIsUnavailableThenRecovers() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url, commandTimeout: 200, connectTimeout: 300)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        try suite.commit(record.keyId, counter: 1)
        let pending = try suite.issueAssert(record.keyId)

        // CLIENT PAUSE holds every command of other clients: the commit below is sent and stays unanswered.
        XCTAssertEqual(try server.cli("CLIENT", "PAUSE", "1500", "ALL"), "OK")
        let result = try suite.wait("commit while paused") {
            store.commitAssertion(keyId: record.keyId, challenge: pending, counter: 2, window: 0, now: suite.baseNow, completion: $0)
        }
        XCTAssertEqual(unavailable(result, "commit while paused")?.reason, .timeout)
        // While Redis stays unresponsive nothing is accepted.
        let second = try suite.wait("commit while paused") {
            store.commitAssertion(keyId: record.keyId, challenge: pending, counter: 3, window: 0, now: suite.baseNow, completion: $0)
        }
        _ = unavailable(second, "second commit while paused")

        try StoreReadiness.waitUntilReady(store)
        let counter = try suite.fetch(record.keyId)?.counter
        XCTAssertTrue(counter == 1 || counter == 2 || counter == 3, "timed-out commands have an unknown outcome: \(String(describing: counter))")
        try suite.expectCommit(record.keyId, try suite.issueAssert(record.keyId), counter: 10, now: suite.baseNow, accepted: true)
    }

    func testDebugSleepTimesOutPendingCommandThenRecovers() throws {
        let server = try CustomRedisServer(extra: ["--enable-debug-command", "local"])
        let store = try makeStore(server.url, commandTimeout: 200, connectTimeout: 300)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)

        let sleeper = try ChildProcess("redis-cli", ["-p", String(server.port), "DEBUG", "SLEEP", "2"])
        var firstFailure: StoreUnavailable?
        for _ in 0..<400 {  // until a ping is caught by the sleep (bounded)
            if case .failure(let error) = try suite.wait("ping", { store.ping(completion: $0) }) { firstFailure = error; break }
            usleep(5_000)
        }
        XCTAssertEqual(firstFailure?.reason, .timeout, "a command pending during DEBUG SLEEP times out as unavailable")
        let during = try suite.wait("commit during sleep") {
            store.commitAssertion(keyId: record.keyId, challenge: try suite.randomChallenge(), counter: 1, window: 0,
                                  now: suite.baseNow, completion: $0)
        }
        _ = unavailable(during, "commit during DEBUG SLEEP")
        XCTAssertEqual(sleeper.wait(), 0, sleeper.output)
        try StoreReadiness.waitUntilReady(store)
        try suite.commit(record.keyId, counter: 1)
    }

    func testNoScriptAfterScriptFlushFallsBackToEval() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        try suite.commit(record.keyId, counter: 1)
        XCTAssertEqual(try evalCalls(server), 0, "hot path uses EVALSHA only")

        XCTAssertEqual(try server.cli("SCRIPT", "FLUSH"), "OK")
        try suite.commit(record.keyId, counter: 2)  // issue + commit scripts: NOSCRIPT, then EVAL each
        XCTAssertEqual(try evalCalls(server), 2, "one EVAL fallback per script after NOSCRIPT")
        try suite.commit(record.keyId, counter: 3)  // EVAL cached the scripts again: EVALSHA works
        XCTAssertEqual(try evalCalls(server), 2)
        XCTAssertEqual(try suite.fetch(record.keyId)?.counter, 3)
    }

    /// `calls` of `cmdstat_eval` in `INFO commandstats` (0 when EVAL never ran).
    private func evalCalls(_ server: RedisServer) throws -> Int {
        let info = try server.cli("INFO", "commandstats")
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_eval:") }) else { return 0 }
        let calls = line.dropFirst("cmdstat_eval:calls=".count).prefix { $0.isNumber }
        return Int(calls) ?? -1
    }

    func testOutOfMemoryErrorReplyIsUnavailableAndChangesNothing() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        try suite.commit(record.keyId, counter: 1)
        let pending = try suite.issueAssert(record.keyId)
        let attest = try suite.randomChallenge()
        let newcomer = try suite.makeRecord()
        try suite.issue(attest, keyId: newcomer.keyId, purpose: .attest, expiresAt: suite.baseNow + 300_000, now: suite.baseNow)

        XCTAssertEqual(try server.cli("CONFIG", "SET", "maxmemory", "1"), "OK")
        let commit = try suite.wait("commit under OOM") {
            store.commitAssertion(keyId: record.keyId, challenge: pending, counter: 2, window: 0, now: suite.baseNow, completion: $0)
        }
        XCTAssertEqual(unavailable(commit, "commit under OOM")?.reason, .errorReply("OOM"))
        let register = try suite.wait("register under OOM") { store.registerKey(newcomer, challenge: attest, now: suite.baseNow, completion: $0) }
        XCTAssertEqual(unavailable(register, "register under OOM")?.reason, .errorReply("OOM"))
        let issue = try suite.wait("issue under OOM") {
            store.issueChallenge(try suite.randomChallenge(), keyId: record.keyId, purpose: .assert,
                                 expiresAt: suite.baseNow + 1_000, now: suite.baseNow, completion: $0)
        }
        XCTAssertEqual(unavailable(issue, "issue under OOM")?.reason, .errorReply("OOM"))
        // An error reply keeps the connection: reads still work.
        XCTAssertEqual(try suite.fetch(record.keyId)?.counter, 1)

        XCTAssertEqual(try server.cli("CONFIG", "SET", "maxmemory", "0"), "OK")
        XCTAssertEqual(try suite.fetch(newcomer.keyId), nil, "nothing was registered")
        // Nothing was consumed: both challenges are still pending.
        try suite.expectCommit(record.keyId, pending, counter: 2, now: suite.baseNow, accepted: true)
        try suite.expectRegister(newcomer, challenge: attest, now: suite.baseNow, accepted: true)
    }

    func testReadOnlyReplicaErrorReplyIsUnavailableAndChangesNothing() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        let pending = try suite.issueAssert(record.keyId)

        // A replica of a master that does not exist: reads served, writes refused with READONLY.
        let noMaster = try ReservedPort()
        defer { withExtendedLifetime(noMaster) {} }
        XCTAssertEqual(try server.cli("REPLICAOF", "127.0.0.1", String(noMaster.port)), "OK")
        let commit = try suite.wait("commit on replica") {
            store.commitAssertion(keyId: record.keyId, challenge: pending, counter: 1, window: 0, now: suite.baseNow, completion: $0)
        }
        XCTAssertEqual(unavailable(commit, "commit on a read-only replica")?.reason, .errorReply("READONLY"))
        XCTAssertEqual(try server.cli("REPLICAOF", "NO", "ONE"), "OK")
        XCTAssertEqual(try suite.fetch(record.keyId)?.counter, 0)
        try suite.expectCommit(record.keyId, pending, counter: 1, now: suite.baseNow, accepted: true)
    }

    func testAuthAndSelectOnConnect() throws {
        let server = try RedisServer()
        XCTAssertEqual(try server.cli("CONFIG", "SET", "requirepass", "s3cret:@/"), "OK")
        let store = try makeStore("redis://:s3cret%3A%40%2F@127.0.0.1:\(server.port)/5")
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        let key = "aa:{\(record.keyId)}:key"
        let inDb5 = try ChildProcess.run("redis-cli", ["-p", String(server.port), "-a", "s3cret:@/", "--no-auth-warning", "-n", "5", "EXISTS", key])
        let inDb0 = try ChildProcess.run("redis-cli", ["-p", String(server.port), "-a", "s3cret:@/", "--no-auth-warning", "-n", "0", "EXISTS", key])
        XCTAssertEqual(inDb5.output.trimmingCharacters(in: .whitespacesAndNewlines), "1", "record written in db 5")
        XCTAssertEqual(inDb0.output.trimmingCharacters(in: .whitespacesAndNewlines), "0", "not in db 0")

        // ACL user with username:password.
        _ = try ChildProcess.run("redis-cli", ["-p", String(server.port), "-a", "s3cret:@/", "--no-auth-warning",
                                               "ACL", "SETUSER", "gateway", "on", ">pw", "~*", "+@all"])
        let aclStore = try makeStore("redis://gateway:pw@127.0.0.1:\(server.port)/5")
        defer { aclStore.close() }
        XCTAssertEqual(try StoreConformance(store: aclStore).fetch(record.keyId), try suite.fetch(record.keyId))

        // A wrong password never connects: every command is unavailable, nothing runs unauthenticated.
        let wrong = try makeStore("redis://:nope@127.0.0.1:\(server.port)/5", commandTimeout: 500)
        defer { wrong.close() }
        let error = unavailable(try suite.wait("ping") { wrong.ping(completion: $0) }, "ping with a wrong password")
        XCTAssertEqual(error?.reason, .notConnected)
        XCTAssertTrue(error?.detail.contains("WRONGPASS") ?? false, error?.detail ?? "")
    }

    func testSelectOfMissingDatabaseNeverRunsCommandsInDatabaseZero() throws {
        let server = try RedisServer()  // 16 databases by default
        let store = try makeStore("redis://127.0.0.1:\(server.port)/99", commandTimeout: 500)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let keyId = try suite.randomKeyId()
        let issue = try suite.wait("issue") {
            store.issueChallenge(try suite.randomChallenge(), keyId: keyId, purpose: .assert, expiresAt: suite.baseNow + 1_000,
                                 now: suite.baseNow, completion: $0)
        }
        XCTAssertEqual(unavailable(issue, "issue with SELECT 99")?.reason, .notConnected)
        XCTAssertEqual(try server.cli("DBSIZE"), "0", "nothing written to db 0")
    }

    func testUnixSocketURL() throws {
        let server = try CustomRedisServer(unixSocket: true)
        let path = try XCTUnwrap(server.unixSocket)
        let store = try makeStore("unix://\(path)?db=2")
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        try suite.commit(record.keyId, counter: 1)
        XCTAssertEqual(try suite.fetch(record.keyId)?.counter, 1)
        XCTAssertEqual(try server.cli("-n", "2", "HGET", "aa:{\(record.keyId)}:key", "ctr"), "1")
    }

    func testChallengeTTLIsLifetimePlusGraceAndKeyRecordHasNone() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        let challenge = try suite.randomChallenge()
        try suite.issue(challenge, keyId: record.keyId, purpose: .assert, expiresAt: suite.baseNow + 300_000, now: suite.baseNow)
        let name = "aa:{\(record.keyId)}:ch:\(String(decoding: challenge.base64URL, as: UTF8.self))"
        let ttl = try XCTUnwrap(Int(try server.cli("PTTL", name)))
        XCTAssertTrue(ttl > 300_000 && ttl <= 360_000, "TTL = 300 s lifetime + 60 s grace, got \(ttl) ms")
        XCTAssertEqual(try server.cli("HGET", name, "p"), "assert")
        XCTAssertEqual(try server.cli("PTTL", "aa:{\(record.keyId)}:key"), "-1", "key records never expire")
        let policy = try suite.wait("evictionPolicy") { store.evictionPolicy(completion: $0) }
        XCTAssertEqual(try policy.get(), "noeviction")
        XCTAssertEqual(try server.cli("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"), "OK")
        XCTAssertEqual(try suite.wait("evictionPolicy") { store.evictionPolicy(completion: $0) }.get(), "allkeys-lru",
                       "a misconfigured server is reported as such")
    }

    /// Many concurrent commands pipelined on one connection all complete, each with its own reply.
    /// (No throughput figure: speed is measured by `bench/run`, not by the suite.)
    func testPipelinedConcurrentCommitsEachGetTheirOwnReply() throws {
        let server = try RedisServer()
        let store = try makeStore(server.url, commandTimeout: 5_000)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let records = try (0..<50).map { _ in try suite.makeRecord() }
        for record in records { try suite.registerExpectingAccepted(record) }
        let perKey = 20
        let challenges = try records.map { record in try (0..<perKey).map { _ in try suite.issueAssert(record.keyId) } }
        let outcomes = try suite.race(count: records.count * perKey) { i, done in
            let k = i % records.count, n = i / records.count
            store.commitAssertion(keyId: records[k].keyId, challenge: challenges[k][n], counter: UInt32(n + 1), window: 64,
                                  now: suite.baseNow, completion: done)
        }
        XCTAssertTrue(outcomes.allSatisfy { $0.value != nil }, "every distinct counter inside the window accepted")
        for (k, record) in records.enumerated() where k % 10 == 0 {
            XCTAssertEqual(try suite.fetch(record.keyId)?.counter, UInt32(perKey))
        }
    }
}

/// Store construction from a URL and the flood behaviour while Redis is down.
final class RedisStoreConstructionTests: XCTestCase {
    func testStoreFromURL() throws {
        XCTAssertTrue(try AttestStores.make(url: "memory") is MemoryStore)
        XCTAssertThrowsError(try AttestStores.make(url: "memory:"), "the configuration's spelling only")
        let redis = try AttestStores.make(url: "redis://127.0.0.1:1/0")
        XCTAssertTrue(redis is RedisStore)
        redis.close()
        XCTAssertThrowsError(try AttestStores.make(url: "mysql://x"))
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: "redis://h"))
        configuration.keyPrefix = "a{b"
        XCTAssertThrowsError(try RedisStore(configuration: configuration))
        configuration.keyPrefix = "aa"
        configuration.connections = 0
        XCTAssertThrowsError(try RedisStore(configuration: configuration))
    }

    /// Thousands of commands while Redis is down all complete as unavailable: nothing queues without
    /// bound, nothing hangs.
    func testFloodWhileDownFailsEveryCommand() throws {
        let dead = try ReservedPort()
        defer { withExtendedLifetime(dead) {} }
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: "redis://127.0.0.1:\(dead.port)/0"))
        configuration.maximumPendingCommands = 64
        configuration.commandTimeout = 300
        let store = try RedisStore(configuration: configuration)
        defer { store.close() }
        let suite = StoreConformance(store: store)
        let keyId = try suite.randomKeyId()
        let challenge = try suite.randomChallenge()
        let boxes = (0..<5_000).map { _ in CompletionBox<Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>>() }
        DispatchQueue.concurrentPerform(iterations: boxes.count) { i in
            store.commitAssertion(keyId: keyId, challenge: challenge, counter: UInt32(i), window: 0, now: 0) { boxes[i].put($0) }
        }
        var reasons = [StoreUnavailable.Reason: Int]()
        for box in boxes {
            guard let result = box.take(timeout: 30) else { return XCTFail("a command never completed") }
            guard case .failure(let error) = result else { return XCTFail("accepted or refused without Redis: \(result)") }
            reasons[error.reason, default: 0] += 1
        }
        XCTAssertEqual(reasons.values.reduce(0, +), boxes.count)
        XCTAssertTrue(Set(reasons.keys).isSubset(of: [.notConnected, .overloaded, .timeout]), "\(reasons)")
        print("flood while down: \(reasons)")
    }
}
