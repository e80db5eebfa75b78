/// One app allowed to attest keys (`apps[]`): its App ID and which App Attest environments it may use.
public struct AppConfiguration: Sendable, Hashable {
    /// Which environments an app's keys may come from (`apps[].environment`).
    public enum EnvironmentPolicy: String, Sendable, Hashable, CaseIterable {
        /// Production keys only (the default).
        case production
        /// Development keys only.
        case development
        /// Both (development builds are then accepted too).
        case any

        /// Whether a key attested in `environment` is allowed.
        public func allows(_ environment: AttestEnvironment) -> Bool {
            switch self {
            case .any: return true
            case .production: return environment == .production
            case .development: return environment == .development
            }
        }
    }

    /// The App ID whose rpIdHash attestations must carry.
    public var appID: AppID
    /// Allowed environments (default production).
    public var environment: EnvironmentPolicy

    /// Creates an app entry.
    public init(appID: AppID, environment: EnvironmentPolicy = .production) {
        self.appID = appID
        self.environment = environment
    }
}
