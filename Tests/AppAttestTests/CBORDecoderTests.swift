@testable import AppAttest
import AttestSimulator
import Foundation
import GatewayTestSupport
import XCTest

final class CBORDecoderTests: XCTestCase {
    let decoder = CBORDecoder()

    func testDecodesAppAttestShapes() throws {
        let value = try decoder.decode(TestCBOR.map([(.text("fmt"), .text("apple-appattest")), (.int(-2), .bytes([1, 2])),
                                                     (.int(1), .array([.int(0), .int(-7), .uint(UInt64.max)]))]).encoded)
        XCTAssertEqual(value["fmt"]?.textValue, "apple-appattest")
        XCTAssertEqual(value[intKey: -2]?.bytesValue, [1, 2])
        XCTAssertEqual(value[intKey: 1]?.arrayValue?.map(\.integerValue), [0, -7, nil])
        XCTAssertEqual(try decoder.decode([0xF4]), .bool(false))
        XCTAssertEqual(try decoder.decode([0xF5]), .bool(true))
        XCTAssertEqual(try decoder.decode([0xF6]), .null)
        XCTAssertEqual(try decoder.decode([0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).integerValue, Int64.min)
        // Non-shortest lengths are accepted (bounded by the input).
        XCTAssertEqual(try decoder.decode([0x59, 0x00, 0x02, 0xAA, 0xBB]), .bytes([0xAA, 0xBB]))
        XCTAssertEqual(try decoder.decode([0x18, 0x05]), .unsigned(5))
    }

    func testRefusals() {
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("trailing byte", [0x01, 0x00]),
            ("truncated bytes", [0x43, 0x01, 0x02]),
            ("indefinite bytes", [0x5F, 0x41, 0x01, 0xFF]),
            ("indefinite array", [0x9F, 0x01, 0xFF]),
            ("indefinite map", [0xBF, 0x61, 0x61, 0x01, 0xFF]),
            ("tag", [0xC2, 0x41, 0x01]),
            ("float16", [0xF9, 0x3C, 0x00]),
            ("float64", [0xFB, 0, 0, 0, 0, 0, 0, 0, 0]),
            ("simple 16", [0xF0]),
            ("simple 24", [0xF8, 0x20]),
            ("reserved info", [0x1C]),
            ("break", [0xFF]),
            ("duplicate text key", TestCBOR.map([(.text("a"), .int(1)), (.text("a"), .int(2))]).encoded),
            ("duplicate int key, long form", [0xA2, 0x01, 0x01, 0x18, 0x01, 0x02]),
            ("invalid UTF-8", [0x62, 0xC3, 0x28]),
            ("length beyond input", [0x5A, 0xFF, 0xFF, 0xFF, 0xFF, 0x00]),
            ("8-byte length", [0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            ("array count beyond input", [0x9A, 0x00, 0x10, 0x00, 0x00]),
            ("map missing value", [0xA1, 0x01]),
        ]
        for (name, bytes) in cases {
            XCTAssertThrowsError(try decoder.decode(bytes), name)
        }
    }

    func testDepthAndSizeLimits() {
        let deep = [UInt8](repeating: 0x81, count: 8) + [0x01]
        XCTAssertNoThrow(try decoder.decode(deep))
        XCTAssertThrowsError(try decoder.decode([0x81] + deep))
        XCTAssertThrowsError(try decoder.decode([UInt8](repeating: 0x81, count: 100_000) + [0x01]))
        let many = TestCBOR.array(Array(repeating: .int(0), count: 1025)).encoded
        XCTAssertThrowsError(try decoder.decode(many))
        let small = CBORDecoder(limits: .init(maxDepth: 2, maxItems: 4, maxInputLength: 16))
        XCTAssertThrowsError(try small.decode([UInt8](repeating: 0x40, count: 1) + [UInt8](repeating: 0, count: 20)))
        XCTAssertThrowsError(try small.decode(TestCBOR.array(Array(repeating: .int(0), count: 5)).encoded))
    }

    func testDecodePrefixReportsEnd() throws {
        let bytes = TestCBOR.map([(.int(1), .int(2))]).encoded + [0xAA]
        let (value, end) = try decoder.decodePrefix(bytes, from: 0)
        XCTAssertEqual(value[intKey: 1]?.integerValue, 2)
        XCTAssertEqual(end, bytes.count - 1)
    }

    /// Random truncations of real objects always fail; random mutations never crash.
    func testFuzzRealObjects() throws {
        guard let dir = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        var objects: [[UInt8]] = []
        for name in ["attestation-apple-doc-2026.json", "attestation-veehaitch-ios14.4.json", "assertion-worldcoin-dev-2025a.json"] {
            let vector = try VectorFixture(dir.appendingPathComponent(name))
            objects.append(try vector.bytes("attestationObject") ?? vector.bytes("assertion") ?? [])
        }
        var generator = SplitMix64(seed: 0x5EED)
        for object in objects {
            XCTAssertNoThrow(try decoder.decode(object))
            for _ in 0..<300 {
                let cut = Int(generator.next() % UInt64(object.count))
                XCTAssertThrowsError(try decoder.decode(Array(object.prefix(cut))), "truncated at \(cut)")
            }
            for _ in 0..<2000 {
                var mutated = object
                let flips = 1 + Int(generator.next() % 4)
                for _ in 0..<flips {
                    let position = Int(generator.next() % UInt64(mutated.count))
                    switch generator.next() % 3 {
                    case 0: mutated[position] = UInt8(truncatingIfNeeded: generator.next())
                    case 1: mutated.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                    default: mutated.remove(at: position)
                    }
                }
                _ = try? decoder.decode(mutated)  // must return or throw, never crash
                if let value = try? decoder.decode(mutated), let raw = value["authData"]?.bytesValue ?? value["authenticatorData"]?.bytesValue {
                    _ = try? AuthenticatorData(raw, kind: value["authData"] != nil ? .attestation : .assertion)
                }
            }
        }
    }
}

/// Deterministic pseudo-random numbers for fuzz tests (SplitMix64).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

final class CBORWriterTests: XCTestCase {
    func testRoundTripAndShortestForm() throws {
        let value: CBORValue = .map([
            (.text("fmt"), .text("apple-appattest")),
            (.integer(-3), .bytes([UInt8](repeating: 7, count: 300))),
            (.integer(1), .array([.integer(0), .integer(23), .integer(24), .integer(255), .integer(256), .integer(65536), .integer(Int64.min),
                                  .unsigned(UInt64.max), .bool(true), .null])),
        ])
        let bytes = try CBORWriter.encode(value)
        XCTAssertEqual(try CBORDecoder().decode(bytes), value)
        XCTAssertEqual(try CBORWriter.encode(.integer(24)), [0x18, 24])
        XCTAssertEqual(try CBORWriter.encode(.integer(-1)), [0x20])
        XCTAssertEqual(try CBORWriter.encode(.bytes([1, 2])), [0x42, 1, 2])
        // Same bytes as the test encoder used to mint objects.
        XCTAssertEqual(try CBORWriter.encode(.map([(.text("a"), .integer(-7))])), TestCBOR.map([(.text("a"), .int(-7))]).encoded)
    }
}
