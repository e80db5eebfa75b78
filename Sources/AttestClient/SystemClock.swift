import Foundation

/// The wall clock and a real sleep: the default `AttestClock`.
public struct SystemClock: AttestClock {
    /// Creates one.
    public init() {}
    /// `Date().timeIntervalSince1970`.
    public func now() -> Double { Date().timeIntervalSince1970 }
    /// The longest single sleep, in seconds (one day): a larger (or infinite) request sleeps this long.
    static let longestSleep: Double = 86_400

    /// `seconds` as slept: at most `longestSleep`; 0 for zero, less, or NaN.
    static func duration(_ seconds: Double) -> Double {
        seconds > 0 ? min(seconds, longestSleep) : 0
    }

    /// `Thread.sleep(forTimeInterval:)` for `seconds`, at most one day (a huge or infinite value never
    /// blocks the thread for good); nothing for zero, less, or NaN.
    public func sleep(seconds: Double) {
        let duration = Self.duration(seconds)
        if duration > 0 { Thread.sleep(forTimeInterval: duration) }
    }
}
