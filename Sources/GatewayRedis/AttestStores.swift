import GatewayStore

/// Builds the configured store from one URL, for the gateway's `store:` setting.
public enum AttestStores {
    /// - `memory:` or `memory://` -> an in-process `MemoryStore` (the embedded default, state lost on exit);
    /// - `redis://...` or `unix://...` -> a `RedisStore` with default tunables (see `RedisURL`).
    /// - Throws: `RedisURLError` for anything else or a malformed Redis URL.
    public static func make(url: String) throws -> any AttestStore {
        if url == "memory:" || url == "memory://" { return MemoryStore() }
        return try RedisStore(url: url)
    }
}
