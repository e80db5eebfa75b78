/// A key's fraud metric as the per-request path sees it: returned by `commitAssertion` with the
/// counter (same store round trip), so the headers sent upstream always reflect the store.
///
/// `App-Attest-Risk-Metric` / `App-Attest-Risk-Age` are derived from it (`unknown` unless current).
public struct RiskSnapshot: Equatable, Sendable {
    /// Apple's metric (field 17 of a refreshed receipt): keys this app attested on the device in
    /// about 30 days. nil when never fetched.
    public let metric: UInt32?
    /// Creation time (field 12) of the receipt that carried `metric`, unix milliseconds.
    public let observedAt: Int64?
    /// nil when the key was never refreshed.
    public let state: RiskMetricState?
    /// Expiry of the receipt that carried the metric, unix ms (past it the metric is stale).
    public let receiptExpiresAt: Int64?

    /// Memberwise initialiser.
    public init(metric: UInt32?, observedAt: Int64?, state: RiskMetricState?, receiptExpiresAt: Int64? = nil) {
        self.metric = metric
        self.observedAt = observedAt
        self.state = state
        self.receiptExpiresAt = receiptExpiresAt
    }

    /// The metric when it is current at `now` (unix ms): fetched from Apple, verified, not marked
    /// stale or stopped, and its receipt not expired.
    public func currentMetric(now: Int64) -> UInt32? {
        guard state == .fresh, let metric, observedAt != nil else { return nil }
        if let receiptExpiresAt, now >= receiptExpiresAt { return nil }
        return metric
    }

    /// Age of a current metric in whole seconds at `now` (unix ms; never negative), else nil.
    public func ageSeconds(now: Int64) -> Int64? {
        guard currentMetric(now: now) != nil, let observedAt else { return nil }
        return max(0, (now - observedAt) / 1000)
    }
}
