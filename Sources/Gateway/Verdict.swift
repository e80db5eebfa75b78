/// The gateway's verdict on one request of an `enforce` or `monitor` route, sent upstream as
/// `App-Attest-Verdict` (DESIGN.md section 5).
public enum Verdict: String, Sendable {
    /// The assertion verified and was committed (challenge consumed, counter advanced).
    case valid
    /// Evidence was present but failed a check (the reason says which).
    case invalid
    /// The request carried no (or incomplete) App Attest evidence.
    case missing
    /// The store could not be asked and the route is `fail_open`: forwarded without a decision.
    case unverified
}
