/// Whether a registered key may still authorise requests. The raw value is the stored form.
public enum KeyStatus: String, Sendable, CaseIterable {
    /// Assertions from this key are accepted (subject to challenge and counter checks).
    case active
    /// Revoked by an operator: `commitAssertion` refuses with `key_revoked` (HTTP 403).
    case revoked
}
