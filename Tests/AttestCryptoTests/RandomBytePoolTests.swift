import AttestCrypto
import Foundation
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

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

    /// After `fork(2)` the child must not serve the block it inherited: the parent hands out those
    /// bytes next. Parent and child each take the next 32 bytes of the same pool (one byte was
    /// drawn before the fork, so the block is full of unserved bytes); the child sends its value
    /// through a pipe. Without the fork generation they are equal (the failing variant: the child
    /// would copy the parent's next value). The child only draws, writes and `_exit`s; the parent
    /// gives it 10 s and kills it otherwise (a failure, never a hang).
    func testAForkedChildNeverServesTheParentsBytes() throws {
        let pool = RandomBytePool(blockSize: 4096)
        _ = try pool.bytes(count: 1)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let child = fork()
        if child == 0 {
            var value = (try? pool.bytes(count: 32)) ?? []
            let written = value.count == 32 ? write(fds[1], &value, 32) : -1
            _exit(written == 32 ? 0 : 1)
        }
        XCTAssertGreaterThan(child, 0, "fork failed")
        close(fds[1])
        defer { close(fds[0]) }
        let parentValue = try pool.bytes(count: 32)
        var poller = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 10_000) == 1 else {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
            return XCTFail("the child sent nothing within 10 s")
        }
        var childValue = [UInt8](repeating: 0, count: 32)
        XCTAssertEqual(read(fds[0], &childValue, 32), 32)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(child, &status, 0), child)
        XCTAssertEqual(status, 0, "the child exits 0 after sending its 32 bytes")
        XCTAssertNotEqual(childValue, parentValue, "the child served the parent's next bytes")
        XCTAssertNotEqual(childValue, [UInt8](repeating: 0, count: 32))
    }
}
