import AppAttest
import AttestCrypto
import Foundation
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

    /// Every length from 0 to 99 bytes (each tail case, several whole groups), against Foundation's
    /// encoder as the reference: the standard padded spelling, the URL-safe unpadded one and the
    /// standard unpadded one decode to the bytes; changing any one character to a byte outside both
    /// alphabets, or one of the other alphabet, is refused.
    func testDecodeAgreesWithFoundationAtEveryLength() throws {
        for length in 0..<100 {
            let bytes = try SecureRandom.bytes(count: length)
            let padded = Data(bytes).base64EncodedString()
            let unpadded = padded.replacingOccurrences(of: "=", with: "")
            let urlSafe = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            XCTAssertEqual(Base64.decode(padded), bytes, padded)
            XCTAssertEqual(Base64.decode(unpadded), bytes, unpadded)
            XCTAssertEqual(Base64.decode(urlSafe), bytes, urlSafe)
            var chars = Array(unpadded.utf8)
            for i in chars.indices {
                let kept = chars[i]
                // `=` in the last two places can be valid padding of a shorter value: not a change to refuse.
                for bad in [UInt8(ascii: "*"), UInt8(ascii: "="), 0x00, 0x80, 0xFF]
                where !(bad == UInt8(ascii: "=") && i >= chars.count - 2) {
                    chars[i] = bad
                    XCTAssertNil(Base64.decode(chars), "\(unpadded) with byte \(bad) at \(i)")
                }
                chars[i] = kept
            }
            // One character of the other alphabet in a value that uses `+` or `/` somewhere else.
            if let plus = chars.firstIndex(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }),
               let other = chars.indices.first(where: { $0 != plus }) {
                var mixed = chars
                mixed[other] = UInt8(ascii: "-")
                XCTAssertNil(Base64.decode(mixed), String(decoding: mixed, as: UTF8.self))
            }
        }
    }

    /// The unused low bits of the last character must be zero: `QQ` is "A", `QR` spells the same
    /// byte with a bit set and is refused; the same for the two-byte tail (`QUI` / `QUJ`).
    func testUnusedBitsOfTheTailAreZero() {
        XCTAssertEqual(Base64.decode("QQ"), [0x41])
        XCTAssertNil(Base64.decode("QR"))
        XCTAssertEqual(Base64.decode("QUI"), [0x41, 0x42])
        XCTAssertNil(Base64.decode("QUJ"))
        XCTAssertEqual(Base64.decode("QUJD"), [0x41, 0x42, 0x43])
    }
}
