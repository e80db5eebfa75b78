import AppAttest
@testable import Gateway
import GatewayConfig
import GatewayHTTP
import XCTest

/// The ingress strip of the gateway's header family and the verdict headers set by replacement
/// (DESIGN.md section 5), and the refusal body format (section 2).
final class HeaderFamilyTests: XCTestCase {
    func testStripRemovesEveryCopyInAnyCaseAndExtractsEvidence() throws {
        let family = HeaderFamily(HeadersConfiguration())
        var headers = try HTTPHeaders([
            ("Host", "h"), ("app-attest-verdict", "valid"), ("APP-ATTEST-KEY-ID", "a2V5"), ("App-Attest-Foo", "x"),
            ("App-Attest-Challenge", "Y2g="), ("X-Other", "keep"), ("aPp-AtTeSt-AsSeRtIoN", "YXM="), ("App-Attest-Verdict", "valid"),
            ("App-Attestation", "not of the family: the prefix ends with the hyphen"), ("X-App-Attest-Verdict", "keep too"),
        ])
        let evidence = family.stripAndExtract(&headers)
        XCTAssertEqual(headers.count, 4)
        XCTAssertEqual(headers.values("X-Other"), ["keep"])
        XCTAssertEqual(headers.count(of: "App-Attestation"), 1)
        XCTAssertEqual(headers.values("X-App-Attest-Verdict"), ["keep too"])
        XCTAssertEqual(evidence.keyId.map(Array.init), Array("a2V5".utf8))
        XCTAssertEqual(evidence.challenge.map(Array.init), Array("Y2g=".utf8))
        XCTAssertEqual(evidence.assertion.map(Array.init), Array("YXM=".utf8))
        XCTAssertNil(evidence.duplicated)
    }

    /// Upstream responses lose every `App-Attest-` field, and the configured `headers.error` name
    /// when it lies outside that family: no upstream field passes for a gateway refusal. With the
    /// default name, a field of the same custom name is the upstream's own and passes.
    func testUpstreamResponseLosesTheFamilyAndACustomErrorName() throws {
        let fields: [(String, String)] = [
            ("App-Attest-Error", "key_unknown"), ("x-gateway-error", "key_unknown"), ("X-Gateway-Error", "again"),
            ("App-Attest-Next-Challenge", "forged"), ("X-Other", "keep"),
        ]
        let custom = HeaderFamily(HeadersConfiguration(error: "X-Gateway-Error"))
        var head = HTTPResponseHead(status: 200, headers: try HTTPHeaders(fields))
        custom.dropUpstreamCopies(&head)
        XCTAssertEqual(head.headers.map(\.name), ["X-Other"])
        let issued = ChallengeIssuer.Issued(bytes: Array(repeating: 7, count: 32), expiresAt: 1_900_000_000)
        head = HTTPResponseHead(status: 200, headers: try HTTPHeaders(fields))
        NextChallengeHeaders.filter(issued, family: custom)(&head)
        XCTAssertEqual(head.headers.map(\.name), ["X-Other", "App-Attest-Next-Challenge", "App-Attest-Next-Challenge-Expires"])
        XCTAssertEqual(head.headers.values("App-Attest-Next-Challenge"), [Base64.encode(issued.bytes)])

        let standard = HeaderFamily(HeadersConfiguration())
        head = HTTPResponseHead(status: 200, headers: try HTTPHeaders(fields))
        standard.dropUpstreamCopies(&head)
        XCTAssertEqual(head.headers.map(\.name), ["x-gateway-error", "X-Gateway-Error", "X-Other"])
    }

    /// CGI, WSGI, PHP and Rack read `App_Attest_Verdict` as `HTTP_APP_ATTEST_VERDICT`, the name of
    /// the field the gateway sets: underscore spellings of the family are stripped too, and never
    /// read as evidence.
    func testUnderscoreSpellingsAreStrippedAndNotReadAsEvidence() throws {
        let family = HeaderFamily(HeadersConfiguration())
        var headers = try HTTPHeaders([
            ("App_Attest_Verdict", "valid"), ("app_attest-tier", "attested"), ("APP-ATTEST_KEY_ID", "a2V5"),
            ("App_Attest_Assertion", "YXM="), ("App_Attestation", "kept: not the prefix"), ("X_Other", "keep"),
        ])
        let evidence = family.stripAndExtract(&headers)
        XCTAssertEqual(headers.count, 2, "\(headers)")
        XCTAssertEqual(headers.values("App_Attestation"), ["kept: not the prefix"])
        XCTAssertEqual(headers.values("X_Other"), ["keep"])
        XCTAssertNil(evidence.keyId, "evidence is read from the exact names only")
        XCTAssertNil(evidence.assertion)
        var trailers = try HTTPHeaders([("App_Attest_Verdict", "valid"), ("X-Keep", "1")])
        family.strip(&trailers)
        XCTAssertEqual(trailers.count, 1)
        XCTAssertEqual(trailers.values("X-Keep"), ["1"])
    }

    func testDuplicatedEvidenceIsNoticed() throws {
        let family = HeaderFamily(HeadersConfiguration())
        var headers = try HTTPHeaders([("App-Attest-Key-Id", "a"), ("app-attest-key-id", "b")])
        let evidence = family.stripAndExtract(&headers)
        XCTAssertEqual(evidence.duplicated, "App-Attest-Key-Id")
        XCTAssertTrue(headers.isEmpty)
    }

    func testCustomPrefix() throws {
        let config = HeadersConfiguration(prefix: "X-Attest-", evidence: .init(keyID: "X-Attest-Key", challenge: "X-Attest-Challenge",
                                                                             assertion: "X-Attest-Assertion", clientData: "X-Attest-Client-Data"))
        let family = HeaderFamily(config)
        var headers = try HTTPHeaders([("x-attest-key", "k"), ("X-ATTEST-anything", "gone"), ("App-Attest-Verdict", "valid"),
                                       ("App_Attest_Key_Id", "a2V5"), ("X-Other", "keep")])
        let evidence = family.stripAndExtract(&headers)
        XCTAssertEqual(evidence.keyId.map(Array.init), Array("k".utf8), "evidence from the configured names only")
        // Probe: the default family passed through once renamed, so an upstream not yet switched to
        // the new names read a verdict the client wrote. It is stripped too, never read.
        XCTAssertEqual(headers.map(\.name), ["X-Other"])
        var trailers = try HTTPHeaders([("App-Attest-Verdict", "valid"), ("X-Attest-Verdict", "valid"), ("X-Keep", "1")])
        family.strip(&trailers)
        XCTAssertEqual(trailers.map(\.name), ["X-Keep"])
        // The default configuration strips its family once (nothing else).
        var plain = try HTTPHeaders([("X-Attest-Verdict", "not this family"), ("App-Attest-Verdict", "valid")])
        HeaderFamily(HeadersConfiguration()).strip(&plain)
        XCTAssertEqual(plain.map(\.name), ["X-Attest-Verdict"])
    }

    func testVerdictHeadersAreSetByReplacement() throws {
        var headers = try HTTPHeaders([("Host", "h")])
        var report = VerdictReport(.valid, keyId: try .init([UInt8](repeating: 0xFB, count: 32)))
        report.counter = 7
        report.environment = "production"
        report.signals = AuthenticatorSignals(validationCategory: [1, 0, 0, 0], bundleVersion: "42")
        report.apply(to: &headers, names: HeadersConfiguration().injected)
        XCTAssertEqual(headers.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(headers.values("App-Attest-Key-Id"), [Base64.encode([UInt8](repeating: 0xFB, count: 32))])
        XCTAssertEqual(headers.values("App-Attest-Counter"), ["7"])
        XCTAssertEqual(headers.values("App-Attest-Environment"), ["production"])
        XCTAssertEqual(headers.values("App-Attest-Validation-Category"), ["01000000"])
        XCTAssertEqual(headers.values("App-Attest-Bundle-Version"), ["42"])
        XCTAssertFalse(headers.contains("App-Attest-Reason"))

        var invalid = try HTTPHeaders([("Host", "h")])
        var bad = VerdictReport(.invalid, reason: "bad_signature", keyId: try .init([UInt8](repeating: 1, count: 32)))
        bad.counter = 3
        bad.apply(to: &invalid, names: HeadersConfiguration().injected)
        XCTAssertEqual(invalid.values("App-Attest-Verdict"), ["invalid"])
        XCTAssertEqual(invalid.values("App-Attest-Reason"), ["bad_signature"])
        XCTAssertFalse(invalid.contains("App-Attest-Key-Id"), "the key id is only sent with a valid verdict")
        XCTAssertFalse(invalid.contains("App-Attest-Counter"))
    }

    func testRefusalRendering() throws {
        var refusal = Refusal.store(.challengeExpired)
        refusal.freshChallenge = ([UInt8](repeating: 0xAB, count: 32), 1_800_000_300)
        let response = refusal.response(errorHeader: "App-Attest-Error")
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(response.headers.values("App-Attest-Error"), ["challenge_expired"])
        XCTAssertEqual(response.headers.values("Content-Type"), ["application/json"])
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        XCTAssertEqual(json["error"] as? String, "challenge_expired")
        XCTAssertEqual(json["action"] as? String, "refresh_challenge")
        XCTAssertEqual(json["challenge"] as? String, Base64.encode([UInt8](repeating: 0xAB, count: 32)))
        XCTAssertEqual(json["expiresAt"] as? Int, 1_800_000_300)
        XCTAssertNotNil(json["detail"] as? String)

        let outage = Refusal.storeUnavailable.response(errorHeader: "App-Attest-Error")
        XCTAssertEqual(outage.status, 503)
        XCTAssertEqual(outage.headers.values("Retry-After"), ["1"])
    }
}
