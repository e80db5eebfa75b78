/// The verdict on an attestation: accepted with the attested key, or rejected with the reason of
/// the first failed step. Both carry the per-step trace.
public enum AttestationDecision: Sendable {
    /// Every step passed.
    case accepted(AttestedKey, trace: VerificationTrace)
    /// The first failed step's reason, a detail for logs, and the trace.
    case rejected(ReasonCode, detail: String, trace: VerificationTrace)

    /// True when accepted.
    public var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
    /// The attested key when accepted.
    public var attestedKey: AttestedKey? { if case .accepted(let key, _) = self { return key } else { return nil } }
    /// The reason when rejected.
    public var reason: ReasonCode? { if case .rejected(let reason, _, _) = self { return reason } else { return nil } }
    /// The detail when rejected ("" when accepted).
    public var detail: String { if case .rejected(_, let detail, _) = self { return detail } else { return "" } }
    /// The per-step trace.
    public var trace: VerificationTrace {
        switch self {
        case .accepted(_, let trace): return trace
        case .rejected(_, _, let trace): return trace
        }
    }
}
