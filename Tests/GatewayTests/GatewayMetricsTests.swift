@testable import Gateway
@testable import GatewayHTTP
import GatewayStore
import XCTest

/// `GatewayMetrics` without sockets: what counts as a refusal, the in-flight gauge, connections,
/// upstream and store outcomes, bucket spans, label escaping, build info and `/proc` parsing.
final class GatewayMetricsTests: XCTestCase {
    private let info = HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:9", localAddress: "127.0.0.1:8", loopIndex: 1)

    private func record(status: Int, upstream: String? = nil, error: HTTPError? = nil) -> HTTPAccessRecord {
        HTTPAccessRecord(connection: info, method: .get, target: Array("/p".utf8), status: status, error: error,
                         requestBodyBytes: 0, responseBodyBytes: 0, latencyNanoseconds: 2_000_000, upstream: upstream, aborted: false)
    }

    private func scrape(_ metrics: GatewayMetrics) -> ObservabilityBinaryTests.Scrape {
        ObservabilityBinaryTests.Scrape(metrics.prometheusText())
    }

    func testOnlyAnswersTheGatewayGaveItselfAreRefusals() {
        let metrics = GatewayMetrics(loops: 2)
        metrics.record(record(status: 401), context: RequestLogContext(route: "p", verdict: .missing, reason: "assertion_missing"))
        metrics.record(record(status: 400, error: .badChunk), context: nil, decided: false)
        // Forwarded on a monitor route with a reason, and an upstream's own 500: not refusals.
        metrics.record(record(status: 200, upstream: "app"), context: RequestLogContext(route: "m", verdict: .invalid, reason: "bad_signature"))
        metrics.record(record(status: 500, upstream: "app"), context: RequestLogContext(route: "o"))
        metrics.record(record(status: 502, upstream: "app", error: .upstreamUnavailable), context: RequestLogContext(route: "o"))
        let s = scrape(metrics)
        XCTAssertEqual(s.value("attest_gateway_refusals_total", ["route": "p", "reason": "assertion_missing"]), 1)
        XCTAssertEqual(s.value("attest_gateway_refusals_total", ["route": "none", "reason": "bad_chunk"]), 1)
        XCTAssertEqual(s.value("attest_gateway_refusals_total"), 2, "forwarded answers are never refusals")
        XCTAssertEqual(s.value("attest_gateway_requests_total", ["route": "o", "verdict": "none"]), 2)
    }

    /// The last labels counted are kept outside the tables (`State.countRequest`, `countUpstream`):
    /// runs of the same labels, changes of route or status, scrapes in between and after: every
    /// request and exchange is counted once, with its duration, under its own labels.
    func testRunsOfLabelsAndScrapesInBetweenCountEachRequestOnce() {
        let metrics = GatewayMetrics(loops: 2)
        let sequence: [(String, Int)] = [("a", 200), ("a", 200), ("b", 200), ("a", 200), ("a", 404), ("a", 404), ("b", 200)]
        for (i, (route, status)) in sequence.enumerated() {
            metrics.record(record(status: status, upstream: "app"), context: RequestLogContext(route: route))
            metrics.record(UpstreamExchangeReport(upstream: i % 3 == 0 ? "app" : "other", loopIndex: 1, outcome: .completed,
                                                  status: status, nanoseconds: 1_000_000, retried: false))
            if i == 2 {
                let mid = scrape(metrics)
                XCTAssertEqual(mid.value("attest_gateway_requests_total", ["route": "a"]), 2)
                XCTAssertEqual(mid.value("attest_gateway_requests_total", ["route": "b"]), 1)
            }
        }
        for _ in 0..<2 {  // scraping twice changes nothing
            let s = scrape(metrics)
            XCTAssertEqual(s.value("attest_gateway_requests_total", ["route": "a", "status": "200"]), 3)
            XCTAssertEqual(s.value("attest_gateway_requests_total", ["route": "a", "status": "404"]), 2)
            XCTAssertEqual(s.value("attest_gateway_requests_total", ["route": "b", "status": "200"]), 2)
            XCTAssertEqual(s.value("attest_gateway_request_duration_seconds_count", ["route": "a"]), 5)
            XCTAssertEqual(s.value("attest_gateway_request_duration_seconds_count", ["route": "b"]), 2)
            XCTAssertEqual(s.value("attest_gateway_upstream_requests_total", ["upstream": "app"]), 3)
            XCTAssertEqual(s.value("attest_gateway_upstream_requests_total", ["upstream": "other"]), 4)
            XCTAssertEqual(s.value("attest_gateway_upstream_requests_total", ["upstream": "other", "status_class": "4xx"]), 2)
            XCTAssertEqual(s.value("attest_gateway_upstream_duration_seconds_count", ["upstream": "other"]), 4)
        }
    }

    func testInFlightCountsDecidedHeadsUntilTheyComplete() {
        let metrics = GatewayMetrics(loops: 2)
        _ = metrics.requestIDs.begin(loop: 0)
        _ = metrics.requestIDs.begin(loop: 1)
        XCTAssertEqual(scrape(metrics).value("attest_gateway_requests_in_flight"), 2)
        metrics.record(record(status: 200), context: RequestLogContext(route: "r"))  // loop 1
        metrics.record(record(status: 400, error: .badRequestLine), context: nil, decided: false)
        XCTAssertEqual(scrape(metrics).value("attest_gateway_requests_in_flight"), 1, "an undecided request was never in flight")
    }

    func testConnectionsUpstreamExchangesAndStoreCommands() {
        let metrics = GatewayMetrics(loops: 2, upstreamSeconds: 3, storeSeconds: 0.25)
        metrics.connection(info, started: true)
        metrics.connection(info.speaking("h2"), started: true)
        metrics.connection(info, started: false)
        for (outcome, status) in [(UpstreamExchangeReport.Outcome.completed, 204), (.failed(.upstreamReset), 0),
                                  (.failed(.upstreamConnectTimeout), 0), (.cancelled, 200)] {
            metrics.record(UpstreamExchangeReport(upstream: "app", loopIndex: 0, outcome: outcome, status: status,
                                                  nanoseconds: 5_000_000_000, retried: false))
        }
        metrics.store(.fetchKey, loop: 0, nanoseconds: 1_000_000, error: nil)
        metrics.store(.commitAssertion, loop: 1, nanoseconds: 1_000_000, error: StoreUnavailable(.timeout))
        metrics.store(.fetchKey, loop: 0, nanoseconds: 1_000_000, error: StoreUnavailable(.errorReply("OOM")))
        let s = scrape(metrics)
        XCTAssertEqual(s.value("attest_gateway_connections_total", ["listener": "127.0.0.1:8", "protocol": "h1"]), 1)
        XCTAssertEqual(s.value("attest_gateway_open_connections", ["protocol": "h1"]), 0)
        XCTAssertEqual(s.value("attest_gateway_open_connections", ["protocol": "h2"]), 1)
        XCTAssertEqual(s.value("attest_gateway_upstream_requests_total", ["upstream": "app", "status_class": "2xx"]), 2)
        XCTAssertEqual(s.value("attest_gateway_upstream_requests_total", ["status_class": "none"]), 2)
        XCTAssertEqual(s.value("attest_gateway_upstream_errors_total", ["kind": "reset"]), 1)
        XCTAssertEqual(s.value("attest_gateway_upstream_errors_total", ["kind": "connect_timeout"]), 1)
        XCTAssertEqual(s.value("attest_gateway_upstream_errors_total"), 2, "a client going away is no upstream error")
        XCTAssertEqual(s.value("attest_gateway_upstream_duration_seconds_bucket", ["le": "3"]), 0, "5 s is above the 3 s span")
        XCTAssertEqual(s.value("attest_gateway_upstream_duration_seconds_bucket", ["le": "+Inf"]), 4)
        XCTAssertEqual(s.value("attest_gateway_store_commands_total", ["command": "fetch_key"]), 2)
        XCTAssertEqual(s.value("attest_gateway_store_errors_total", ["command": "commit_assertion", "reason": "timeout"]), 1)
        XCTAssertEqual(s.value("attest_gateway_store_errors_total", ["command": "fetch_key", "reason": "error_reply"]), 1)
        XCTAssertEqual(s.value("attest_gateway_store_command_duration_seconds_bucket", ["command": "fetch_key", "le": "0.25"]), 2)
    }

    func testBucketsEndAtTheTimeoutTheyMeasure() {
        XCTAssertEqual(GatewayMetrics.Buckets.spanning(1).bounds, [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1])
        XCTAssertEqual(GatewayMetrics.Buckets.spanning(32).bounds.suffix(3), [10, 25, 32])
        XCTAssertEqual(GatewayMetrics.Buckets.spanning(0).bounds.last, 0.01, "never below 10 ms")
        let buckets = GatewayMetrics.Buckets.spanning(1)
        XCTAssertEqual(buckets.index(of: 0.0005), 0, "a bound is inclusive (le)")
        XCTAssertEqual(buckets.index(of: 0.0006), 1)
        XCTAssertEqual(buckets.index(of: 2), buckets.bounds.count, "above every bound: +Inf only")
        XCTAssertEqual(GatewayMetrics.format(2.5), "2.5")
        XCTAssertEqual(GatewayMetrics.format(10), "10")
    }

    func testLabelValuesAreEscapedAndNeverEmpty() {
        var out = ""
        GatewayMetrics.appendLabels(&out, [("route", "a\"b\\c\nd"), ("verdict", "")])
        XCTAssertEqual(out, #"{route="a\"b\\c\nd",verdict="none"}"#)
    }

    func testBuildInfoRevisionIsPlausibleOrUnknown() {
        XCTAssertEqual(BuildInfo.plausibleRevision("3f2a9c1"), "3f2a9c1")
        XCTAssertEqual(BuildInfo.plausibleRevision("v1.2.3-rc_1"), "v1.2.3-rc_1")
        for bad in ["", "has space", "quote\"", String(repeating: "a", count: 65)] {
            XCTAssertNil(BuildInfo.plausibleRevision(bad), bad)
        }
        XCTAssertFalse(BuildInfo.revision.isEmpty)
    }

    func testProcessStatFieldsSurviveACommandNameWithSpacesAndParentheses() {
        let stat = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 12345 1000000 300 18446744073709551615"
        let fields = ProcessMetrics.statFields(stat) ?? []
        XCTAssertEqual(fields.first, "S")
        XCTAssertEqual(fields[11], "250", "utime")
        XCTAssertEqual(fields[12], "50", "stime")
        XCTAssertEqual(fields[19], "12345", "starttime")
        XCTAssertEqual(fields[21], "300", "rss pages")
        XCTAssertNil(ProcessMetrics.statFields("no parenthesis"))
        let text = ProcessMetrics.prometheusText()
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"] {
            XCTAssertNotNil(ObservabilityBinaryTests.Scrape(text).value(name), "\(name) read from /proc: \(text)")
        }
    }
}
