import AttestSimulator
import Foundation
@testable import Gateway
import GatewayConfig
import GatewayStore
import GatewayTestSupport
import XCTest

/// Fraud-metric receipts end to end (issue 12): an in-process gateway (memory store) attests
/// simulator keys whose receipts name them, its refresher exchanges them with the fake Apple data
/// server over TLS on loopback (`FakeDataServer`, JWT checked by PyPI `cryptography`), and the
/// outcome shows in the key record, the upstream headers and the route policy - for every status.
final class ReceiptRefreshTests: XCTestCase, GatewayClient {
    static let appId = "ABCDE12345.com.example.risk"
    static let wrongKeyAppId = "ABCDE12345.com.example.wrongkey"
    static let wrongCAAppId = "ABCDE12345.com.example.wrongca"
    static let slowAppId = "ABCDE12345.com.example.slow"

    private var fake: FakeDataServer!
    private var upstream: UpstreamProcess!
    private var runtime: GatewayRuntime!
    private(set) var port: UInt16 = 0
    private var adminPort: UInt16 = 0
    private(set) var work: URL = URL(fileURLWithPath: "/tmp")
    private var sharedCAs: TestCAs?
    var cas: TestCAs { sharedCAs! }
    private let events = EventLog()

    override func setUpWithError() throws {
        sharedCAs = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("risk")
        fake = try FakeDataServer()
        upstream = try UpstreamProcess()
        let yaml = Self.yaml(fake: fake, upstreamPort: upstream.port, roots: [cas.sim.appendingPathComponent("root.pem").path])
        let loaded = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: work.path)
        runtime = try GatewayRuntime(loaded: loaded, loopCount: 2, events: events.sink)
        let listeners = try runtime.start()
        port = try XCTUnwrap(listeners.data.first?.port)
        adminPort = try XCTUnwrap(listeners.admin?.port)
        XCTAssertNotNil(runtime.receiptRefresher, "apps with risk settings get a refresher")
    }

    override func tearDown() {
        let done = DispatchSemaphore(value: 0)
        runtime?.shutdown { done.signal() }
        _ = done.wait(timeout: .now() + 15)
        fake?.stop()
        upstream?.stop()
    }

    static func yaml(fake: FakeDataServer, upstreamPort: UInt16, roots: [String], store: String = "memory",
                     firstAppRisk: Bool = true) -> String {
        func risk(_ key: String, _ ca: String, rate: Int = 5) -> String {
            """
                risk:
                  team_id: \(FakeDataServer.teamID)
                  key_id: \(FakeDataServer.keyID)
                  private_key_file: \(key)
                  data_server: \(fake.url)
                  data_server_ca: \(ca)
                  max_calls_per_second: \(rate)
            """
        }
        return """
        listen: 127.0.0.1:0
        admin: 127.0.0.1:0
        store:
          url: \(store)
        apps:
          - app_id: \(appId)
            environment: development
        \(firstAppRisk ? risk(fake.keyFile, fake.caFile) : "")
          - app_id: \(wrongKeyAppId)
            environment: development
        \(risk(fake.wrongKeyFile, fake.caFile))
          - app_id: \(wrongCAAppId)
            environment: development
        \(risk(fake.keyFile, fake.wrongCAFile))
          - app_id: \(slowAppId)
            environment: development
        \(risk(fake.keyFile, fake.caFile, rate: 1))
        trust:
          extra_roots: [\(roots.joined(separator: ", "))]
          extra_receipt_roots: [\(fake.receiptRootFile)]
        upstreams:
          app: http://127.0.0.1:\(upstreamPort)
        routes:
          - name: deny
            path_prefix: /v1/deny
            upstream: app
            max_risk_metric: 5
            risk_action: deny
          - name: watch
            path_prefix: /v1/watch
            upstream: app
            max_risk_metric: 5
          - name: protected
            path_prefix: /v1/protected
            upstream: app

        """
    }

    // MARK: helpers

    private func attested(_ appId: String = ReceiptRefreshTests.appId, prepare: (RiskDevice) throws -> Void) throws -> RiskDevice {
        let device = try RiskDevice(caDirectory: cas.sim, appId: appId)
        try prepare(device)
        let challenge = try self.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: appId, environment: "development", caDirectory: cas.sim)
        let reply = try attest(keyId: device.keyId, challenge: challenge, attestation: attestation)
        XCTAssertEqual(reply.status, 201, "\(reply)")
        return device
    }

    /// Attests with a scenario that needs the credential certificate (a 200 receipt): the scenario is
    /// written right after the attestation; the fake answers 503 until then (the refresher backs off
    /// 15-30 s, so the test forces the exchange instead of waiting).
    private func attestedRefreshed(metric: Int, appId: String = ReceiptRefreshTests.appId) throws -> (RiskDevice, [UInt8]) {
        let device = try attested(appId) { try fake.set($0.name, status: 503) }
        let receipt = try fake.refreshedReceipt(for: device, riskMetric: metric)
        try fake.set(device.name, status: 200, receipt: receipt)
        waitFor("the first exchange of \(device.name)", timeout: 15) { !fake.requests(device.name).isEmpty }
        let report = try refresh(device)
        XCTAssertEqual(report.outcome, .refreshed, "\(report.detail) \(fake.requests(device.name)) \((try? FileManager.default.contentsOfDirectory(atPath: fake.directory.path)) ?? [])")
        return (device, receipt)
    }

    private func keyId(_ device: RiskDevice) throws -> KeyID { try KeyID(Array(try XCTUnwrap(Data(base64Encoded: device.keyId)))) }

    private func record(_ device: RiskDevice) throws -> KeyRecord? {
        let id = try keyId(device)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var found: KeyRecord?
        runtime.store.fetchKey(id) { result in
            if case .success(let record) = result { found = record }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        return found
    }

    private func refresh(_ device: RiskDevice) throws -> ReceiptRefreshReport {
        let refresher = try XCTUnwrap(runtime.receiptRefresher)
        let id = try keyId(device)
        // The automatic exchange may still be in flight (it holds the lease until it is done): poll.
        nonisolated(unsafe) var report: ReceiptRefreshReport?
        waitFor("a forced exchange not refused by the automatic one in flight", timeout: 40) {
            let done = DispatchSemaphore(value: 0)
            refresher.refresh(id, forced: true) { report = $0; done.signal() }
            guard done.wait(timeout: .now() + 35) == .success else { return true }
            return report?.outcome != .leaseHeld
        }
        return try XCTUnwrap(report)
    }

    private func due(_ device: RiskDevice, at time: Int64) throws -> Bool {
        let id = try keyId(device)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var keys: [KeyID] = []
        (runtime.store as! any ReceiptRefreshStore).dueRefreshes(now: time, limit: 10_000) { result in
            if case .success(let k) = result { keys = k }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        return keys.contains(id)
    }

    private func riskEvents(_ device: RiskDevice, _ name: String = "risk_refresh") -> [[String: String]] {
        events.named(name).filter { $0["keyId"] == device.keyId }
    }

    private func upstreamHeaders(_ device: RiskDevice, target: String, counter: UInt32) throws -> HTTPReply {
        try send(try signedRequest(device, target: target, counter: counter, appId: device.appId))
    }

    // MARK: tests

    func test200StoresTheVerifiedReceiptAndUpstreamSeesMetricAndAge() throws {
        let (device, receipt) = try attestedRefreshed(metric: 7)
        let stored = try XCTUnwrap(try record(device))
        XCTAssertEqual(stored.riskState, .fresh)
        XCTAssertEqual(stored.receiptRiskMetric, 7)
        XCTAssertEqual(stored.receipt, receipt, "the new receipt replaced the attestation's")
        XCTAssertNotNil(stored.riskObservedAt)
        XCTAssertNotNil(stored.receiptExpiresAt)
        for request in fake.requests(device.name) { XCTAssertEqual(request["jwt"] as? String, "ok", "\(request)") }
        XCTAssertFalse(try due(device, at: GatewayClock.system.now() + 3_600_000), "next refresh at the receipt's not-before (1 day)")
        XCTAssertTrue(try due(device, at: GatewayClock.system.now() + 2 * 86_400_000))

        let reply = try upstreamHeaders(device, target: "/v1/protected/x", counter: 1)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        let echo = try XCTUnwrap(reply.echo)
        XCTAssertEqual(echo.values("App-Attest-Risk-Metric"), ["7;env=development"])
        let age = try XCTUnwrap(echo.values("App-Attest-Risk-Age").first.flatMap { Int($0) }, "age in seconds")
        XCTAssertTrue((0...120).contains(age), "\(age)")
    }

    func testNeverFetchedMetricIsUnknownUpstream() throws {
        let device = try attested { try fake.set($0.name, status: 503) }
        waitFor("the 503 exchange", timeout: 15) { !riskEvents(device).isEmpty }
        let echo = try XCTUnwrap(try upstreamHeaders(device, target: "/v1/protected/x", counter: 1).echo)
        XCTAssertEqual(echo.values("App-Attest-Risk-Metric"), ["unknown"])
        XCTAssertEqual(echo.values("App-Attest-Risk-Age"), ["unknown"])
        // 503: back-off 15-30 s from the first failure.
        let event = try XCTUnwrap(riskEvents(device).first)
        XCTAssertEqual(event["outcome"], "throttled")
        XCTAssertEqual(event["status"], "503")
        let next = try XCTUnwrap(event["next_at"].flatMap { Int64($0) })
        let now = GatewayClock.system.now()
        XCTAssertTrue((now - 5_000...now + 31_000).contains(next), "\(next - now) ms")
    }

    func testAKeyRegisteredWithoutTheRefresherIsScheduledByItsFirstRequest() throws {
        // As if attested before `risk` was configured: the record is there, the schedule is not.
        let device = try RiskDevice(caDirectory: cas.sim, appId: Self.appId)
        try fake.set(device.name, status: 304)
        let id = try keyId(device)
        let record = try KeyRecord(keyId: id, publicKey: device.publicKeyPoint, environment: .development, appId: Self.appId,
                                   createdAt: GatewayClock.system.now(), receipt: Array("test-receipt:\(device.name)".utf8))
        let challenge = try Challenge((0..<32).map { _ in UInt8.random(in: 0...255) })
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var registered = false
        let now = GatewayClock.system.now()
        runtime.store.issueChallenge(challenge, keyId: id, purpose: .attest, expiresAt: now + 60_000, now: now) { [store = runtime.store] _ in
            store.registerKey(record, challenge: challenge, now: now) { result in
                if case .success(.accepted) = result { registered = true }
                done.signal()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(registered)
        XCTAssertFalse(try due(device, at: GatewayClock.system.now() + 400 * 86_400_000), "not scheduled")
        // Its first request (metric unknown) schedules it; the refresher exchanges it.
        let echo = try XCTUnwrap(try upstreamHeaders(device, target: "/v1/protected/x", counter: 1).echo)
        XCTAssertEqual(echo.values("App-Attest-Risk-Metric"), ["unknown"])
        waitFor("the exchange of a key scheduled by its request", timeout: 15) { !riskEvents(device).isEmpty }
        XCTAssertEqual(riskEvents(device).first?["outcome"], "not_modified")
    }

    func testTheCallRatePerProcessPostponesKeysToLaterPolls() throws {
        var devices: [RiskDevice] = []
        for _ in 0..<3 {
            let device = try attested(Self.slowAppId) { try fake.set($0.name, status: 304) }
            devices.append(device)
        }
        for device in devices { waitFor("the first exchange", timeout: 15) { riskEvents(device).count == 1 } }
        // All three due at once: one call per second for this app, the others wait for later polls.
        let refresher = try XCTUnwrap(runtime.receiptRefresher)
        let postponedBefore = refresher.count(.rateLimited)
        let store = runtime.store as! any ReceiptRefreshStore
        let now = GatewayClock.system.now()
        for device in devices { store.scheduleRefresh(try keyId(device), dueAt: now) { _ in } }
        for device in devices { waitFor("the second exchange", timeout: 15) { riskEvents(device).count == 2 } }
        XCTAssertGreaterThanOrEqual(refresher.count(.rateLimited) - postponedBefore, 2, "two keys waited for the bucket")
        for device in devices { XCTAssertEqual(fake.requests(device.name).count, 2) }
    }

    func testMetricsCountOutcomes() throws {
        let device = try attested { try fake.set($0.name, status: 304) }
        waitFor("the 304 exchange", timeout: 15) { !riskEvents(device).isEmpty }
        let metrics = try Curl.get("http://127.0.0.1:\(adminPort)/metrics").text
        XCTAssertTrue(metrics.contains("attest_gateway_risk_refresh_total{outcome=\"not_modified\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("attest_gateway_risk_refresh_total{outcome=\"refreshed\"} 0\n"), metrics)
    }

    func test304KeepsTheReceiptAndWaitsForItsNotBefore() throws {
        let device = try attested { try fake.set($0.name, status: 304) }
        waitFor("the 304 exchange", timeout: 15) { !riskEvents(device).isEmpty }
        XCTAssertEqual(riskEvents(device).first?["outcome"], "not_modified")
        let stored = try XCTUnwrap(try record(device))
        XCTAssertNil(stored.riskState)
        XCTAssertEqual(stored.receipt, Array("test-receipt:\(device.name)".utf8))
        XCTAssertFalse(try due(device, at: GatewayClock.system.now() + 3_600_000))
        XCTAssertEqual(fake.requests(device.name).count, 1)
    }

    func test400And401StopRefreshingThatKeyWithAnAlert() throws {
        for status in [400, 401] {
            let device = try attested { try fake.set($0.name, status: status) }
            waitFor("the \(status) exchange", timeout: 15) { !riskEvents(device, "risk_refresh_stopped").isEmpty }
            XCTAssertEqual(riskEvents(device, "risk_refresh_stopped").first?["status"], String(status))
            waitFor("state stopped") { (try? record(device))??.riskState == .stopped }
            XCTAssertFalse(try due(device, at: GatewayClock.system.now() + 400 * 86_400_000), "unscheduled")
            XCTAssertEqual(fake.requests(device.name).count, 1)
        }
    }

    func testAJWTTheFakeCannotVerifyIs401AndStops() throws {
        let device = try attested(Self.wrongKeyAppId) { try fake.set($0.name, status: 200) }
        waitFor("the exchange", timeout: 15) { !fake.requests(device.name).isEmpty }
        XCTAssertEqual(fake.requests(device.name).first?["jwt"] as? String, "bad signature")
        XCTAssertEqual(fake.requests(device.name).first?["status"] as? Int, 401)
        waitFor("state stopped") { (try? record(device))??.riskState == .stopped }
    }

    func testAnUntrustedDataServerCertificateIsUnreachable() throws {
        let device = try attested(Self.wrongCAAppId) { try fake.set($0.name, status: 200) }
        waitFor("the attempt", timeout: 15) { !riskEvents(device).isEmpty }
        XCTAssertEqual(riskEvents(device).first?["outcome"], "unreachable")
        XCTAssertTrue(fake.requests(device.name).isEmpty, "no request over an unverified connection")
    }

    func test404AfterA200KeepsTheReceiptButMarksTheMetricStale() throws {
        let (device, receipt) = try attestedRefreshed(metric: 2)
        XCTAssertEqual(try upstreamHeaders(device, target: "/v1/protected/x", counter: 1).echo?.values("App-Attest-Risk-Metric"),
                       ["2;env=development"])
        try fake.set(device.name, status: 404)
        XCTAssertEqual(try refresh(device).outcome, .notFound)
        let stored = try XCTUnwrap(try record(device))
        XCTAssertEqual(stored.riskState, .stale)
        XCTAssertEqual(stored.receipt, receipt, "the last valid receipt stays")
        XCTAssertEqual(stored.receiptRiskMetric, 2)
        let echo = try XCTUnwrap(try upstreamHeaders(device, target: "/v1/protected/x", counter: 2).echo)
        XCTAssertEqual(echo.values("App-Attest-Risk-Metric"), ["unknown"], "never an old number as if new")
        XCTAssertEqual(echo.values("App-Attest-Risk-Age"), ["unknown"])
    }

    func test429HonoursRetryAfter() throws {
        let device = try attested { try fake.set($0.name, status: 429, retryAfter: "600") }
        waitFor("the 429 exchange", timeout: 15) { !riskEvents(device).isEmpty }
        let event = try XCTUnwrap(riskEvents(device).first)
        XCTAssertEqual(event["outcome"], "throttled")
        let now = GatewayClock.system.now()
        XCTAssertFalse(try due(device, at: now + 590_000))
        XCTAssertTrue(try due(device, at: now + 700_000))
    }

    /// A `Retry-After` far beyond Int64 seconds (probe: the gateway trapped on `* 1000`, and again
    /// after every restart) waits a day; an HTTP-date is honoured like seconds.
    func test429WithAnAbsurdRetryAfterWaitsADayAndAnHTTPDateIsHonoured() throws {
        let absurd = try attested { try fake.set($0.name, status: 429, retryAfter: "99999999999999999") }
        waitFor("the 429 exchange", timeout: 15) { !riskEvents(absurd).isEmpty }
        XCTAssertEqual(riskEvents(absurd).first?["outcome"], "throttled")
        var now = GatewayClock.system.now()
        XCTAssertFalse(try due(absurd, at: now + 86_400_000 - 60_000), "not before a day")
        XCTAssertTrue(try due(absurd, at: now + 86_400_000 + 60_000), "capped at a day")

        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: Date().addingTimeInterval(1_200))
        let dated = try attested { try fake.set($0.name, status: 429, retryAfter: date) }
        waitFor("the 429 exchange", timeout: 15) { !riskEvents(dated).isEmpty }
        now = GatewayClock.system.now()
        XCTAssertFalse(try due(dated, at: now + 1_100_000), "the date is a floor (\(date))")
        XCTAssertTrue(try due(dated, at: now + 1_300_000))
    }

    func testReceiptsThatDoNotVerifyOrNameAnotherKeyAreRefused() throws {
        let stranger = try TestReceiptCA.generate()
        let untrusted = try attested { try fake.set($0.name, status: 503) }
        try fake.set(untrusted.name, status: 200, receipt: try fake.refreshedReceipt(for: untrusted, riskMetric: 1, signer: stranger))
        let other = try attested { try fake.set($0.name, status: 503) }
        let otherApp = try fake.refreshedReceipt(for: other, riskMetric: 1, appId: Self.wrongKeyAppId)
        try fake.set(other.name, status: 200, receipt: otherApp)
        for device in [untrusted, other] {
            waitFor("the first exchange", timeout: 15) { !fake.requests(device.name).isEmpty }
            let report = try refresh(device)
            XCTAssertEqual(report.outcome, .invalidReceipt, report.detail)
            let stored = try XCTUnwrap(try record(device))
            XCTAssertNil(stored.riskState)
            XCTAssertEqual(stored.receipt, Array("test-receipt:\(device.name)".utf8), "nothing replaced")
        }
    }

    /// Probe: a 200 whose receipt is signed and names the key and app, but is expired, of type ATTEST,
    /// or carries no usable metric (absent, negative, beyond 32 bits) counted as `refreshed` and
    /// replaced the last valid metric with `unknown`. Each is now `invalid_receipt`: the stored
    /// receipt and metric stay (the failing variant is the valid receipt that follows).
    func testUnusableReceiptsOfA200KeepTheLastValidOne() throws {
        let (device, good) = try attestedRefreshed(metric: 3)
        let unusable: [(String, [UInt8])] = [
            ("expired", try fake.refreshedReceipt(for: device, riskMetric: 1, createdIn: -100_000, expiresIn: -10)),
            ("ATTEST", try fake.refreshedReceipt(for: device, riskMetric: 1, type: "ATTEST")),
            ("no metric", try fake.refreshedReceipt(for: device, riskMetric: nil)),
            ("negative metric", try fake.refreshedReceipt(for: device, riskMetric: -1)),
            ("metric beyond 32 bits", try fake.refreshedReceipt(for: device, riskMetric: 4_294_967_296)),
        ]
        for (name, receipt) in unusable {
            try fake.set(device.name, status: 200, receipt: receipt)
            let report = try refresh(device)
            XCTAssertEqual(report.outcome, .invalidReceipt, "\(name): \(report.detail)")
            let stored = try XCTUnwrap(try record(device))
            XCTAssertEqual(stored.receipt, good, "\(name): the last valid receipt stays")
            XCTAssertEqual(stored.receiptRiskMetric, 3, name)
            XCTAssertEqual(stored.riskState, .fresh, name)
        }
        try fake.set(device.name, status: 200, receipt: try fake.refreshedReceipt(for: device, riskMetric: 5))
        XCTAssertEqual(try refresh(device).outcome, .refreshed)
        XCTAssertEqual(try record(device)?.receiptRiskMetric, 5)
    }

    /// Probe: a receipt created ten days ahead of this clock parked the key's next exchange eleven days
    /// away. Its time counts as now, and the next exchange is at most two days away.
    func testAReceiptFromTheFutureCountsAsNowAndNeverParksTheKey() throws {
        let (device, _) = try attestedRefreshed(metric: 3)
        try fake.set(device.name, status: 200, receipt: try fake.refreshedReceipt(for: device, riskMetric: 2, createdIn: 864_000))
        let before = GatewayClock.system.now()
        let report = try refresh(device)
        XCTAssertEqual(report.outcome, .refreshed, report.detail)
        let stored = try XCTUnwrap(try record(device))
        XCTAssertEqual(stored.receiptRiskMetric, 2)
        XCTAssertLessThanOrEqual(try XCTUnwrap(stored.riskObservedAt), GatewayClock.system.now(), "never ahead of the clock")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(stored.riskObservedAt), before)
        XCTAssertLessThanOrEqual(try XCTUnwrap(report.nextAt), GatewayClock.system.now() + 2 * 86_400_000, "at most two days")
        XCTAssertTrue(try due(device, at: GatewayClock.system.now() + 2 * 86_400_000 + 1000))
    }

    /// Probe: a forced exchange of a stopped key answered 304 said `not_modified` (exit 0) but left the
    /// key stopped, and one answered 503 promised a retry that the schedule then skipped. Any answer
    /// but 400/401 ends the stop: 304 `fresh`, 503 `stale` and due again.
    func testAForcedExchangeOfAStoppedKeyEndsTheStopUnless400Or401() throws {
        for (status, state) in [(304, RiskMetricState.fresh), (503, .stale), (401, .stopped)] {
            let device = try attested { try fake.set($0.name, status: 401) }
            waitFor("state stopped") { (try? record(device))??.riskState == .stopped }
            try fake.set(device.name, status: status)
            let report = try refresh(device)
            XCTAssertNotEqual(report.outcome, .skipped, "\(status): \(report.detail)")
            waitFor("state \(state) after a forced \(status)") { (try? record(device))??.riskState == state }
            if status == 503 {
                let next = try XCTUnwrap(report.nextAt, "a retry")
                XCTAssertTrue(try due(device, at: next + 1000), "the retry is scheduled")
            }
        }
    }

    /// Probe: a reload that removed `apps[0].risk` was reported `restart_required`, yet the request
    /// path applied it at once (the deny route let a metric of 9 through, no risk headers) while the
    /// refresher kept exchanging. Risk stays as the process started until a restart.
    func testAReloadThatRemovesRiskChangesNothingUntilARestart() throws {
        let (device, _) = try attestedRefreshed(metric: 9)
        let before = try upstreamHeaders(device, target: "/v1/deny/x", counter: 1)
        XCTAssertEqual(before.status, 403, "\(before)")
        XCTAssertEqual(before.errorCode, "risk_too_high")

        let file = work.appendingPathComponent("reloaded.yaml")
        try Self.yaml(fake: fake, upstreamPort: upstream.port, roots: [cas.sim.appendingPathComponent("root.pem").path],
                      firstAppRisk: false).write(to: file, atomically: true, encoding: .utf8)
        let report = runtime.reload(path: file.path)
        XCTAssertTrue(report.succeeded, "\(report.errors)")
        XCTAssertEqual(report.restartRequired, ["apps[0].risk"])

        let after = try upstreamHeaders(device, target: "/v1/deny/x", counter: 2)
        XCTAssertEqual(after.status, 403, "still denied: the running refresher still exchanges this app's receipts; \(after)")
        XCTAssertEqual(after.errorCode, "risk_too_high")
        let watched = try upstreamHeaders(device, target: "/v1/watch/x", counter: 3)
        XCTAssertEqual(watched.status, 200, "\(watched)")
        XCTAssertEqual(watched.echo?.values("App-Attest-Risk-Metric"), ["9;env=development"], "the headers stay too")
    }

    func testRoutePolicyDeniesOrMonitorsOnlyKnownMetricsAboveTheMaximum() throws {
        let (high, _) = try attestedRefreshed(metric: 7)
        let (low, _) = try attestedRefreshed(metric: 3)
        let unknown = try attested { try fake.set($0.name, status: 503) }

        let denied = try upstreamHeaders(high, target: "/v1/deny/x", counter: 1)
        XCTAssertEqual(denied.status, 403, "\(denied)")
        XCTAssertEqual(denied.errorCode, "risk_too_high")
        XCTAssertNil(denied.echo, "not forwarded")
        let allowed = try upstreamHeaders(low, target: "/v1/deny/x", counter: 1)
        XCTAssertEqual(allowed.status, 200, "\(allowed)")
        XCTAssertEqual(allowed.echo?.values("App-Attest-Risk-Metric"), ["3;env=development"])
        let absent = try upstreamHeaders(unknown, target: "/v1/deny/x", counter: 1)
        XCTAssertEqual(absent.status, 200, "an unknown metric is not suspicious: \(absent)")

        let watched = try upstreamHeaders(high, target: "/v1/watch/x", counter: 2)
        XCTAssertEqual(watched.status, 200, "monitor forwards: \(watched)")
        XCTAssertEqual(watched.echo?.values("App-Attest-Reason"), ["risk_too_high"])
        XCTAssertEqual(watched.echo?.values("App-Attest-Verdict"), ["valid"])
        let quiet = try upstreamHeaders(low, target: "/v1/watch/x", counter: 2)
        XCTAssertEqual(quiet.echo?.values("App-Attest-Reason"), [])
    }
}
