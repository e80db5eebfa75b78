/// Which App Attest environments an app accepts (configuration, Apple: attestation step 8).
public enum EnvironmentPolicy: String, Sendable, CaseIterable {
    /// Only `appattestdevelop`.
    case development
    /// Only `appattest` + 7 zero bytes.
    case production
    /// Either.
    case any

    /// Whether `environment` is allowed.
    public func allows(_ environment: AppAttestEnvironment) -> Bool {
        switch self {
        case .any: return true
        case .development: return environment == .development
        case .production: return environment == .production
        }
    }
}
