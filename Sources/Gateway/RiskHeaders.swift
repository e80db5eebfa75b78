import GatewayRules
import GatewayStore

/// The values of `App-Attest-Risk-Metric` and `App-Attest-Risk-Age` for a valid verdict (issue 12):
/// the metric of the key's last verified refreshed receipt and its age in seconds, or `unknown` for
/// both when the metric was never fetched, is stale (`404`), its receipt expired, or refreshes stopped - never an
/// old number as if new. A development-environment metric carries the parameter `;env=development`
/// (RFC 8941 structured-field parameter), e.g. `2;env=development`.
struct RiskHeaders: Sendable, Equatable {
    /// Header value of the metric.
    let metric: String
    /// Header value of the age.
    let age: String
    /// The metric when current (for route policy), else nil.
    let current: UInt32?

    /// Text of an unknown metric or age.
    static let unknown = "unknown"

    init(_ snapshot: RiskSnapshot, environment: AppAttestEnvironment, now: Int64) {
        guard let value = snapshot.currentMetric(now: now), let seconds = snapshot.ageSeconds(now: now) else {
            metric = Self.unknown
            age = Self.unknown
            current = nil
            return
        }
        metric = environment == .development ? "\(value);env=development" : String(value)
        age = String(seconds)
        current = value
    }
}
