import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
@testable import Gateway
import GatewayConfig
import GatewayIO
import GatewayStore
import GatewayTestSupport
import XCTest

/// The parts of the fraud-metric receipt refresher (issue 12), mostly without sockets: the schedule
/// state machine under an injected clock, the per-process call bucket, the ES256 JWT (checked by PyPI
/// `cryptography`, an independent implementation), the risk header values, the simulator's receipts
/// against `ReceiptVerifier`, restart-only settings; and one refresher against the fake data server
/// for the exchange deadline.
final class ReceiptRefreshUnitTests: XCTestCase {
    private let now: Int64 = 1_800_000_000_000
    private let day: Int64 = 86_400_000

    // MARK: schedule

    /// Probe (suspected, confirmed here): the back-off doubled per process, so replicas taking turns
    /// on a key, or a restart, started again at 30 s. The time the key has been overdue, which every
    /// replica reads from the record, now sets the delay when it is longer: a fresh schedule (another
    /// replica's first failure) of a key overdue for 20 minutes waits 20 minutes, capped at an hour.
    func testTheBackoffFollowsHowLongTheKeyHasBeenOverdueAcrossReplicas() {
        var fresh = ReceiptRefreshSchedule()
        XCTAssertEqual(fresh.next(after: .retryable(retryAfter: nil), now: now, jitter: 1, overdueSince: now - 1_200_000),
                       .at(now + 1_200_000), "overdue 20 min: waits 20 min on a replica that never failed it")
        var other = ReceiptRefreshSchedule()
        XCTAssertEqual(other.next(after: .retryable(retryAfter: nil), now: now, jitter: 1, overdueSince: now - 10 * day),
                       .at(now + 3_600_000), "capped at maximumBackoff")
        var first = ReceiptRefreshSchedule()
        XCTAssertEqual(first.next(after: .retryable(retryAfter: nil), now: now, jitter: 1, overdueSince: now - 1000),
                       .at(now + 30_000), "just due: the base back-off")
        // Failing variant: without the record's time, a fresh schedule starts again at 30 s.
        var unknown = ReceiptRefreshSchedule()
        XCTAssertEqual(unknown.next(after: .retryable(retryAfter: nil), now: now, jitter: 1), .at(now + 30_000))
    }

    func testRefreshedIsDueAtNotBeforeButBeforeExpiryMargin() {
        var schedule = ReceiptRefreshSchedule()
        XCTAssertEqual(schedule.next(after: .refreshed(notBefore: now + day, expiresAt: now + 90 * day), now: now, jitter: 0.5),
                       .at(now + day))
        // A not-before past the expiry margin is pulled in: refreshed 7 days before expiry.
        XCTAssertEqual(schedule.next(after: .refreshed(notBefore: now + 3 * day / 2, expiresAt: now + 8 * day), now: now, jitter: 0.5),
                       .at(now + day))
        // A not-before far ahead (a clock running behind, a broken receipt) never parks the key: two days at most.
        XCTAssertEqual(schedule.next(after: .refreshed(notBefore: now + 85 * day, expiresAt: now + 90 * day), now: now, jitter: 0.5),
                       .at(now + 2 * day))
        // Never sooner than a minute, even for a receipt already in its margin.
        XCTAssertEqual(schedule.next(after: .refreshed(notBefore: now - day, expiresAt: now + day), now: now, jitter: 0.5),
                       .at(now + 60_000))
        XCTAssertEqual(schedule.next(after: .refreshed(notBefore: nil, expiresAt: nil), now: now, jitter: 0.5), .at(now + day))
    }

    func testNotModifiedWaitsForTheStoredNotBefore() {
        var schedule = ReceiptRefreshSchedule()
        XCTAssertEqual(schedule.next(after: .notModified(notBefore: now + 3 * 3_600_000), now: now, jitter: 0), .at(now + 3 * 3_600_000))
        XCTAssertEqual(schedule.next(after: .notModified(notBefore: now - 1), now: now, jitter: 0), .at(now + day), "past not-before: interval")
        XCTAssertEqual(schedule.next(after: .notModified(notBefore: nil), now: now, jitter: 0), .at(now + day))
    }

    func testRejectedStopsAndNotFoundWaitsAnInterval() {
        var schedule = ReceiptRefreshSchedule()
        XCTAssertEqual(schedule.next(after: .rejected, now: now, jitter: 0), .stop)
        XCTAssertEqual(schedule.next(after: .notFound, now: now, jitter: 0), .at(now + day))
    }

    func testRetryableBacksOffExponentiallyWithJitterCapAndRetryAfter() {
        var schedule = ReceiptRefreshSchedule()
        var delays: [Int64] = []
        for _ in 0..<10 {
            guard case .at(let due) = schedule.next(after: .retryable(retryAfter: nil), now: now, jitter: 1) else { return XCTFail("stopped") }
            delays.append(due - now)
        }
        XCTAssertEqual(Array(delays.prefix(4)), [30_000, 60_000, 120_000, 240_000])
        XCTAssertEqual(delays.last, 3_600_000, "capped at one hour")
        XCTAssertEqual(schedule.failures, 10)
        // Jitter scales into 0.5...1.0 of the step.
        var jittered = ReceiptRefreshSchedule()
        XCTAssertEqual(jittered.next(after: .retryable(retryAfter: nil), now: now, jitter: 0), .at(now + 15_000))
        // Retry-After is a floor.
        XCTAssertEqual(jittered.next(after: .retryable(retryAfter: 600_000), now: now, jitter: 1), .at(now + 600_000))
        // Success resets the back-off.
        _ = schedule.next(after: .refreshed(notBefore: now + day, expiresAt: nil), now: now, jitter: 0)
        XCTAssertEqual(schedule.failures, 0)
        XCTAssertEqual(schedule.next(after: .retryable(retryAfter: nil), now: now, jitter: 1), .at(now + 30_000))
    }

    /// A hostile or broken data server's `Retry-After` (probe: `99999999999999999` trapped the
    /// gateway, again after every restart, since the key stayed due): any value is waited at most a
    /// day, and the arithmetic never overflows.
    func testRetryAfterIsCappedAtADayWhateverTheServerSays() {
        for asked: Int64 in [Int64.max, Int64.max / 2, 9_223_371_000_000_000_000 / 1000 * 1000, 3 * day, -5] {
            var schedule = ReceiptRefreshSchedule()
            let next = schedule.next(after: .retryable(retryAfter: asked), now: now, jitter: 1)
            XCTAssertEqual(next, .at(now + (asked < 0 ? 30_000 : day)), "Retry-After \(asked) ms")
        }
        var schedule = ReceiptRefreshSchedule()
        XCTAssertEqual(schedule.next(after: .retryable(retryAfter: 20 * 60_000), now: now, jitter: 1), .at(now + 20 * 60_000),
                       "within the cap: honoured as given")
    }

    /// `Retry-After` as RFC 9110 section 10.2.3 writes it: seconds (any number of digits, saturating)
    /// or an HTTP-date in any of the three forms; anything else is no value.
    func testRetryAfterValueReadsSecondsAndHTTPDates() {
        let at: Int64 = 784_111_777_000 - 10_000  // 10 s before Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(RetryAfterValue.milliseconds("120", now: at), 120_000)
        XCTAssertEqual(RetryAfterValue.milliseconds(" 0 ", now: at), 0)
        XCTAssertEqual(RetryAfterValue.milliseconds("99999999999999999", now: at), Int64.max)
        XCTAssertEqual(RetryAfterValue.milliseconds(String(repeating: "9", count: 400), now: at), Int64.max)
        XCTAssertEqual(RetryAfterValue.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT", now: at), 10_000)
        XCTAssertEqual(RetryAfterValue.milliseconds("Sunday, 06-Nov-94 08:49:37 GMT", now: at), 10_000)
        XCTAssertEqual(RetryAfterValue.milliseconds("Sun Nov  6 08:49:37 1994", now: at), 10_000)
        XCTAssertEqual(RetryAfterValue.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT", now: at + 60_000), 0, "a past date: now")
        for bad in ["", "-1", "+5", "1.5", "1e3", "soon", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT"] {
            XCTAssertNil(RetryAfterValue.milliseconds(bad, now: at), bad)
        }
    }

    // MARK: call rate

    func testCallRateBucketRefillsWithInjectedTime() {
        var bucket = CallRateLimiter(rate: 2)
        XCTAssertTrue(bucket.take(now: now))
        XCTAssertTrue(bucket.take(now: now))
        XCTAssertFalse(bucket.take(now: now), "burst of 2 used up")
        XCTAssertFalse(bucket.take(now: now + 400))
        XCTAssertTrue(bucket.take(now: now + 500), "one token per 500 ms")
        XCTAssertFalse(bucket.take(now: now + 500))
        XCTAssertTrue(bucket.take(now: now + 10_000))
        XCTAssertTrue(bucket.take(now: now + 10_000))
        XCTAssertFalse(bucket.take(now: now + 10_000), "never more than the burst")
    }

    // MARK: JWT

    func testTokenIsCachedThenResignedBetween20And50Minutes() throws {
        var token = try DataServerToken(teamID: "ABCDE12345", keyID: "KEYID98765", key: try ECPrivateKey(generatingOn: .p256))
        let t0: Int64 = 1_800_000_000
        let first = try token.token(now: t0, draw: 0)
        XCTAssertEqual(try token.token(now: t0 + 19 * 60 + 59, draw: 1), first, "kept below 20 minutes")
        let second = try token.token(now: t0 + 20 * 60, draw: 1)
        XCTAssertNotEqual(second, first, "re-signed at 20 minutes (draw 0)")
        XCTAssertEqual(try token.token(now: t0 + 20 * 60 + 49 * 60, draw: 0), second, "draw 1: kept for 50 minutes")
        XCTAssertNotEqual(try token.token(now: t0 + 20 * 60 + 50 * 60, draw: 0), second)
        XCTAssertThrowsError(try DataServerToken(teamID: "ABCDE12345", keyID: "K", key: try ECPrivateKey(generatingOn: .p384)))
    }

    func testTokenVerifiesWithPythonCryptographyAndATamperedOneDoesNot() throws {
        try ChildProcess.require("python3")
        let key = try ECPrivateKey(generatingOn: .p256)
        let token = try DataServerToken.sign(teamID: "ABCDE12345", keyID: "KEYID98765", key: key, issuedAt: 1_800_000_000)
        let publicPEM = PEM.encode(try key.subjectPublicKeyInfo(), label: "PUBLIC KEY")
        let script = """
            import base64, json, sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
            d = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
            pem, token = sys.stdin.read().split("\\n===\\n")
            h, p, s = token.strip().split(".")
            key = serialization.load_pem_public_key(pem.encode())
            sig = d(s)
            assert len(sig) == 64, len(sig)
            key.verify(encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")),
                       (h + "." + p).encode(), ec.ECDSA(hashes.SHA256()))
            print(json.dumps({"header": json.loads(d(h)), "claims": json.loads(d(p))}))
            """
        let good = try ChildProcess.run("python3", ["-c", script], stdin: Data((publicPEM + "\n===\n" + token).utf8))
        XCTAssertEqual(good.status, 0, good.output)
        let decoded = try XCTUnwrap(StartedLine.jsonLines(good.output).first)
        XCTAssertEqual(decoded["header"] as? [String: String], ["alg": "ES256", "kid": "KEYID98765"])
        XCTAssertEqual((decoded["claims"] as? [String: Any])?["iss"] as? String, "ABCDE12345")
        XCTAssertEqual((decoded["claims"] as? [String: Any])?["iat"] as? Int, 1_800_000_000)

        var parts = token.split(separator: ".").map(String.init)
        parts[1] = String(decoding: Base64URL.encode(Array(#"{"iss":"ZZZZZ99999","iat":1800000000}"#.utf8)), as: UTF8.self)
        let tampered = try ChildProcess.run("python3", ["-c", script], stdin: Data((publicPEM + "\n===\n" + parts.joined(separator: ".")).utf8))
        XCTAssertNotEqual(tampered.status, 0, "a changed claim fails the signature: \(tampered.output)")
    }

    func testFixedWidthSignatureRefusesNonDER() {
        XCTAssertThrowsError(try ECDSASignature.fixedWidth(fromDER: [UInt8](repeating: 1, count: 64)))
    }

    // MARK: headers

    func testRiskHeadersAreUnknownUnlessFreshAndFlagDevelopment() {
        let fresh = RiskSnapshot(metric: 3, observedAt: now - 90_000, state: .fresh)
        let production = RiskHeaders(fresh, environment: .production, now: now)
        XCTAssertEqual([production.metric, production.age], ["3", "90"])
        XCTAssertEqual(production.current, 3)
        XCTAssertEqual(RiskHeaders(fresh, environment: .development, now: now).metric, "3;env=development")
        XCTAssertEqual(RiskHeaders(RiskSnapshot(metric: 3, observedAt: now - 1_000, state: .fresh, receiptExpiresAt: now + 1), environment: .production,
                                   now: now).metric, "3", "until its receipt expires")
        for snapshot in [RiskSnapshot(metric: 3, observedAt: now, state: .stale), RiskSnapshot(metric: 3, observedAt: now, state: .stopped),
                         RiskSnapshot(metric: nil, observedAt: nil, state: nil), RiskSnapshot(metric: 3, observedAt: nil, state: nil),
                         RiskSnapshot(metric: 3, observedAt: now - 1_000, state: .fresh, receiptExpiresAt: now)] {
            let headers = RiskHeaders(snapshot, environment: .production, now: now)
            XCTAssertEqual(headers.metric, "unknown", "\(snapshot)")
            XCTAssertEqual(headers.age, "unknown", "\(snapshot)")
            XCTAssertNil(headers.current)
        }
    }

    // MARK: simulator receipts

    func testMintedReceiptVerifiesUnderItsRootOnlyAndCarriesItsFields() throws {
        let ca = try TestReceiptCA.generate()
        let certificate = try TestCA.generate().root.derBytes  // any certificate DER stands for the credential
        let created = Int64(Date().timeIntervalSince1970)
        let fields = ReceiptFields(appId: "ABCDE12345.com.example.app", attestedCertificate: certificate, type: "RECEIPT",
                                   environment: "sandbox", creationTime: created, riskMetric: 4)
        let receipt = try ca.mint(fields)
        let verified = ReceiptVerifier(trust: try TrustAnchors.apple.adding(receiptRoots: [ca.root])).verify(receipt)
        XCTAssertTrue(verified.isValid, verified.detail)
        XCTAssertEqual(verified.receipt?.riskMetric, 4)
        XCTAssertEqual(verified.receipt?.type, "RECEIPT")
        XCTAssertEqual(verified.receipt?.appId, "ABCDE12345.com.example.app")
        XCTAssertEqual(verified.receipt?.creationTime, created)
        XCTAssertEqual(verified.receipt?.notBefore, created + 86_400)
        XCTAssertEqual(verified.receipt?.expirationTime, created + 90 * 86_400)
        XCTAssertEqual(verified.receipt?.attestedCertificate, certificate)

        let apple = ReceiptVerifier().verify(receipt)
        XCTAssertFalse(apple.isValid, "not Apple's: the test root is not pinned by default")
        XCTAssertEqual(apple.failure, .receiptChainInvalid)
        var tampered = receipt
        if let index = tampered.firstRange(of: Array("ABCDE12345".utf8))?.lowerBound { tampered[index] = UInt8(ascii: "Z") }
        XCTAssertFalse(ReceiptVerifier(trust: try TrustAnchors.apple.adding(receiptRoots: [ca.root])).verify(tampered).isValid)
    }

    func testChangedRiskSettingsNeedARestart() throws {
        let folder = try E2EPaths.temporaryDirectory("risk-reload")
        try ECPrivateKey(generatingOn: .p256).pkcs8PEM().write(to: folder.appendingPathComponent("a.p8"), atomically: true, encoding: .utf8)
        func config(_ risk: String) throws -> GatewayConfiguration {
            try GatewayConfiguration.parse(yaml: """
                listen: 127.0.0.1:8080
                store: memory
                apps:
                  - app_id: ABCDE12345.com.example.app
                \(risk)
                upstreams:
                  app: http://127.0.0.1:8081
                routes:
                  - path_prefix: /
                    upstream: app
                """, baseDirectory: folder.path).configuration
        }
        let risk = "    risk: {team_id: ABCDE12345, key_id: KEYID98765, private_key_file: a.p8}"
        let started = try config(risk)
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config(risk)), [])
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config("")), ["apps[0].risk"])
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config(risk.replacingOccurrences(of: "KEYID98765", with: "KEYID00000"))),
                       ["apps[0].risk"])
    }

    func testBase64URLDecodeRoundTripsAndIsStrict() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
        }
        XCTAssertNil(Base64URL.decode(Array("ab+/".utf8)), "standard alphabet")
        XCTAssertNil(Base64URL.decode(Array("abc=".utf8)), "padding")
        XCTAssertNil(Base64URL.decode(Array("a".utf8)), "impossible length")
        XCTAssertNil(Base64URL.decode(Array("AB".utf8)), "nonzero trailing bits")
        XCTAssertEqual(Base64URL.decode(Array("AA".utf8)), [0])
    }

    // MARK: exchange deadline

    func testAnExchangeThatOutlastsItsDeadlineIsUnreachableAndBacksOff() throws {
        let fake = try FakeDataServer()
        defer { fake.stop() }
        let store = MemoryStore()
        defer { store.close() }
        let group = EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let suite = StoreConformance(store: store)
        var record = try suite.makeRecord(appId: "ABCDE12345.com.example.risk", receipt: Array("test-receipt:slow".utf8))
        // Attested now: due at once, so a failure backs off from the first step (a key overdue for
        // long backs off longer, `testTheBackoffFollowsHowLongTheKeyHasBeenOverdueAcrossReplicas`).
        record = try KeyRecord(keyId: record.keyId, publicKey: record.publicKey, environment: .production, appId: record.appId,
                               createdAt: GatewayClock.system.now(), receipt: record.receipt)
        try suite.registerExpectingAccepted(record)
        try fake.set("slow", status: 304, delay: 3)
        let key = try ECPrivateKey(pem: try String(contentsOfFile: fake.keyFile, encoding: .utf8))
        let app = ReceiptRefresher.App(server: .url(host: "127.0.0.1", port: fake.port, ca: fake.caFile),
                                       tls: try TLSClientContext(settings: TLSClientSettings(caPath: fake.caFile)),
                                       token: try DataServerToken(teamID: FakeDataServer.teamID, keyID: FakeDataServer.keyID, key: key),
                                       limiter: CallRateLimiter(rate: 5))
        let refresher = ReceiptRefresher(apps: [record.appId: app], store: store, verifier: ReceiptVerifier(), loop: group.loops[0],
                                         clock: .system, events: { _, _ in }, timeout: 1)
        func exchange() -> ReceiptRefreshReport? {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var report: ReceiptRefreshReport?
            refresher.refresh(record.keyId, forced: true) { report = $0; done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 20), .success)
            return report
        }
        let slow = try XCTUnwrap(exchange())
        XCTAssertEqual(slow.outcome, .unreachable, slow.detail)
        XCTAssertEqual(slow.detail, "timeout")
        let now = GatewayClock.system.now()
        XCTAssertTrue((now..<(now + 31_000)).contains(try XCTUnwrap(slow.nextAt)), "first back-off step")
        // Passing variant: the same exchange within its deadline.
        try fake.set("slow", status: 304, delay: 0)
        XCTAssertEqual(exchange()?.outcome, .notModified)
    }
}
