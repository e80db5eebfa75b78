/// Which App Attest environments an app's keys may come from (`apps[].environment`; the verifier's
/// `AppPolicy`; Apple: attestation step 8).
public enum EnvironmentPolicy: String, Sendable, Hashable, CaseIterable {
    /// Production keys only (the configuration's default).
    case production
    /// Development keys only.
    case development
    /// Either (development builds are then accepted too).
    case any

    /// Whether a key attested in `environment` is allowed.
    public func allows(_ environment: AppAttestEnvironment) -> Bool {
        switch self {
        case .any: return true
        case .production: return environment == .production
        case .development: return environment == .development
        }
    }
}
