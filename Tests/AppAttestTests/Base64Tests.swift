import AppAttest
import AttestCrypto
import XCTest

final class Base64Tests: XCTestCase {
    func testAlphabetsAndPadding() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10]
        XCTAssertEqual(Base64.encode(bytes), "+/+/ABA=")
        XCTAssertEqual(Base64.encode(bytes, urlSafe: true, padded: false), "-_-_ABA")
        for text in ["+/+/ABA=", "+/+/ABA", "-_-_ABA=", "-_-_ABA"] {
            XCTAssertEqual(Base64.decode(text), bytes, text)
        }
        XCTAssertEqual(Base64.decode(""), [])
        for n in 0..<40 {
            let data = try SecureRandom.bytes(count: n)
            XCTAssertEqual(Base64.decode(Base64.encode(data)), data)
            XCTAssertEqual(Base64.decode(Base64.encode(data, urlSafe: true, padded: false)), data)
        }
    }

    func testRefusals() {
        for text in ["+/+/ AB=", "+/+/\nABA=", " QQ==", "QQ== ", "-_+/", "QQ=", "Q===", "QQ=a", "A", "AAAAA", "Q", "QR==", "QQ?=",
                     "QUJD=", "=QUJD", "QU==JD", "é"] {
            XCTAssertNil(Base64.decode(text), text)
        }
    }

    func testKeyIdDecoding() throws {
        let keyId = try SecureRandom.bytes(count: 32)
        XCTAssertEqual(try Base64.decodeKeyId(Base64.encode(keyId)), keyId)
        XCTAssertEqual(try Base64.decodeKeyId(Base64.encode(keyId, urlSafe: true, padded: false)), keyId)
        XCTAssertThrowsError(try Base64.decodeKeyId(Base64.encode(Array(keyId.dropLast())))) {
            XCTAssertEqual(($0 as? AppAttestError)?.reason, .keyIdInvalid)
        }
        XCTAssertThrowsError(try Base64.decodeKeyId("not base64!")) {
            XCTAssertEqual(($0 as? AppAttestError)?.reason, .encodingInvalid)
        }
        XCTAssertThrowsError(try Base64.decodeField(Array("a b".utf8))) {
            XCTAssertEqual(($0 as? AppAttestError)?.reason, .encodingInvalid)
        }
    }
}
