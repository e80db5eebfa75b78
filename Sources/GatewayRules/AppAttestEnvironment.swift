/// The App Attest environment a key was attested in (Apple, "Validating apps that connect to your
/// server", attestation step 8: the aaguid is `appattestdevelop` for development and `appattest`
/// followed by seven 0x00 bytes for production; `AppAttest` maps the aaguid).
///
/// The one type for the environment everywhere: the verifier's verdict, the stored key record (the
/// raw value is the stored form), the configuration (`routes[].environment`), the
/// `App-Attest-Environment` header. Cases are listed production first, as the configuration's
/// messages list them.
public enum AppAttestEnvironment: String, Sendable, Hashable, CaseIterable {
    /// aaguid `appattest` + 7 zero bytes: App Store, TestFlight and enterprise builds.
    case production
    /// aaguid `appattestdevelop`: builds signed for development (Xcode); receipts say "sandbox".
    case development
}
