/// The App Attest environment a key was attested in, read from the attestation's aaguid
/// (Apple: Validating apps that connect to your server, step 8): `appattestdevelop` is development,
/// `appattest` followed by seven zero bytes is production.
public enum AttestEnvironment: String, Sendable, Hashable, CaseIterable {
    /// aaguid `appattest` + 7 zero bytes: App Store, TestFlight and enterprise builds.
    case production
    /// aaguid `appattestdevelop`: builds signed for development (Xcode).
    case development
}
