/// Where a key's fraud (risk) metric stands (issue 12 "Fraud-metric receipts"), stored as the key
/// record's `riskst` field.
///
/// - `fresh`: the metric comes from a refreshed receipt that Apple's data server returned and the
///   gateway verified; it is sent upstream with its age.
/// - `stale`: Apple answered `404` (or the receipt expired): the last valid receipt is kept, but its
///   metric is no longer presented as current (`App-Attest-Risk-Metric: unknown`).
/// - `stopped`: Apple refused the exchange (`400` / `401`: bad receipt or bad credentials); the key is
///   not refreshed again until an operator forces it (`attestctl risk refresh`). The metric is unknown.
public enum RiskMetricState: String, Sendable, Hashable, CaseIterable {
    /// From a verified refreshed receipt: sent upstream.
    case fresh
    /// Apple answered 404: the last receipt is kept, the metric is not presented as current.
    case stale
    /// Apple answered 400/401: no automatic exchanges until forced.
    case stopped
}
