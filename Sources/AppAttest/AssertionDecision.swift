/// The verdict on an assertion: accepted with the new counter, or rejected with a reason.
public enum AssertionDecision: Sendable {
    /// Every step passed.
    case accepted(VerifiedAssertion)
    /// The first failed step's reason, a detail for logs, and the trace.
    case rejected(ReasonCode, detail: String, trace: VerificationTrace)

    /// True when accepted.
    public var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
    /// The reason when rejected.
    public var reason: ReasonCode? { if case .rejected(let reason, _, _) = self { return reason } else { return nil } }
    /// The counter when accepted.
    public var counter: UInt32? { if case .accepted(let a) = self { return a.counter } else { return nil } }
    /// The per-step trace.
    public var trace: VerificationTrace {
        switch self {
        case .accepted(let a): return a.trace
        case .rejected(_, _, let trace): return trace
        }
    }
}
