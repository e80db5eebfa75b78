import XCTest
@testable import AppAttest
import AttestCrypto

final class ZZScratchMutation: XCTestCase {
    func testScratchLoop() throws {
        for round in 0..<150 {
            let m = try MintedAttestation(ca: AttestationVerifierTests.ca)
            let object = try m.build()
            let receipt = [0x67] + Array("receipt".utf8) + [0x4C] + Array("test-receipt".utf8)
            let receiptStart = object.firstRange(of: receipt)!.lowerBound
            var generator = SplitMix64(seed: 42)
            for position in 0..<object.count {
                if (receiptStart..<(receiptStart + receipt.count)).contains(position) { continue }
                var mutated = object
                let x = UInt8(1 + generator.next() % 255)
                mutated[position] ^= x
                if try m.verify(mutated).isAccepted {
                    let lo = max(0, position - 24), hi = min(object.count, position + 24)
                    print("ACCEPTED round \(round) pos \(position) xor \(x) of \(object.count): orig \(object[lo..<hi].map { String(format: "%02x", $0) }.joined()) mutated-byte \(String(format: "%02x", object[position]))->\(String(format: "%02x", mutated[position]))")
                }
            }
        }
    }
}
