/// Fraud-metric receipts of one app (`apps[].risk`, issue 12): the DeviceCheck credentials the gateway
/// uses to exchange each key's receipt with Apple's App Attest data server, and where that server is.
public struct RiskConfiguration: Sendable, Hashable {
    /// Apple's data server, or a stand-in for tests.
    public enum DataServer: Sendable, Hashable, CustomStringConvertible {
        /// `https://data.appattest.apple.com` (keys of the production environment).
        case production
        /// `https://data-development.appattest.apple.com` (development keys).
        case development
        /// Another HTTPS server speaking Apple's protocol (tests): host, port and the CA that signed
        /// its certificate (`data_server_ca`; nil: the system store).
        case url(host: String, port: UInt16, ca: String?)

        /// Production's and development's host names.
        public static let productionHost = "data.appattest.apple.com"
        public static let developmentHost = "data-development.appattest.apple.com"

        /// Host to connect to (and to check the certificate against).
        public var host: String {
            switch self {
            case .production: return Self.productionHost
            case .development: return Self.developmentHost
            case .url(let host, _, _): return host
            }
        }

        /// TCP port (443 for Apple's).
        public var port: UInt16 {
            if case .url(_, let port, _) = self { return port }
            return 443
        }

        /// `production`, `development` or the URL.
        public var description: String {
            switch self {
            case .production: return "production"
            case .development: return "development"
            case .url(let host, let port, _): return "https://\(host.contains(":") ? "[\(host)]" : host):\(port)"
            }
        }
    }

    /// The team ID that issued the key (`iss` of the JWT): 10 upper-case letters or digits.
    public var teamID: String
    /// The DeviceCheck key's ID (`kid` of the JWT): 10 upper-case letters or digits.
    public var keyID: String
    /// Absolute path of the `.p8` file (PKCS#8 PEM, P-256) of that key; read at start.
    public var privateKeyFile: String
    /// Where receipts are exchanged.
    public var dataServer: DataServer
    /// Most exchanges with the data server per second, per gateway process (default 5).
    public var maxCallsPerSecond: Double

    /// Default rate: 5 calls per second per process.
    public static let defaultMaxCallsPerSecond = 5.0

    /// Creates the settings.
    public init(teamID: String, keyID: String, privateKeyFile: String, dataServer: DataServer = .production,
                maxCallsPerSecond: Double = RiskConfiguration.defaultMaxCallsPerSecond) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyFile = privateKeyFile
        self.dataServer = dataServer
        self.maxCallsPerSecond = maxCallsPerSecond
    }
}

/// What a route does with a key whose current fraud metric is above `max_risk_metric`.
public enum RiskAction: String, Sendable, Hashable, CaseIterable {
    /// Record it (verdict headers, metrics) and forward.
    case monitor
    /// Refuse with `403 risk_too_high` (on `enforce` routes; a `monitor` route forwards anyway).
    case deny
}

/// A route's fraud-metric policy (`max_risk_metric`, `risk_action`). A metric that is unknown (never
/// fetched, stale, stopped) never triggers it: receipts are risk signals, absence is not suspicious.
public struct RouteRiskPolicy: Sendable, Hashable {
    /// Highest metric let through.
    public var maxMetric: Int
    /// What happens above it.
    public var action: RiskAction

    /// Creates the policy.
    public init(maxMetric: Int, action: RiskAction = .monitor) {
        self.maxMetric = maxMetric
        self.action = action
    }
}
