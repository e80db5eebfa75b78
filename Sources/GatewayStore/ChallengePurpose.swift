/// What a challenge may be spent on (DESIGN.md section 1: the `purpose` of `POST .../challenge`).
/// The raw value is the stored and wire form.
public enum ChallengePurpose: String, Sendable, CaseIterable {
    /// Spent by `registerKey` (attestation flow).
    case attest
    /// Spent by `commitAssertion` (a protected request).
    case assert
    /// Spent by `KeyLifecycleStore.renewKey` (`POST {prefix}/renew`: extends the registration).
    case renew
    /// Spent by `KeyLifecycleStore.forgetKey` (`POST {prefix}/forget`: deletes the key record).
    case forget
    /// Spent by `registerDeviceKey` (`POST {prefix}/register`, DESIGN.md section 8).
    case register
}
