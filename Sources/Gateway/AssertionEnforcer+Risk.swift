import GatewayConfig
import GatewayStore

extension Refusal {
    /// 403: the key's current fraud metric is above the route's `max_risk_metric` with `risk_action: deny`.
    static func riskTooHigh(metric: UInt32, maximum: Int) -> Refusal {
        Refusal(status: 403, code: "risk_too_high", action: .deny,
                detail: "the device's App Attest risk metric \(metric) is above this route's maximum \(maximum)")
    }
}

extension AssertionEnforcer {
    /// Applies the route's `max_risk_metric` to a valid verdict: above it, `deny` refuses with
    /// `403 risk_too_high` (verdict `invalid`), `monitor` forwards with reason `risk_too_high`. An
    /// unknown metric never triggers the policy.
    func riskDecision(_ report: VerdictReport, risk: RiskHeaders, route: CompiledRoute, keyId: KeyID) -> Decision {
        guard let policy = route.config.riskPolicy, let metric = risk.current, Int(metric) > policy.maxMetric else {
            return Decision(report: report, refusal: nil)
        }
        var flagged = report
        flagged.reason = "risk_too_high"
        guard policy.action == .deny else { return Decision(report: flagged, refusal: nil) }
        flagged.verdict = .invalid
        return Decision(report: flagged, refusal: .riskTooHigh(metric: metric, maximum: policy.maxMetric))
    }
}
