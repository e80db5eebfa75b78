/// The App Attest environment a key was attested in, from the attestation's aaguid
/// (Apple: "Validating apps that connect to your server", attestation step 8: `appattestdevelop` or
/// `appattest` followed by seven zero bytes). The raw value is the stored form.
public enum KeyEnvironment: String, Sendable, CaseIterable {
    /// aaguid `appattestdevelop`.
    case development
    /// aaguid `appattest` + 7 zero bytes.
    case production
}
