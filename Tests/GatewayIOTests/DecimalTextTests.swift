import GatewayIO
import XCTest

/// `DecimalText`, the one decimal writer (HTTP heads, RESP commands, address text), against Swift's
/// own `String(_:)`: edges of every digit count, both signs, `Int64.min`, and random values.
final class DecimalTextTests: XCTestCase {
    private func text(_ value: Int64) -> String {
        var out: [UInt8] = [0x78]  // appends after what is there
        DecimalText.append(value, to: &out)
        XCTAssertEqual(out.first, 0x78)
        return String(decoding: out.dropFirst(), as: UTF8.self)
    }

    func testAgreesWithStringForEdgesAndRandomValues() {
        var values: [Int64] = [0, 1, -1, 9, 10, 11, 99, 100, 101, -9, -10, -99, -100, .max, .min, .max - 1, .min + 1]
        var p: Int64 = 1
        for _ in 0..<18 {
            p *= 10
            values += [p - 1, p, p + 1, -(p - 1), -p, -(p + 1)]
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 { values.append(Int64(bitPattern: rng.next()) >> Int64.random(in: 0..<63)) }
        for value in values {
            XCTAssertEqual(text(value), String(value))
            XCTAssertEqual(DecimalText.withDigits(of: value) { String(decoding: $0, as: UTF8.self) }, String(value))
            var viaInt: [UInt8] = []
            DecimalText.append(Int(value), to: &viaInt)
            XCTAssertEqual(String(decoding: viaInt, as: UTF8.self), String(value))
        }
        XCTAssertEqual(DecimalText.withDigits(of: .min) { $0.count }, DecimalText.maxBytes, "the longest text fits the bound")
    }
}
