import GatewayStore
import GatewayTestSupport
import XCTest

/// The anti-replay window as a pure value: against a naive model, and its stored form.
final class ReplayWindowTests: XCTestCase {
    func testMatchesNaiveModelOnRandomWalks() {
        var rng = SplitMix64(seed: 99)
        for _ in 0..<50 {
            var window = ReplayWindow()
            var highest: UInt32 = 0
            var seen: Set<UInt32> = [0]
            for _ in 0..<2_000 {
                let size = Int(rng.next() % 140) - 5
                let delta = Int64(rng.next() % 300) - 200
                let counter = UInt32(clamping: max(Int64(highest) + delta, 0))
                let distance = Int64(highest) - Int64(counter)
                let expected = counter > highest
                    || (distance >= 1 && distance <= Int64(ReplayWindow.clampedSize(size)) && !seen.contains(counter))
                let admitted = window.admit(counter: counter, highest: highest, size: size)
                XCTAssertEqual(admitted != nil, expected, "counter \(counter) highest \(highest) size \(size)")
                if let admitted {
                    seen.insert(counter)
                    highest = admitted.highest
                    window = admitted.window
                }
            }
        }
    }

    func testStoredFormRoundTripsAndRejectsBadLengths() {
        var window = ReplayWindow()
        var highest: UInt32 = 0
        for counter: UInt32 in [5, 3, 70, 10, 131, 4] {
            if let next = window.admit(counter: counter, highest: highest, size: 128) { window = next.window; highest = next.highest }
        }
        XCTAssertEqual(window.bytes.count, 16)
        XCTAssertEqual(ReplayWindow(bytes: window.bytes), window)
        XCTAssertEqual(ReplayWindow(bytes: [UInt8]()), ReplayWindow())
        XCTAssertNil(ReplayWindow(bytes: [UInt8](repeating: 0, count: 15)))
        XCTAssertNil(ReplayWindow(bytes: [UInt8](repeating: 0, count: 17)))
        // Layout: bit i <=> counter highest-1-i, byte k holds bits 8k...8k+7 least significant first.
        var w = ReplayWindow()
        w = w.admit(counter: 1, highest: 0, size: 0)!.window        // marks 0 at distance 1 -> bit 0
        w = w.admit(counter: 10, highest: 1, size: 0)!.window       // slide 9, mark 1 at distance 9 -> bit 8; 0 -> bit 9
        XCTAssertEqual(w.bytes, [0, 0b11] + [UInt8](repeating: 0, count: 14))
        XCTAssertTrue(w.isSeen(distance: 9) && w.isSeen(distance: 10) && !w.isSeen(distance: 8))
    }

    func testLargeJumpsClearTheWindow() {
        var w = ReplayWindow().admit(counter: 1, highest: 0, size: 0)!.window
        w = w.admit(counter: 1_000, highest: 1, size: 0)!.window
        XCTAssertTrue(w.isEmpty)
        XCTAssertNotNil(w.admit(counter: UInt32.max, highest: 1_000, size: 0))
        XCTAssertNil(w.admit(counter: 1_000, highest: 1_000, size: 128))
    }
}
