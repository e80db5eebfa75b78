// How an upstream with several endpoints spreads its requests.

/// The balancing policy of an upstream with several endpoints (`upstreams.NAME.balance`).
///
/// Only endpoints that are available take requests: resolved (a DNS name with at least one address),
/// not ejected after connect errors (`UpstreamEjection`), and not marked down by active health
/// checks (`UpstreamHealthCheck`). When none is available but some are resolved, every resolved
/// endpoint is used as if available ("panic" mode, as in Envoy: trying a possibly dead endpoint beats
/// refusing every request).
public enum UpstreamBalance: String, Sendable, Hashable, CaseIterable {
    /// Each event loop takes the available endpoints in turn (one cursor per loop, no shared state).
    case roundRobin = "round_robin"
    /// The available endpoint with the fewest exchanges in progress, counted across every event loop
    /// (atomic counters); ties go to the next one in round-robin order.
    case leastRequest = "least_request"
}
