import AttestCrypto
import Foundation
import XCTest

final class HashingTests: XCTestCase {
    func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    func testSHA256KnownAnswers() {
        XCTAssertEqual(hex(SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(SHA256.hash(utf8: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(SHA256.hash(Array("ab".utf8), Array("c".utf8)), SHA256.hash(Array("abc".utf8)))
        XCTAssertEqual(SHA256.hash(Array("xabcx".utf8)[1..<4]), SHA256.hash(Array("abc".utf8)))
    }

    func testIncrementalMatchesOneShot() throws {
        let data = try SecureRandom.bytes(count: 10_000)
        let hasher = SHA256Hasher()
        var index = 0
        var step = 1
        while index < data.count {
            let end = min(data.count, index + step)
            hasher.update(data[index..<end])
            index = end
            step = step * 3 % 1021 + 1
        }
        XCTAssertEqual(hasher.finalize(), SHA256.hash(data))
        // Reusable after finalize.
        hasher.update(Array("abc".utf8))
        XCTAssertEqual(hex(hasher.finalize()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hasher.finalize(), SHA256.hash([]))
    }

    func testHMACSHA256RFC4231() {
        // RFC 4231 test case 1 and 2.
        XCTAssertEqual(hex(HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8))),
                       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(hex(HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))),
                       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        XCTAssertEqual(HMACSHA256.authenticationCode(key: [], message: []).count, 32)
    }

    func testRandomAndConstantTimeCompare() throws {
        let a = try SecureRandom.bytes(count: 32)
        let b = try SecureRandom.bytes(count: 32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(try SecureRandom.bytes(count: 0), [])
        XCTAssertThrowsError(try SecureRandom.bytes(count: -1))
        XCTAssertTrue(ConstantTime.equals(a, a))
        XCTAssertFalse(ConstantTime.equals(a, b))
        XCTAssertFalse(ConstantTime.equals(a, Array(a.dropLast())))
        var c = a
        c[31] ^= 1
        XCTAssertFalse(ConstantTime.equals(a, c))
        XCTAssertTrue(ConstantTime.equals([], []))
        XCTAssertTrue(ConstantTime.equals(a[0..<4], Array(a[0..<4])))
    }

    func testCivilTime() {
        XCTAssertEqual(CivilTime.parseISO8601("1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(CivilTime.parseISO8601("2020-11-21T22:16:05.466Z"), 1_605_996_965)
        XCTAssertEqual(CivilTime.parseISO8601("2024-02-29T12:00:00+00:00"), 1_709_208_000)
        XCTAssertNil(CivilTime.parseISO8601("2024-02-29T12:00:00"))
        XCTAssertNil(CivilTime.parseISO8601("2024-13-01T00:00:00Z"))
        XCTAssertEqual(CivilTime.iso8601(1_709_208_000), "2024-02-29T12:00:00Z")
        for t: Int64 in [-86400 * 400, 0, 951_782_400, 4_102_444_800] {
            XCTAssertEqual(CivilTime.parseISO8601(CivilTime.iso8601(t)), t)
        }
    }
}
