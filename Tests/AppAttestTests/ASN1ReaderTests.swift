@testable import AppAttest
import AttestCrypto
import XCTest

final class ASN1ReaderTests: XCTestCase {
    let nonce = [UInt8](repeating: 0xAB, count: 32)

    func testNonceExtensionStrictDER() throws {
        XCTAssertEqual(try NonceExtension.nonce(fromExtensionValue: nonceExtensionDER(nonce)), nonce)
        let bad: [(String, [UInt8])] = [
            ("31 bytes", nonceExtensionDER(Array(nonce.dropLast()))),
            ("33 bytes", nonceExtensionDER(nonce + [0])),
            ("trailing bytes", nonceExtensionDER(nonce) + [0x00]),
            ("long-form octet length", [0x30, 0x25, 0xA1, 0x23, 0x04, 0x81, 0x20] + nonce),
            ("long-form sequence length", [0x30, 0x81, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce),
            ("indefinite length", [0x30, 0x80, 0xA1, 0x22, 0x04, 0x20] + nonce + [0, 0]),
            ("implicit [1] instead of explicit", [0x30, 0x22, 0x81, 0x20] + nonce),
            ("[2] tag", [0x30, 0x24, 0xA2, 0x22, 0x04, 0x20] + nonce),
            ("not an octet string", [0x30, 0x24, 0xA1, 0x22, 0x03, 0x20] + nonce),
            ("constructed octet string", [0x30, 0x26, 0xA1, 0x24, 0x24, 0x22, 0x04, 0x20] + nonce),
            ("two elements in [1]", [0x30, 0x26, 0xA1, 0x24, 0x04, 0x20] + nonce + [0x05, 0x00]),
            ("two elements in sequence", [0x30, 0x26, 0xA1, 0x22, 0x04, 0x20] + nonce + [0x05, 0x00]),
            ("truncated", Array(nonceExtensionDER(nonce).dropLast())),
            ("empty", []),
        ]
        for (name, value) in bad {
            XCTAssertThrowsError(try NonceExtension.nonce(fromExtensionValue: value), name)
        }
    }

    func testBERIndefiniteAndSegmentedOctets() throws {
        // SEQUENCE (indefinite) { OCTET STRING (constructed, indefinite) { "ab", "c" } }
        let ber: [UInt8] = [0x30, 0x80, 0x24, 0x80, 0x04, 0x02, 0x61, 0x62, 0x04, 0x01, 0x63, 0x00, 0x00, 0x00, 0x00]
        let node = try ASN1Reader(rules: .ber).parse(ber)
        XCTAssertTrue(node.isIndefinite)
        XCTAssertEqual(try node.children[0].octets(), Array("abc".utf8))
        XCTAssertThrowsError(try ASN1Reader(rules: .der).parse(ber))
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse(ber + [0]))
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse(Array(ber.dropLast())))
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse([0x04, 0x80, 0x00, 0x00]), "indefinite primitive")
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse([0x30, 0x80, 0x00, 0x01]), "bad EOC")
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse([0x24, 0x03, 0x02, 0x01, 0x00]).octets(), "segment is not an OCTET STRING")
        XCTAssertThrowsError(try ASN1Reader(rules: .ber, maxDepth: 2).parse([0x30, 0x04, 0x30, 0x02, 0x30, 0x00]))
        XCTAssertThrowsError(try ASN1Reader(rules: .ber).parse([0x30, 0x85, 0, 0, 0, 0, 1]), "5-byte length")
        XCTAssertThrowsError(try ASN1Reader(rules: .der).parse([0x04, 0x81, 0x01, 0x00]), "non-minimal DER length")
        XCTAssertThrowsError(try ASN1Reader(rules: .der).parse([0x1F, 0x05, 0x00]), "high-tag form for a low tag")
    }

    func testIntegersAndOIDs() throws {
        let reader = ASN1Reader(rules: .der)
        XCTAssertEqual(try reader.parse([0x02, 0x01, 0x05]).smallInteger(), 5)
        XCTAssertEqual(try reader.parse([0x02, 0x02, 0x00, 0x80]).smallInteger(), 128)
        XCTAssertThrowsError(try reader.parse([0x02, 0x02, 0x00, 0x05]).smallInteger())
        XCTAssertThrowsError(try reader.parse([0x02, 0x01, 0xFF]).smallInteger())
        XCTAssertEqual(try reader.parse(DERWriter.objectIdentifier("1.2.840.113635.100.8.2")!).objectIdentifier(), "1.2.840.113635.100.8.2")
        XCTAssertEqual(try reader.parse(DERWriter.objectIdentifier("2.16.840.1.101.3.4.2.1")!).objectIdentifier(), "2.16.840.1.101.3.4.2.1")
        XCTAssertThrowsError(try reader.parse([0x06, 0x02, 0x80, 0x01]).objectIdentifier())
    }
}
