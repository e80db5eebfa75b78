import GatewayRules

/// The state store (`store`, DESIGN.md section 4): the in-process memory store or Redis.
///
/// YAML: `memory`, a Redis URL string (`redis://127.0.0.1:6379/0`, `unix:/run/redis.sock`,
/// `redis+cluster://10.0.0.1:6379,10.0.0.2:6379`; the grammar is `GatewayRules.RedisURL`, the one
/// `attestctl keys --store` reads too), or a mapping `{url, username, password, password_file,
/// command_timeout, connect_timeout, wait_replicas, tls}` whose `url` is one of those strings. The password is given once: in the URL, as `password` (typically
/// `${REDIS_PASSWORD}`) or as `password_file` (read at load; one trailing newline stripped); it ends
/// up in `RedisURL.password` and is never printed.
/// Default when the key is absent: `memory` (with a check-config warning).
public struct StoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// Which store.
    public enum Kind: Sendable, Hashable {
        /// In-process store: same semantics, state lost on restart and not shared between replicas.
        case memory
        /// Redis: one server, or a Redis Cluster (`RedisURL.topology`; every key of one App Attest key
        /// shares a hash tag, so each commit script touches one slot).
        case redis(RedisURL)
    }

    /// Which store.
    public var kind: Kind
    /// Longest wait for one Redis command (the per-request commit script included) before the store
    /// counts as unavailable (default 500ms, 1ms...1m). Unused by the memory store.
    public var commandTimeout: Duration
    /// Longest wait for a Redis connection (default 1s, 1ms...1m). Unused by the memory store.
    public var connectTimeout: Duration

    /// Replicas that must acknowledge each accepted commit (`WAIT`) before the request is forwarded
    /// (default 0: no wait; 0...16; Redis only). Without it, a primary that dies right after a commit
    /// may take that commit with it, and the replica promoted in its place would accept the same
    /// assertion once more.
    public var waitReplicas: Int
    /// TLS settings of a `rediss://` / `rediss+cluster://` store (`store.tls`); nil for other stores
    /// (and for a `rediss://` URL without a `tls` mapping, which then verifies against the system CAs).
    public var tls: StoreTLSConfiguration?

    /// Largest `wait_replicas`.
    public static let maximumWaitReplicas = 16
    /// Default `command_timeout`.
    public static let defaultCommandTimeout: Duration = .milliseconds(500)
    /// Default `connect_timeout`.
    public static let defaultConnectTimeout: Duration = .seconds(1)
    /// The default store: memory.
    public static let memory = StoreConfiguration(kind: .memory)

    /// Creates a store configuration; timeouts default as documented.
    public init(kind: Kind, commandTimeout: Duration = defaultCommandTimeout, connectTimeout: Duration = defaultConnectTimeout,
                waitReplicas: Int = 0) {
        self.kind = kind
        self.commandTimeout = commandTimeout
        self.connectTimeout = connectTimeout
        self.waitReplicas = waitReplicas
    }

    /// `memory` or the Redis URL without its password.
    public var description: String {
        switch kind {
        case .memory: return "memory"
        case .redis(let url): return url.description
        }
    }
}
