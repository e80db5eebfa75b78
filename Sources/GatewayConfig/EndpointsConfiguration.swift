/// The gateway's own endpoints (`endpoints`, DESIGN.md section 1): `POST {prefix}/challenge` and
/// `POST {prefix}/attest`.
///
/// Every request whose normalized path is `prefix` or under `prefix/` is served by the gateway itself,
/// before routing: no route ever sees it (a route inside the prefix is refused; a catch-all route such
/// as `/` simply never receives those paths).
public struct EndpointsConfiguration: Sendable, Hashable {
    /// Path prefix of the endpoints (default `/app-attest/v1`): an absolute path in normal form, not
    /// `/`, without a trailing `/`.
    public var prefix: String
    /// Lifetime of an issued challenge (default 300s, 10s...1h).
    public var challengeTTL: Duration
    /// Random bytes per challenge (default 32, 16...64).
    public var challengeBytes: Int
    /// Per-client rate limit of the endpoints (`rate_limit`; nil: none, the default).
    public var rateLimit: RateLimit?
    /// `next_challenge` (default true): every answer of an `enforce` or `monitor` route to a request
    /// that named a known key carries `App-Attest-Next-Challenge` and
    /// `App-Attest-Next-Challenge-Expires` (DESIGN.md section 9), and so does a successful
    /// attestation. false: no answer carries them (upstream copies are dropped either way).
    public var nextChallenge: Bool

    /// A token bucket per client address (`endpoints.rate_limit`): `burst` requests at once, refilled
    /// at `requestsPerSecond`. Requests over it answer `429 rate_limited` with `Retry-After`.
    public struct RateLimit: Sendable, Hashable {
        /// Sustained requests per second per client address (1...100000).
        public var requestsPerSecond: Int
        /// Requests a client may make at once (1...1000000; default twice `requestsPerSecond`).
        public var burst: Int

        /// A limit of `requestsPerSecond` with `burst` (default twice the rate).
        public init(requestsPerSecond: Int, burst: Int? = nil) {
            self.requestsPerSecond = requestsPerSecond
            self.burst = burst ?? 2 * requestsPerSecond
        }
    }

    /// Defaults.
    public static let defaultPrefix = "/app-attest/v1"
    /// Default `challenge_ttl`.
    public static let defaultChallengeTTL: Duration = .seconds(300)
    /// Default `challenge_bytes`.
    public static let defaultChallengeBytes = 32

    /// Creates the endpoints configuration; every value defaults as documented.
    public init(prefix: String = defaultPrefix, challengeTTL: Duration = defaultChallengeTTL, challengeBytes: Int = defaultChallengeBytes,
                rateLimit: RateLimit? = nil, nextChallenge: Bool = true) {
        self.prefix = prefix
        self.challengeTTL = challengeTTL
        self.challengeBytes = challengeBytes
        self.rateLimit = rateLimit
        self.nextChallenge = nextChallenge
    }

    /// `{prefix}/challenge`.
    public var challengePath: String { prefix + "/challenge" }
    /// `{prefix}/attest`.
    public var attestPath: String { prefix + "/attest" }

    /// Whether a normalized path belongs to the endpoints (equal to `prefix` or under `prefix/`).
    public func owns(path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    /// `owns(path:)` on the bytes of a normalized path, without allocating (per request). Matching
    /// stops at a `?`, so a full origin-form target also works.
    public func owns(path: UnsafeRawBufferPointer) -> Bool {
        var count = path.count
        if let q = path.firstIndex(of: UInt8(ascii: "?")) { count = q }
        var prefix = self.prefix
        return prefix.withUTF8 { p in
            guard count >= p.count else { return false }
            for i in 0..<p.count where path[i] != p[i] { return false }
            return count == p.count || path[p.count] == UInt8(ascii: "/")
        }
    }
}
