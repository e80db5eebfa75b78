import GatewayRules

/// One route (`routes[]`): which requests it takes and what the gateway does with them.
///
/// Routes are tried in the order written; the first whose path and method match wins
/// (like Envoy's route list). See `RouteTable`.
public struct RouteConfiguration: Sendable, Hashable {
    /// How a route's path is matched against the normalized request path.
    public enum PathMatch: Sendable, Hashable, CustomStringConvertible {
        /// `path_prefix`: the path equals the prefix or continues it after a `/`
        /// (`/v1/purchases` takes `/v1/purchases` and `/v1/purchases/x`, not `/v1/purchasesX`);
        /// `/` takes every path.
        case prefix(String)
        /// `path`: the path equals this exactly (case-sensitive, byte for byte).
        case exact(String)

        /// The configured path text.
        public var path: String {
            switch self {
            case .prefix(let p), .exact(let p): return p
            }
        }

        /// `path_prefix /x` or `path /x`.
        public var description: String {
            switch self {
            case .prefix(let p): return "path_prefix \(p)"
            case .exact(let p): return "path \(p)"
            }
        }
    }

    /// What the gateway does with App Attest on this route (DESIGN.md section 5).
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Verify; refuse the request unless the assertion is valid (the default).
        case enforce
        /// Verify fully, record the verdict and send it upstream, forward the request anyway.
        case monitor
        /// No verification; forward with the gateway's headers stripped (verdict headers not set).
        case off
    }

    /// The lowest trust tier of key this route takes (`min_tier`, DESIGN.md section 8).
    public enum MinimumTier: String, Sendable, Hashable, CaseIterable {
        /// Keys App Attest vouched for only (the default).
        case attested
        /// Device keys without App Attest too (proof of possession only).
        case device
    }

    /// What to do when the store cannot be reached (`on_store_error`, DESIGN.md section 4).
    public enum StoreErrorPolicy: String, Sendable, Hashable, CaseIterable {
        /// Answer `503 store_unavailable` with `Retry-After` (the default).
        case failClosed = "fail_closed"
        /// Forward with verdict `unverified`.
        case failOpen = "fail_open"
    }

    /// Name used in logs and metrics (`name`; default `routes[N]`, its position).
    public var name: String
    /// Path match.
    public var match: PathMatch
    /// Methods taken, upper case as on the request line; empty means every method.
    public var methods: [String]
    /// Name of the upstream requests are forwarded to (exists in `GatewayConfiguration.upstreams`).
    public var upstream: String
    /// Enforcement mode (default enforce).
    public var mode: Mode
    /// Largest request body in decoded bytes (default 1MiB, 0...1GiB); larger answers 413.
    public var maxBody: Int
    /// Store failure policy (default fail_closed).
    public var onStoreError: StoreErrorPolicy
    /// Anti-replay window: 0 requires each assertion counter to be strictly greater than the stored one;
    /// N > 0 also accepts a counter up to N below the highest seen, once (default 0, 0...64).
    public var counterWindow: Int
    /// Only keys attested in this environment are accepted (nil: whatever the app allows).
    public var environment: AppAttestEnvironment?
    /// Headers appended to the client data binding as further `name:value` fields, in this order
    /// (names as configured; header lookup is case-insensitive).
    public var bindHeaders: [String]
    /// App IDs allowed on this route (nil: every configured app).
    public var apps: [AppID]?
    /// Policy on the iOS 27 signals (`signals`), over the app's for each signal it configures.
    public var signals: SignalPolicy?
    /// `enforce_percent` (0...100, mode enforce only; nil: every key enforced): the share of keys
    /// enforced, chosen by a stable hash of the keyId (`cohort(keyId:)`); the other keys are
    /// monitored (verified, verdict sent upstream, forwarded).
    public var enforcePercent: Int?
    /// `missing_evidence` (with `enforce_percent` below 100): how a request without a usable keyId
    /// (no `App-Attest-Key-Id`, or one that does not decode) is treated, since it has no cohort.
    public var missingEvidence: MissingEvidence

    /// How requests without a keyId are treated during a gradual rollout (`missing_evidence`).
    public enum MissingEvidence: String, Sendable, Hashable, CaseIterable {
        /// Forwarded with verdict `missing`, as on a monitored route (the default: app versions that
        /// do not send evidence yet keep working while the rollout ramps).
        case monitor
        /// Refused `401 assertion_missing`, as on a fully enforced route.
        case enforce
    }

    /// Overrides the upstream's `connect_timeout` for this route's requests (`connect_timeout`, 1ms..1m).
    public var connectTimeout: Duration?
    /// Overrides the upstream's `response_timeout` for this route's requests (`response_timeout`, 1ms..1h).
    public var responseTimeout: Duration?
    /// Lowest tier of key accepted (`min_tier`, default `attested`); lower keys answer `403 tier_too_low`
    /// on `enforce` routes and are recorded on `monitor` routes.
    public var minTier: MinimumTier = .attested
    /// `max_risk_metric` / `risk_action`: what happens to keys whose current fraud metric is higher
    /// (nil: no policy; the metric is only reported).
    public var riskPolicy: RouteRiskPolicy? = nil

    /// Default `max_body` (1MiB).
    public static let defaultMaxBody = 1 << 20
    /// Largest allowed `max_body` (1GiB).
    public static let maximumMaxBody = 1 << 30
    /// Largest allowed `counter_window`.
    public static let maximumCounterWindow = 64

    /// Creates a route; everything but the match and upstream defaults as documented.
    public init(name: String, match: PathMatch, methods: [String] = [], upstream: String, mode: Mode = .enforce,
                maxBody: Int = defaultMaxBody, onStoreError: StoreErrorPolicy = .failClosed, counterWindow: Int = 0,
                environment: AppAttestEnvironment? = nil, bindHeaders: [String] = [], apps: [AppID]? = nil,
                connectTimeout: Duration? = nil, responseTimeout: Duration? = nil, signals: SignalPolicy? = nil,
                enforcePercent: Int? = nil, missingEvidence: MissingEvidence = .monitor) {
        self.signals = signals
        self.enforcePercent = enforcePercent
        self.missingEvidence = missingEvidence
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.name = name
        self.match = match
        self.methods = methods
        self.upstream = upstream
        self.mode = mode
        self.maxBody = maxBody
        self.onStoreError = onStoreError
        self.counterWindow = counterWindow
        self.environment = environment
        self.bindHeaders = bindHeaders
        self.apps = apps
    }

    /// The cohort bucket of a keyId, 0...99: the first 8 bytes of the (32-byte, uniformly
    /// distributed) keyId as a big-endian integer, modulo 100. Stable across requests, processes and
    /// gateways; a key is enforced when its bucket is below `enforce_percent`, so raising the
    /// percentage only adds keys to the enforced cohort.
    public static func cohortBucket(keyId: [UInt8]) -> Int {
        var value: UInt64 = 0
        for byte in keyId.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % 100)
    }
}
