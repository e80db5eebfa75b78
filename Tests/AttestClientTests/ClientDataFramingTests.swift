import AppAttest
import AttestClient
import AttestCrypto
import Foundation
import XCTest

/// Binding v1 as the SDK builds it is byte-identical to the gateway's own `ClientDataBinding.v1`
/// (the bytes the gateway rebuilds and checks), and registration / lifecycle framing match DESIGN.md
/// section 8 byte for byte.
final class ClientDataFramingTests: XCTestCase {
    func testBindingV1IsByteIdenticalToTheGateways() throws {
        let challenge = Array(try SecureRandom.bytes(count: 32))
        let cases: [(method: String, target: String, body: [UInt8], bound: [(name: String, value: String)])] = [
            ("POST", "/v1/orders?n=1", Array("{\"n\":1}".utf8), []),
            ("GET", "/v1/a%20b?x=%2F&y=", [], []),
            ("PUT", "/", Array(repeating: 0xFF, count: 70_000), [("Authorization", "Bearer abc"), ("X-Device", "é")]),
        ]
        for c in cases {
            let sdk = ClientDataFraming.bindingV1(challenge: Data(challenge), method: c.method, target: c.target, body: Data(c.body),
                                                  boundFields: c.bound)
            let gateway = try ClientDataBinding.v1(challenge: challenge, method: c.method, target: c.target,
                                                   bodySHA256: AttestCrypto.SHA256.hash(c.body), boundFields: c.bound)
            XCTAssertEqual(Array(sdk), gateway, "\(c.method) \(c.target)")
            // Failing variant: one byte of the target changed, and the bytes differ.
            let other = ClientDataFraming.bindingV1(challenge: Data(challenge), method: c.method, target: c.target + "x", body: Data(c.body),
                                                    boundFields: c.bound)
            XCTAssertNotEqual(Array(other), gateway)
        }
        // The empty body's field is SHA-256 of zero bytes, as the gateway's constant.
        let empty = ClientDataFraming.bindingV1(challenge: Data([1]), method: "GET", target: "/", body: Data())
        XCTAssertEqual(Array(empty.suffix(32)), ClientDataBinding.emptyBodySHA256)
    }

    func testRegistrationAndLifecycleFraming() {
        let challenge = Data([0xAA, 0xBB])
        let publicKey = Data([0x04] + Array(repeating: 0x11, count: 64))
        let framed = ClientDataFraming.registration(challenge: challenge, publicKey: publicKey, backing: "software", integrity: ["jb_files", "debugger"])
        var expected: [UInt8] = [0, 0, 0, 11] + Array("register-v1".utf8) + [0, 0, 0, 2, 0xAA, 0xBB] + [0, 0, 0, 65] + Array(publicKey)
        expected += [0, 0, 0, 8] + Array("software".utf8) + [0, 0, 0, 17] + Array("jb_files,debugger".utf8)
        XCTAssertEqual(Array(framed), expected)
        XCTAssertNotEqual(Array(ClientDataFraming.registration(challenge: challenge, publicKey: publicKey, backing: "software", integrity: ["debugger", "jb_files"])),
                          expected, "the integrity codes' order is signed")
        let keyId = Data(repeating: 7, count: 32)
        XCTAssertEqual(Array(ClientDataFraming.lifecycle("renew-v1", challenge: challenge, keyId: keyId)),
                       [0, 0, 0, 8] + Array("renew-v1".utf8) + [0, 0, 0, 2, 0xAA, 0xBB] + [0, 0, 0, 32] + Array(keyId))
    }
}
