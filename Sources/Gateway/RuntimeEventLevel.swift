import GatewayConfig

/// The `level` of a runtime event line (`GatewayRuntime`'s `events` sink, written by
/// `attest-gateway`): one home for the rule, so that level-based alerting tells routine news from
/// trouble. `info`: recoveries and routine results (`store_recovered`, `verdict_keys_recovered`,
/// `verdict_key_added`, `upstream_resolved`, `upstream_dns_changed`, a `risk_refresh` whose
/// `outcome` is `refreshed` or `not_modified`); `error`: a condition that needs an operator
/// (`risk_refresh_stopped`: a key's receipts are no longer exchanged until `attestctl risk refresh`);
/// everything else `warning` (degraded operation: store outages, ejected endpoints, failed
/// handshakes, other refresh outcomes). Before, every event but `store_recovered` was `warning`.
public enum RuntimeEventLevel {
    /// The level of event `name` with `fields` (name/value pairs as the sink gets them).
    public static func of(_ name: String, _ fields: [(String, String)]) -> LogConfiguration.Level {
        switch name {
        case "store_recovered", "verdict_keys_recovered", "verdict_key_added", "upstream_resolved", "upstream_dns_changed":
            return .info
        case "risk_refresh":
            let outcome = fields.first { $0.0 == "outcome" }?.1
            return outcome == "refreshed" || outcome == "not_modified" ? .info : .warning
        case "risk_refresh_stopped":
            return .error
        default:
            return .warning
        }
    }
}
