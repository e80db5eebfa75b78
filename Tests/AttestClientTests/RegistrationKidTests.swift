import AttestClient
import AttestCrypto
import Foundation
import XCTest

/// The kid is the SDK's own (standard base64 of SHA-256 of the device key's public point): a gateway
/// spelling it in another alphabet changes nothing; a gateway naming another key fails the registration.
final class RegistrationKidTests: XCTestCase {
    func testTheGatewaysSpellingOfTheKidIsNotTrusted() throws {
        let h = SDKHarness(appAttest: false)
        h.gateway.rewrite = { request, answer in
            guard request.url.path.hasSuffix("/register") else { return answer }
            return FakeGateway.withJSON(answer) { object in  // base64url without padding: the same bytes
                let kid = object["kid"] as? String ?? ""
                object["kid"] = kid.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
        }
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed, "\(result)")
        let publicKey = try XCTUnwrap(Data(base64Encoded: h.gateway.bodies("/register").first?["publicKey"] as? String ?? ""))
        XCTAssertEqual(result.kid, Data(AttestCrypto.SHA256.hash(Array(publicKey))).base64EncodedString())
        for n in 1...3 { XCTAssertEqual(h.client.send(SDKHarness.order(n)).verdict, .accepted) }
        XCTAssertEqual(h.gateway.count("/register"), 1, "no re-registration per request")
    }

    func testAGatewayNamingAnotherKeyFailsTheRegistration() {
        let h = SDKHarness(appAttest: false)
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/register") ? FakeGateway.withJSON(answer) { $0["kid"] = Data(repeating: 7, count: 32).base64EncodedString() } : answer
        }
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .failed, "\(result)")
        XCTAssertTrue(result.detail?.contains("kid") == true, "\(result)")
        XCTAssertNil(h.store.data(for: "registration"))
    }
}
