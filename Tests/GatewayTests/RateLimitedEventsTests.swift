import Synchronization
@testable import Gateway
import XCTest

/// `RateLimitedEvents` with a manual clock: one line per name per interval, the next line written
/// carries how many were suppressed, names are limited independently.
final class RateLimitedEventsTests: XCTestCase {
    func testOneLinePerNamePerIntervalWithTheSuppressedCount() {
        let clock = Atomic<UInt64>(1_000)
        let lines = Mutex<[(String, [(String, String)])]>([])
        let events = RateLimitedEvents(sink: { name, fields in lines.withLock { $0.append((name, fields)) } },
                                       intervalNanoseconds: 1_000_000_000, now: { clock.load(ordering: .relaxed) })
        XCTAssertTrue(events.emit("a", [("n", "1")]))
        XCTAssertFalse(events.emit("a", [("n", "2")]), "within the interval")
        XCTAssertFalse(events.emit("a", [("n", "3")]))
        XCTAssertTrue(events.emit("b", [("n", "1")]), "another name has its own window")
        clock.store(1_000 + 999_999_999, ordering: .relaxed)
        XCTAssertFalse(events.emit("a", [("n", "4")]), "1 ns short of the interval")
        clock.store(1_000 + 1_000_000_000, ordering: .relaxed)
        XCTAssertTrue(events.emit("a", [("n", "5")]))
        XCTAssertTrue(events.emit("b", [("n", "2")]))
        let written = lines.withLock { $0.map { "\($0.0) " + $0.1.map { "\($0.0)=\($0.1)" }.joined(separator: ",") } }
        XCTAssertEqual(written, ["a n=1", "b n=1", "a n=5,suppressed=3", "b n=2"])
    }
}
