@testable import AppAttest
import AttestCrypto
import XCTest

/// `CBORDecoder.decodeFlatByteStringMap`, the allocation-free path for assertions, against the full
/// decoder: whatever it accepts, `decode` accepts with the same entries; what it refuses falls back to
/// `decode` (so reason codes do not change). Differential over the real assertion shape, targeted
/// shapes and many random mutations.
final class CBORFlatMapTests: XCTestCase {
    let decoder = CBORDecoder()

    /// nil, or the entries as `decode` would give them (text key, bytes value), for comparison.
    private func flat(_ bytes: [UInt8]) -> [(String, [UInt8])]? {
        decoder.decodeFlatByteStringMap(bytes).map { entries in
            entries.map { (String(decoding: bytes[$0.key], as: UTF8.self), Array(bytes[$0.value])) }
        }
    }

    private func full(_ bytes: [UInt8]) -> [(String, [UInt8])]? {
        guard let value = try? decoder.decode(bytes), case .map(let entries) = value else { return nil }
        var out: [(String, [UInt8])] = []
        for entry in entries {
            guard case .text(let key) = entry.key, case .bytes(let v) = entry.value else { return nil }
            out.append((key, v))
        }
        return out
    }

    private func assertAgrees(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        guard let fast = flat(bytes) else { return }  // refused: the caller falls back to decode
        guard let reference = full(bytes) else {
            XCTFail("fast path accepted what decode refuses: \(bytes)", file: file, line: line)
            return
        }
        XCTAssertEqual(fast.map(\.0), reference.map(\.0), file: file, line: line)
        XCTAssertEqual(fast.map(\.1), reference.map(\.1), file: file, line: line)
    }

    private func assertion() throws -> [UInt8] {
        try mintAssertion(key: try ECPrivateKey(generatingOn: .p256), appId: "ABCDE12345.com.example.app", counter: 7,
                          clientData: Array("client data".utf8))
    }

    func testAssertionShapeIsReadLikeDecode() throws {
        let object = try assertion()
        let fast = try XCTUnwrap(flat(object), "the assertion shape takes the fast path")
        XCTAssertEqual(fast.map(\.0), ["signature", "authenticatorData"])
        assertAgrees(object)
        // Non-shortest lengths: accepted by both.
        let longLength = TestCBOR.map([(.text("a"), .raw([0x59, 0x00, 0x02, 0xAA, 0xBB]))]).encoded
        XCTAssertNotNil(flat(longLength))
        assertAgrees(longLength)
    }

    func testOtherShapesAreLeftToDecode() {
        let cases: [(String, [UInt8])] = [
            ("duplicate key", TestCBOR.map([(.text("a"), .bytes([1])), (.text("a"), .bytes([2]))]).encoded),
            ("trailing byte", TestCBOR.map([(.text("a"), .bytes([1]))]).encoded + [0x00]),
            ("text value", TestCBOR.map([(.text("a"), .text("x"))]).encoded),
            ("integer key", TestCBOR.map([(.int(1), .bytes([1]))]).encoded),
            ("non-ASCII key", TestCBOR.map([(.text("é"), .bytes([1]))]).encoded),
            ("nested map", TestCBOR.map([(.text("a"), .map([]))]).encoded),
            ("indefinite map", [0xBF, 0x61, 0x61, 0x41, 0x01, 0xFF]),
            ("indefinite bytes", [0xA1, 0x61, 0x61, 0x5F, 0x41, 0x01, 0xFF]),
            ("array", [0x81, 0x41, 0x01]),
            ("truncated value", [0xA1, 0x61, 0x61, 0x43, 0x01]),
            ("count beyond input", [0xB8, 0xFF, 0x61, 0x61, 0x41, 0x01]),
            ("reserved info", [0xA1, 0x7C]),
            ("empty", []),
        ]
        for (name, bytes) in cases {
            XCTAssertNil(decoder.decodeFlatByteStringMap(bytes), name)
        }
    }

    func testRandomMutationsNeverDisagree() throws {
        var generator = SystemRandomNumberGenerator()
        let base = try assertion()
        var accepted = 0
        for round in 0..<20_000 {
            var bytes = base
            switch round % 4 {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes.removeLast(Int.random(in: 1...8, using: &generator))
            case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: Int.random(in: 0...bytes.count, using: &generator))
            default:
                // Mutate a header byte (map, key or value head) where the shape decisions are made.
                for index in [0, 1, 11, 12, 13].shuffled(using: &generator).prefix(2) where index < bytes.count {
                    bytes[index] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            if flat(bytes) != nil { accepted += 1 }
            assertAgrees(bytes)
        }
        XCTAssertGreaterThan(accepted, 1000, "enough mutants take the fast path for the comparison to mean something")
    }

    func testVerifierDecisionsAreTheSameOnBothPaths() throws {
        // A non-ASCII extra key sends an otherwise valid assertion down the full decoder: same decision.
        let key = try ECPrivateKey(generatingOn: .p256)
        let app = AppPolicy(appId: "ABCDE12345.com.example.app", environment: .any)
        let clientData = Array("client data".utf8)
        let object = try mintAssertion(key: key, appId: app.appId, counter: 3, clientData: clientData)
        let decoded = try decoder.decode(object)
        var entries = decoded.mapValue ?? []
        entries.append(CBORMapEntry(key: .text("é"), value: .bytes([1])))
        let slowShape = TestCBOR.map(entries.map { entry in
            (TestCBOR.text(entry.key.textValue ?? ""), TestCBOR.bytes(entry.value.bytesValue ?? []))
        }).encoded
        XCTAssertNil(decoder.decodeFlatByteStringMap(slowShape))
        let publicKey = try key.publicKey()
        let fast = AssertionVerifier.verify(assertionObject: object, publicKey: publicKey, app: app, clientData: clientData, previousCounter: 2)
        let slow = AssertionVerifier.verify(assertionObject: slowShape, publicKey: publicKey, app: app, clientData: clientData, previousCounter: 2)
        XCTAssertTrue(fast.isAccepted)
        XCTAssertTrue(slow.isAccepted)
        XCTAssertEqual(fast.reason, slow.reason)
        // And a refusal on the fast path keeps its reason: missing authenticatorData.
        let missing = TestCBOR.map([(.text("signature"), .bytes([1, 2]))]).encoded
        XCTAssertEqual(AssertionVerifier.verify(assertionObject: missing, publicKey: publicKey, app: app, clientData: clientData,
                                                previousCounter: nil).reason, .assertionMalformed)
    }
}
