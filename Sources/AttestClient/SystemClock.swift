import Foundation

/// The wall clock and a real sleep: the default `AttestClock`.
public struct SystemClock: AttestClock {
    /// Creates one.
    public init() {}
    /// `Date().timeIntervalSince1970`.
    public func now() -> Double { Date().timeIntervalSince1970 }
    /// `Thread.sleep(forTimeInterval:)`; nothing for zero or less.
    public func sleep(seconds: Double) {
        if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
    }
}
