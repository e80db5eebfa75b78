/// What a valid assertion establishes: the new counter to store and the risk signals.
public struct VerifiedAssertion: Sendable {
    /// The assertion's counter (store it; the next one must be greater).
    public let counter: UInt32
    /// The authenticatorData flags byte.
    public let flags: UInt8
    /// iOS 27 signals from authenticatorData, if present.
    public let signals: AuthenticatorSignals?
    /// The per-step trace (all passed).
    public let trace: VerificationTrace
}
