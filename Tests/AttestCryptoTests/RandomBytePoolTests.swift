import AttestCrypto
import Foundation
import Synchronization
import XCTest

/// `RandomBytePool`: CSPRNG bytes drawn a block at a time, each handed out once.
final class RandomBytePoolTests: XCTestCase {
    /// Values across several refills of a small block are all distinct (32-byte values: a repeat
    /// would mean bytes were handed out twice), have the asked length and are not the zeroed
    /// leftovers of a block.
    func testValuesAcrossRefillsAreFreshAndDistinct() throws {
        let pool = RandomBytePool(blockSize: 100)  // 3 values per block, 4 bytes left over each time
        var seen = Set<[UInt8]>()
        for _ in 0..<50 {
            let value = try pool.bytes(count: 32)
            XCTAssertEqual(value.count, 32)
            XCTAssertNotEqual(value, [UInt8](repeating: 0, count: 32))
            XCTAssertTrue(seen.insert(value).inserted, "a value was handed out twice")
        }
    }

    /// Failing variant of the above: two pools never hand out the same bytes (a pool that returned
    /// a fixed or zeroed block would repeat here).
    func testTwoPoolsDiffer() throws {
        let a = try RandomBytePool().bytes(count: 32), b = try RandomBytePool().bytes(count: 32)
        XCTAssertNotEqual(a, b)
    }

    /// Larger than a block: drawn on its own, full length. Zero: empty. Negative: an error.
    func testSizesAroundTheBlock() throws {
        let pool = RandomBytePool(blockSize: 16)
        XCTAssertEqual(try pool.bytes(count: 16).count, 16)
        XCTAssertEqual(try pool.bytes(count: 17).count, 17)
        XCTAssertEqual(try pool.bytes(count: 0), [])
        XCTAssertThrowsError(try pool.bytes(count: -1))
    }

    /// Concurrent callers (the event loops share one pool) never get the same bytes.
    func testConcurrentCallersGetDistinctValues() throws {
        let pool = RandomBytePool(blockSize: 256)
        let results = Mutex<[[UInt8]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var mine: [[UInt8]] = []
            for _ in 0..<200 { if let value = try? pool.bytes(count: 24) { mine.append(value) } }
            results.withLock { $0.append(contentsOf: mine) }
        }
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 1600)
        XCTAssertEqual(Set(all).count, all.count)
    }
}
