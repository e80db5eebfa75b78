import GatewayRules
import GatewayStore

/// Builds a store from the one string the configuration's `store:` takes, for tools and tests.
/// (`attestctl keys` builds its `RedisStore` itself: it takes the password from the environment or a
/// file, never from the URL.)
public enum AttestStores {
    /// - `memory` -> an in-process `MemoryStore` (the embedded default, state lost on exit);
    /// - a Redis URL (`GatewayRules.RedisURL`: `redis://...`, `unix:...`) -> a `RedisStore` with
    ///   default tunables; a relative `unix:` path resolves against `baseDirectory`.
    /// - Throws: `RedisURLError` for anything else or a malformed Redis URL.
    public static func make(url: String, baseDirectory: String? = nil) throws -> any AttestStore {
        if url == "memory" { return MemoryStore() }
        return try RedisStore(url: url, baseDirectory: baseDirectory)
    }
}
