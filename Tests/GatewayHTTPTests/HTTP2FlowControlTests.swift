import Foundation
@testable import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// A client that stops reading (TCP) or never opens its flow-control window (HTTP/2) never makes the
/// gateway buffer without bound: the stream and connection buffers stay within `HTTP2Settings`, the
/// upstream exchange pauses, and the write timeout ends the connection.
final class HTTP2FlowControlTests: XCTestCase {
    /// The HTTP/2 connections of `harness` with their buffered bytes (read on their loops).
    private func bufferSamples(_ harness: ProxyHarness) -> [(buffered: Int, queued: Int)] {
        harness.group.loops.flatMap { loop in
            loop.queue.sync {
                loop.allResidents.compactMap { $0 as? HTTP2ServerConnection }.map { ($0.bufferedResponseBytes, $0.queuedOutputBytes) }
            }
        }
    }

    /// Samples the buffers every 20 ms for `seconds`; returns the largest values seen and whether a
    /// connection was seen at all.
    private func maxBuffered(_ harness: ProxyHarness, seconds: Double) -> (buffered: Int, queued: Int, seen: Bool) {
        var result = (buffered: 0, queued: 0, seen: false)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            for s in bufferSamples(harness) {
                result.seen = true
                result.buffered = max(result.buffered, s.buffered)
                result.queued = max(result.queued, s.queued)
            }
            usleep(20_000)
        }
        return result
    }

    func testZeroWindowClientHoldsAtMostTheStreamBuffer() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 5, idle: 30, write: 2, linger: 0.5))
        defer { h.stop() }
        let client = try HTTP2Client.start(port: h.port, "zero-window")
        XCTAssertTrue(waitUntil(5) { !self.bufferSamples(h).isEmpty }, client.output)
        let seen = maxBuffered(h, seconds: 1)
        XCTAssertTrue(seen.seen)
        XCTAssertGreaterThan(seen.buffered, 0, "the response waits for the window")
        // One stream: its bound plus at most one upstream read (the loop's 64 KiB read buffer).
        XCTAssertLessThanOrEqual(seen.buffered, HTTP2Settings().streamBufferBytes + 65536, "the upstream was paused")
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        XCTAssertEqual(r["goaway"] as? String, "ENHANCE_YOUR_CALM", "\(r)")
        XCTAssertTrue(waitUntil(5) { self.bufferSamples(h).isEmpty }, "the connection is gone")
    }

    /// 100 streams whose responses all wait on a zero window: once the connection holds
    /// `connectionBufferBytes`, every stream's upstream read pauses at once (not each after a read
    /// of its own: 100 reads of up to 64 KiB would be 6.4 MiB).
    func testManyZeroWindowStreamsStayWithinTheConnectionBuffer() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 5, idle: 30, write: 3, linger: 0.5))
        defer { h.stop() }
        let client = try HTTP2Client.start(port: h.port, "zero-window-streams", "100", "/zero?size=1000000")
        XCTAssertTrue(waitUntil(5) { client.output.contains("READY") }, client.output)
        let seen = maxBuffered(h, seconds: 1.5)
        XCTAssertTrue(seen.seen)
        XCTAssertGreaterThan(seen.buffered, 65536, "the responses wait in the buffer")
        XCTAssertLessThanOrEqual(seen.buffered, HTTP2Settings().connectionBufferBytes + 2 * 65536,
                                 "the connection's bound and the read that crossed it")
        _ = client.wait()
    }

    /// 100 uploads that never finish, on a server whose `initialWindowSize` is 1 MiB: the client may
    /// send each stream only the advertised share of `requestBodyBufferBytes` (plus the window granted
    /// to the first few while the budget has room), not 100 times 1 MiB.
    func testUnfinishedUploadsOnManyStreamsStayNearTheBodyBudget() throws {
        var http2 = HTTP2Settings()
        http2.initialWindowSize = 1 << 20
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 10, idle: 30, write: 5, linger: 0.5),
                                 http2: http2)
        defer { h.stop() }
        let r = try HTTP2Client.run(port: h.port, "body-hold", "100", String(1 << 20))
        let total = try XCTUnwrap(r["total"] as? Int, "\(r)")
        let budget = http2.requestBodyBufferBytes
        XCTAssertLessThanOrEqual(total, 2 * budget + 100 * http2.advertisedWindow + (1 << 20), "\(r)")
        XCTAssertGreaterThanOrEqual(r["largest"] as? Int ?? 0, (1 << 20) - 1, "the first uploads got the whole window: \(r)")
        XCTAssertGreaterThanOrEqual(r["smallest"] as? Int ?? 0, http2.advertisedWindow, "every stream got the advertised window: \(r)")
    }

    /// The HTTP/2 connections of `harness`: request body bytes counted in their budget, and request
    /// bytes their upstream exchanges hold (read on their loops).
    private func requestSamples(_ harness: ProxyHarness) -> [(budgeted: Int, upstream: Int)] {
        harness.group.loops.flatMap { loop in
            loop.queue.sync {
                loop.allResidents.compactMap { $0 as? HTTP2ServerConnection }.map { ($0.heldRequestBodyBytes, $0.upstreamRequestBytes) }
            }
        }
    }

    /// 30 complete 1 MiB uploads on one connection to an upstream that reads none of them until
    /// told (over a Unix socket: its kernel buffer takes about 200 KiB of a body, where a loopback TCP
    /// socket would take the whole MiB and hide what the gateway holds): a complete body stays in the connection's `requestBodyBufferBytes` budget until it is
    /// written to the upstream socket, so the client can send about the budget plus one body plus
    /// the windows (not 30 MiB: before, a body left the budget at END_STREAM and the next upload got
    /// the whole window, while the gateway kept every body until the upstream read it). Once the
    /// upstream reads, every upload completes (nothing deadlocks).
    func testCompleteUploadsToASlowReadingUpstreamStayWithinTheBodyBudget() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 30, idle: 30, write: 10, linger: 0.5),
                                 withUnixUpstream: true)
        defer { h.stop() }
        let count = 30, size = 1 << 20
        let client = try HTTP2Client.start(port: h.port, "uploads", String(count), String(size), "/unix/gated?readgate=1")
        XCTAssertTrue(waitUntil(20) { client.output.contains("STALLED") }, client.output)
        let line = client.output.split(separator: "\n").first { $0.hasPrefix("STALLED") } ?? ""
        let stalled = try XCTUnwrap(Int(line.split(separator: " ").last ?? ""), client.output)
        let http2 = HTTP2Settings()
        let budget = http2.requestBodyBufferBytes
        XCTAssertLessThanOrEqual(stalled, 2 * budget + count * http2.advertisedWindow + size,
                                 "the client could send only about the budget while the gateway held the bodies")
        let held = requestSamples(h).map(\.budgeted).max() ?? 0
        // Windows granted beyond the advertised one (`grantWindow`) are reserved in the budget when
        // granted but not while bodies arrive: the same bound as what the client could send.
        XCTAssertLessThanOrEqual(held, 2 * budget + size + count * http2.advertisedWindow, "bodies held count in the budget")
        let socketPath = try XCTUnwrap(h.unixUpstream?.unixPath)
        let gate = try ChildProcess.run("curl", ["-s", "--max-time", "5", "--unix-socket", socketPath, "http://upstream/__gate"])
        XCTAssertEqual(gate.status, 0, gate.output)
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        XCTAssertEqual(r["complete"] as? Int, count, "every body was sent once the upstream read: \(r)")
        XCTAssertEqual(r["ok"] as? Int, count, "every upload was answered 200: \(r)")
        XCTAssertTrue(waitUntil(5) { self.requestSamples(h).allSatisfy { $0.budgeted == 0 } }, "nothing stays counted")
    }

    /// Probe: a body a slow-reading upstream does not take fills the connection's budget, so the
    /// gateway holds back the window of the other uploads on the connection; their body timeout then
    /// ran out and they were refused `408 body_timeout`, the client blamed for the gateway's own
    /// flow control. The timeout does not run while the window is held back: once the slow body is
    /// read, the other uploads complete (200), and one that never could is still cut by the upstream
    /// side, not charged as a slow client.
    func testUploadsWaitingForTheBudgetAreNotRefusedAsSlowClients() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 0.5, idle: 30, write: 10, linger: 0.5),
                                 withUnixUpstream: true)
        defer { h.stop() }
        let spec = "\(6 << 20)@/unix/gated?readgate=1,\(1 << 20)@/a?n=1,\(1 << 20)@/a?n=2,20000@/a?n=3"
        // The slow body first, whole; then the others together (each gets its advertised window, then waits).
        let client = try HTTP2Client.start(port: h.port, "upload-list", spec, "first-alone")
        XCTAssertTrue(waitUntil(20) { client.output.contains("STALLED") }, client.output)
        // Longer than the body timeout (0.5 s) while the budget is full: before, the 1 MiB uploads got 408 here.
        Thread.sleep(forTimeInterval: 2)
        let socketPath = try XCTUnwrap(h.unixUpstream?.unixPath)
        let gate = try ChildProcess.run("curl", ["-s", "--max-time", "5", "--unix-socket", socketPath, "http://upstream/__gate"])
        XCTAssertEqual(gate.status, 0, gate.output)
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        XCTAssertEqual(r["statuses"] as? [Int], [200, 200, 200, 200], "\(r)")
        XCTAssertFalse(h.handler.completed.contains { $0.error == .bodyTimeout }, "\(h.handler.completed.map { ($0.targetString ?? "", $0.status) })")
    }

    /// 30 complete 1 MiB uploads to an upstream that reads each body at once, then waits 3 s to
    /// answer (the probe's reproducer, smaller): once the upstream has every body, the gateway holds
    /// none of them. Before, each exchange kept its serialized request until the response for a
    /// retry (about 1 MiB per stream, `max_concurrent_streams x max_body` per connection); now a
    /// request over `UpstreamExchange.retryBufferBytes` is let go once written.
    func testCompleteUploadsWaitingForASlowResponseAreNotHeldByTheGateway() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 30, idle: 30, write: 10, linger: 0.5))
        defer { h.stop() }
        let count = 30, size = 1 << 20
        let client = try HTTP2Client.start(port: h.port, "uploads", String(count), String(size), "/slow-answer?delay=3000")
        var polls = 0  // each /__stats request counts itself
        XCTAssertTrue(waitUntil(20) {
            polls += 1
            return (try? h.upstream.stats().requests).map { $0 - polls >= count } ?? false
        }, "the upstream read every body")
        let samples = requestSamples(h)
        XCTAssertEqual(samples.count, 1, "one HTTP/2 connection, still waiting for its responses")
        XCTAssertEqual(samples.first?.upstream, 0, "no exchange keeps a request over the retry buffer: \(samples)")
        XCTAssertEqual(samples.first?.budgeted, 0, "every body left the budget once written: \(samples)")
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        XCTAssertEqual(r["ok"] as? Int, count, "every upload was answered 200: \(r)")
    }

    func testClientThatStopsReadingTheSocketIsBoundedThenCutOff() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 5, idle: 30, write: 1, linger: 0.5))
        defer { h.stop() }
        let client = try HTTP2Client.start(port: h.port, "stalled-reader", "/large?size=33554432")
        XCTAssertTrue(waitUntil(5) { client.output.contains("READY") }, client.output)
        let seen = maxBuffered(h, seconds: 0.8)
        XCTAssertTrue(seen.seen)
        let limit = HTTPServerConfiguration(listeners: []).writeHighWatermark
        XCTAssertLessThanOrEqual(seen.queued, limit + 2 * 16384, "frames are produced only while the output is below the watermark")
        XCTAssertLessThanOrEqual(seen.buffered, HTTP2Settings().streamBufferBytes + 65536, "the upstream was paused")
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        XCTAssertLessThan(r["received"] as? Int ?? Int.max, 8 << 20, "cut off long before the 32 MiB: \(r)")
        XCTAssertTrue(waitUntil(5) { h.handler.completed.contains { $0.targetString?.hasPrefix("/large") == true } })
        let record = try XCTUnwrap(h.handler.completed.first { $0.targetString?.hasPrefix("/large") == true })
        XCTAssertTrue(record.aborted, "the write timeout ended it")
        XCTAssertEqual(record.error, .clientStalled)
        XCTAssertEqual(record.connection.protocolName, "h2")
    }
}
