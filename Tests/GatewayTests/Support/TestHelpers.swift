import AttestCrypto
import Foundation
import XCTest

/// Lower-case hex SHA-256 (what upstream.py reports as bodySHA256).
func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(bytes).map { String(format: "%02x", $0) }.joined()
}

/// `count` random bytes (every byte value, including CR, LF and NUL).
func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

/// A base64 challenge of 32 random bytes that the gateway never issued.
func unissuedChallenge() -> String { Data(randomBytes(32)).base64EncodedString() }

/// Polls `condition` until it holds or `timeout` seconds pass (outcome checks only, no timing asserted).
@discardableResult
func eventually(timeout: TimeInterval = 15, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}

/// Asserts a refusal: status, `error` in the JSON and in `App-Attest-Error`, `action`.
func assertRefusal(_ reply: HTTPReply, status: Int, code: String, action: String? = nil,
                   file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(reply.status, status, "\(reply)", file: file, line: line)
    XCTAssertEqual(reply.errorCode, code, "\(reply)", file: file, line: line)
    XCTAssertEqual(reply.header("App-Attest-Error"), code, "\(reply)", file: file, line: line)
    if let action { XCTAssertEqual(reply.action, action, "\(reply)", file: file, line: line) }
    XCTAssertNotNil(reply.json["detail"] as? String, "refusals carry a detail: \(reply)", file: file, line: line)
}

/// Asserts a challenge refusal (`refresh_challenge`) that carries a fresh, usable-looking challenge.
/// - Returns: the fresh challenge.
@discardableResult
func assertChallengeRefusal(_ reply: HTTPReply, code: String, notBefore nowSeconds: Int64,
                            file: StaticString = #filePath, line: UInt = #line) -> String? {
    assertRefusal(reply, status: 401, code: code, action: "refresh_challenge", file: file, line: line)
    let fresh = reply.json["challenge"] as? String
    let expiresAt = (reply.json["expiresAt"] as? NSNumber)?.int64Value
    XCTAssertNotNil(fresh, "a challenge refusal carries a fresh challenge: \(reply)", file: file, line: line)
    XCTAssertEqual(fresh.flatMap { Data(base64Encoded: $0) }?.count, 32, "fresh challenge is base64 of 32 bytes", file: file, line: line)
    XCTAssertGreaterThan(expiresAt ?? 0, nowSeconds, "fresh challenge expires in the future", file: file, line: line)
    return fresh
}

extension String {
    /// Consecutive pieces of `size` characters.
    func chunked(_ size: Int) -> [String] {
        var out: [String] = []
        var i = startIndex
        while i < endIndex {
            let j = index(i, offsetBy: size, limitedBy: endIndex) ?? endIndex
            out.append(String(self[i..<j]))
            i = j
        }
        return out
    }
}
