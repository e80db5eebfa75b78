/// The per-step record of a verification: each evaluated check with its outcome, in evaluation order.
///
/// Checks that could not be evaluated (e.g. everything after a CBOR failure) are absent. Decisions
/// stop at the first failure, but a trace may go on evaluating the remaining independent checks so
/// that tooling can show every result at once.
public struct VerificationTrace: Sendable, Equatable {
    /// (check, passed) in evaluation order; each check appears at most once.
    public private(set) var entries: [(check: VerificationCheck, passed: Bool)] = []

    /// An empty trace.
    public init() {}

    /// Records `check` (replacing an earlier record of the same check).
    public mutating func record(_ check: VerificationCheck, _ passed: Bool) {
        if let index = entries.firstIndex(where: { $0.check == check }) {
            entries[index].passed = passed
        } else {
            entries.append((check, passed))
        }
    }

    /// The outcome of `check`, or nil when it was not evaluated.
    public subscript(_ check: VerificationCheck) -> Bool? {
        entries.first { $0.check == check }?.passed
    }

    /// The first failed check, if any.
    public var firstFailure: VerificationCheck? { entries.first { !$0.passed }?.check }

    public static func == (lhs: VerificationTrace, rhs: VerificationTrace) -> Bool {
        lhs.entries.count == rhs.entries.count && zip(lhs.entries, rhs.entries).allSatisfy { $0.check == $1.check && $0.passed == $1.passed }
    }
}
