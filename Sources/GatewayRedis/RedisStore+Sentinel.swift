import GatewayRules

extension RedisStore {
    /// The Sentinel resolver of a `redis+sentinel://` store (nil otherwise): the URL's Sentinels and
    /// master name, each Sentinel asked for at most the connect timeout divided among them (at least
    /// 50 ms), so that asking them all fits in one connect attempt. One per connection: each keeps
    /// its own "last answered first" order.
    static func sentinelResolver(for configuration: Configuration) -> RedisSentinelResolver? {
        guard let (sentinels, master) = configuration.url.sentinel else { return nil }
        let budget = UInt64(configuration.connectTimeout) * 1_000_000 / UInt64(max(1, sentinels.count))
        return RedisSentinelResolver(sentinels: sentinels, master: master, timeout: max(budget, 50_000_000))
    }
}
