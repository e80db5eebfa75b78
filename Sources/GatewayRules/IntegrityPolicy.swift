/// What an app does with the integrity codes of a device-key registration (`apps[].integrity_lower`,
/// `apps[].integrity_refuse`; DESIGN.md section 8): a code in `refuse` refuses the registration
/// (`403 registration_refused`), a code in `lower` registers the key at tier `device` even when App
/// Attest vouched for it. Codes in neither list are only recorded and sent upstream.
public struct IntegrityPolicy: Sendable, Hashable {
    /// Codes that refuse the registration.
    public var refuse: Set<String>
    /// Codes that lower the tier to `device`.
    public var lower: Set<String>

    /// The decision for a registration's codes.
    public enum Outcome: Sendable, Equatable {
        /// Register at the tier the evidence earned.
        case keep
        /// Register at tier `device`; carries the first code that lowered it.
        case lower(String)
        /// Refuse; carries the first code that refused it.
        case refuse(String)
    }

    /// Nothing refused or lowered (the default).
    public init(refuse: Set<String> = [], lower: Set<String> = []) {
        self.refuse = refuse
        self.lower = lower
    }

    /// `refuse` wins over `lower`; codes are checked in the order sent.
    public func outcome(for codes: [String]) -> Outcome {
        if let code = codes.first(where: { refuse.contains($0) }) { return .refuse(code) }
        if let code = codes.first(where: { lower.contains($0) }) { return .lower(code) }
        return .keep
    }
}
