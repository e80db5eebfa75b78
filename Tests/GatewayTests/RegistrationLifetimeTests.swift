import AppAttest
import Foundation
import Gateway
import GatewayTestSupport
import XCTest

/// `RegistrationLifetime` (expiresAt, renewAfter at two thirds of the TTL) and the lifecycle client
/// data framing, the latter checked against Python's `struct` framing (an independent writer).
final class RegistrationLifetimeTests: XCTestCase {
    func testExpiryAndRenewAfterAtTwoThirds() {
        let lifetime = RegistrationLifetime(ttlMillis: 3_600_000)
        XCTAssertEqual(lifetime.expiresAt(now: 1_000_000), 4_600_000)
        XCTAssertEqual(lifetime.renewAfter(expiresAt: 4_600_000), 1_000_000 + 2_400_000, "two thirds of an hour after registration")
        XCTAssertEqual(RegistrationLifetime(ttlMillis: 2_592_000_000).renewAfter(expiresAt: 2_592_000_000), 1_728_000_000,
                       "30 days: renew after 20")
        XCTAssertEqual(lifetime.expiresAt(now: .max - 10), .max, "saturates instead of trapping")
        XCTAssertNil(RegistrationLifetime.forever.expiresAt(now: 1_000))
        XCTAssertNil(RegistrationLifetime.forever.renewAfter(expiresAt: 5_000))
        XCTAssertNil(lifetime.renewAfter(expiresAt: nil))
        XCTAssertEqual(RegistrationLifetime.jsonSeconds(1_999), 1)
        XCTAssertEqual(RegistrationLifetime.jsonSeconds(-1), -1)
    }

    func testLifecycleClientDataMatchesPythonFraming() throws {
        let challenge = (0..<32).map { UInt8($0 * 7 & 0xFF) }
        let keyId = (0..<32).map { UInt8(255 - $0) }
        for action in LifecycleClientData.Action.allCases {
            let script = """
                import struct, sys, base64
                c = base64.b64decode(sys.argv[1]); k = base64.b64decode(sys.argv[2])
                out = b''.join(struct.pack('>I', len(f)) + f for f in [sys.argv[3].encode(), c, k])
                print(base64.b64encode(out).decode())
                """
            let result = try ChildProcess.run("python3", ["-c", script, Data(challenge).base64EncodedString(),
                                                          Data(keyId).base64EncodedString(), "\(action.rawValue)-v1"])
            XCTAssertEqual(result.status, 0, result.output)
            let expected = try XCTUnwrap(Data(base64Encoded: result.output.trimmingCharacters(in: .whitespacesAndNewlines)))
            XCTAssertEqual(LifecycleClientData.bytes(action, challenge: challenge, keyId: keyId), Array(expected))
        }
        XCTAssertNotEqual(LifecycleClientData.bytes(.renew, challenge: challenge, keyId: keyId),
                          LifecycleClientData.bytes(.forget, challenge: challenge, keyId: keyId))
    }
}
