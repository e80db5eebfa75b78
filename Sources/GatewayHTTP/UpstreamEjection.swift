// Passive ejection of an upstream endpoint after consecutive connect errors.

/// Passive health of the endpoints of an upstream (`upstreams.NAME.ejection`): an endpoint whose
/// connection attempts failed `consecutiveErrors` times in a row (refused, unreachable, connect
/// timeout, TLS handshake failed; counted across event loops, reset by any successful connect) takes
/// no new requests for `baseTime` seconds; each further ejection without a successful connect in
/// between doubles that time, up to `maxTime`. Once the time has passed the endpoint is tried again
/// (a request whose connect fails there ejects it again at once, for twice as long).
///
/// A request whose connect fails is retried on another endpoint (nothing was sent, so any method
/// may be), once per endpoint at most.
public struct UpstreamEjection: Sendable, Hashable {
    /// Consecutive connect errors that eject an endpoint; 0 never ejects (default 5).
    public var consecutiveErrors: Int
    /// First ejection time in seconds (default 10).
    public var baseTime: Double
    /// Longest ejection time in seconds (default 300).
    public var maxTime: Double

    /// A policy (defaults: 5 errors, 10 s, at most 300 s).
    public init(consecutiveErrors: Int = 5, baseTime: Double = 10, maxTime: Double = 300) {
        self.consecutiveErrors = consecutiveErrors
        self.baseTime = baseTime
        self.maxTime = max(baseTime, maxTime)
    }

    /// The time of the `n`th ejection in a row (n from 1), in seconds.
    public func ejectionTime(_ n: Int) -> Double {
        var t = baseTime
        var i = 1
        while i < n && t < maxTime {
            t *= 2
            i += 1
        }
        return min(t, maxTime)
    }
}
