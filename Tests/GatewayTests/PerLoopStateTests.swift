import AppAttest
import AttestCrypto
import Dispatch
@testable import Gateway
@testable import GatewayHTTP
import GatewayStore
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Per-event-loop state on the request path (the key cache, metrics and the access log keep one
/// shard per loop): what one loop learns or counts, and what a scrape or flush sees of all loops;
/// and the access log never blocking the loop that logs, even when its output is stuck.
final class PerLoopStateTests: XCTestCase {
    private func record(loop: Int, route: String = "r", status: Int = 200) -> (HTTPAccessRecord, RequestLogContext) {
        let info = HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:9", localAddress: "127.0.0.1:8", loopIndex: loop)
        let record = HTTPAccessRecord(connection: info, method: .get, target: Array("/p?q=1".utf8), status: status,
                                      error: nil, requestBodyBytes: 0, responseBodyBytes: 5, latencyNanoseconds: 1_000_000,
                                      upstream: nil, aborted: false)
        return (record, RequestLogContext(route: route))
    }

    /// The lines an `AccessLog` of `loops` loops writes to a pipe while `body` logs, after a flush.
    private func linesWritten(loops: Int, _ body: (AccessLog) -> Void) -> [Substring] {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let log = AccessLog(fd: fds[1], clock: GatewayClock(now: { 1_700_000_000_000 }), loops: loops)
        body(log)
        XCTAssertTrue(log.flush(waitingAtMost: .seconds(30)))
        close(fds[1])
        var text = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            if n <= 0 { break }
            text += buffer[0..<n]
        }
        return String(decoding: text, as: UTF8.self).split(separator: "\n")
    }

    func testKeyCacheShardsArePerLoopAndAttestedKeysReachEveryLoop() throws {
        let cache = KeyCache(shards: 2)
        let keyId = try KeyID([UInt8](repeating: 1, count: 32))
        let other = try KeyID([UInt8](repeating: 2, count: 32))
        let device = try ECPrivateKey(generatingOn: .p256)
        let key = CachedKey(keyId: keyId, publicKey: try P256PublicKey(x963: device.publicKeyPoint), app: AppPolicy(appId: "TEAM123456.a.b", environment: .any),
                            environment: .production)
        cache.put(keyId, key, shard: 0)
        XCTAssertNotNil(cache.get(keyId, shard: 0), "the loop that fetched the key has it")
        XCTAssertNil(cache.get(keyId, shard: 1), "another loop has its own shard")
        cache.put(other, key, shard: nil)
        XCTAssertNotNil(cache.get(other, shard: 0))
        XCTAssertNotNil(cache.get(other, shard: 1), "an attested key is put into every loop's shard")
        XCTAssertEqual(cache.count, 3)
        cache.remove(other)
        XCTAssertNil(cache.get(other, shard: 0))
        XCTAssertNil(cache.get(other, shard: 1), "a key the store no longer knows leaves every shard")
        XCTAssertEqual(cache.count, 1)
    }

    /// A cached key is used for `maximumAge` at most (manual clock): then it is a miss, dropped, and
    /// the next request reads the store, so a key forgotten and registered again elsewhere, or revoked
    /// by an operator, is seen within that time (before, a replica kept the old record until restart).
    func testKeyCacheEntriesAgeOut() throws {
        let clock = Atomic<UInt64>(1_000)
        let cache = KeyCache(shards: 1, maximumAge: 60_000, now: { clock.load(ordering: .relaxed) })
        XCTAssertEqual(KeyCache.defaultMaximumAge, 60_000_000_000, "60 s in production")
        let keyId = try KeyID([UInt8](repeating: 3, count: 32))
        let device = try ECPrivateKey(generatingOn: .p256)
        let key = CachedKey(keyId: keyId, publicKey: try P256PublicKey(x963: device.publicKeyPoint),
                            app: AppPolicy(appId: "TEAM123456.a.b", environment: .any), environment: .production)
        cache.put(keyId, key, shard: 0)
        clock.store(1_000 + 59_999, ordering: .relaxed)
        XCTAssertNotNil(cache.get(keyId, shard: 0), "younger than the maximum age: a hit")
        clock.store(1_000 + 60_000, ordering: .relaxed)
        XCTAssertNil(cache.get(keyId, shard: 0), "as old as the maximum age: a miss")
        XCTAssertEqual(cache.count, 0, "and dropped")
        cache.put(keyId, key, shard: nil)
        XCTAssertNotNil(cache.get(keyId, shard: 0), "cached again: its age starts over")
    }

    func testMetricsScrapeSumsEveryLoop() {
        let metrics = GatewayMetrics(loops: 2)
        for loop in [0, 1, 1] {
            let (r, c) = record(loop: loop)
            metrics.record(r, context: c)
        }
        XCTAssertEqual(metrics.requests(route: "r", status: 200), 3)
        let text = metrics.prometheusText()
        XCTAssertTrue(text.contains("attest_gateway_requests_total{route=\"r\",status=\"200\",verdict=\"none\",protocol=\"h1\",tls=\"none\"} 3"), text)
        XCTAssertTrue(text.contains("attest_gateway_request_duration_seconds_count{route=\"r\"} 3"), text)
        XCTAssertTrue(text.contains("attest_gateway_request_duration_seconds_bucket{route=\"r\",le=\"0.001\"} 3"), text)
    }

    func testAccessLogWritesEveryLoopsLinesOnFlush() throws {
        let lines = linesWritten(loops: 2) { log in
            for loop in [0, 1, 0] {
                let (r, c) = record(loop: loop, route: "route-\(loop)")
                log.write(r, context: c)
            }
        }
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines.filter { $0.contains("\"route\":\"route-0\"") }.count, 2)
        XCTAssertEqual(lines.filter { $0.contains("\"route\":\"route-1\"") }.count, 1)
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"path\":\"/p\"") }, "the query is never logged")
    }

    /// A request no route took (no route matched, or its head never parsed: no context) is logged with
    /// `"route":"none"`, the README's word and the metrics' label, never `null`.
    func testAccessLineWithoutARouteSaysNone() throws {
        let info = HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:9", localAddress: "127.0.0.1:8", loopIndex: 0)
        let unparsed = HTTPAccessRecord(connection: info, method: nil, target: nil, status: 400, error: .badRequestLine,
                                        requestBodyBytes: 0, responseBodyBytes: 5, latencyNanoseconds: 0, upstream: nil, aborted: false)
        let lines = linesWritten(loops: 1) { log in
            log.write(unparsed, context: nil)
            let (routed, context) = record(loop: 0, route: "r")
            log.write(routed, context: context)
        }
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines[0].contains("\"route\":\"none\""), String(lines[0]))
        XCTAssertTrue(lines[1].contains("\"route\":\"r\""), String(lines[1]))
    }

    /// Without a flush call, the log's own timer writes a line out (armed by the first line after a
    /// write, one-shot, so an idle log never wakes), and again for a line after an idle period.
    func testAccessLogWritesOnItsOwnTimerAndRearmsAfterEachWrite() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let log = AccessLog(fd: fds[1], clock: GatewayClock(now: { 1_700_000_000_000 }), loops: 1)
        func readUntil(_ needle: String) -> Bool {
            var text = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                let n = read(fds[0], &buffer, buffer.count)
                if n > 0 { text += buffer[0..<n] } else { Thread.sleep(forTimeInterval: 0.01) }
                if String(decoding: text, as: UTF8.self).contains(needle) { return true }
            }
            return false
        }
        for round in ["first", "second", "third"] {
            let (r, c) = record(loop: 0, route: "route-\(round)")
            log.write(r, context: c)
            XCTAssertTrue(readUntil("\"route\":\"route-\(round)\""), "the \(round) line is written without a flush")
        }
    }

    /// The output is a pipe nobody reads: the writer queue blocks in write(2), the logging thread (an
    /// event loop in production) does not; past the per-loop bound, lines are dropped and counted.
    func testAccessLogNeverBlocksTheLoggingThreadWhenItsOutputIsStuck() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let log = AccessLog(fd: fds[1], clock: GatewayClock(now: { 1_700_000_000_000 }), loops: 1)
        let finished = DispatchSemaphore(value: 0)
        let (r, c) = record(loop: 0, route: String(repeating: "x", count: 200))
        DispatchQueue.global().async {
            // About 12 MiB of lines: far more than the pipe (64 KiB) and the loop's bound (4 MiB) hold.
            for _ in 0..<40_000 { log.write(r, context: c) }
            finished.signal()
        }
        let returned = finished.wait(timeout: .now() + 60) == .success
        XCTAssertTrue(returned, "logging blocked on a stuck output")
        XCTAssertGreaterThan(log.droppedLines, 0, "lines beyond the per-loop bound are dropped and counted")
        // A flush on a stuck output gives up at its bound (shutdown), and an asked-for one never waits
        // (SIGUSR1, on the main queue with the other signal handlers); the unbounded wait that was
        // here before held SIGTERM forever.
        XCTAssertFalse(log.flush(waitingAtMost: .milliseconds(200)), "the stuck output did not take the lines")
        log.flushSoon()
        // Unstick the writer: drain the pipe until the writer has written everything it took.
        let readEnd = fds[0]
        let reader = DispatchQueue(label: "drain")
        let drained = Atomic<Bool>(false)
        reader.async {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while read(readEnd, &buffer, buffer.count) > 0 {}
            drained.store(true, ordering: .relaxed)
        }
        XCTAssertTrue(log.flush(waitingAtMost: .seconds(30)))
        close(fds[1])
        reader.sync {}
        XCTAssertTrue(drained.load(ordering: .relaxed))
        close(fds[0])
    }
}
