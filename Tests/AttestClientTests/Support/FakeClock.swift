import AttestClient
import Foundation

/// An `AttestClock` that moves only when told (or when the SDK sleeps: a sleep advances it and is recorded).
final class FakeClock: AttestClock, @unchecked Sendable {  // `time` and `sleeps` guarded by `lock`
    private let lock = NSLock()
    private var time: Double
    private var recorded: [Double] = []

    init(_ start: Double = 1_800_000_000) { time = start }

    func now() -> Double { lock.withLock { time } }
    func sleep(seconds: Double) { lock.withLock { recorded.append(seconds); time += max(0, seconds) } }
    func advance(_ seconds: Double) { lock.withLock { time += seconds } }
    func set(_ value: Double) { lock.withLock { time = value } }
    var sleeps: [Double] { lock.withLock { recorded } }
}
