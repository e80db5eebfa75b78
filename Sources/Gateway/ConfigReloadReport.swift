import GatewayConfig
import GatewayRules

/// What a reload (SIGHUP, `GatewayRuntime.reload(path:)`) did: either the new configuration took
/// effect (possibly without its restart-only settings, named in `restartRequired`), or it was refused
/// with every error and its YAML key path, and the last good configuration stays in force.
public struct ConfigReloadReport: Sendable {
    /// Whether the new configuration took effect.
    public var succeeded: Bool
    /// The file that was read.
    public var source: String
    /// Why it was refused (empty on success): configuration errors, TLS file problems, and failures
    /// building what it names (an unreadable trust root, an upstream that does not resolve), each with
    /// the key path it concerns.
    public var errors: [ConfigIssue]
    /// Warnings of the new configuration (as `check-config` prints them).
    public var warnings: [ConfigIssue]
    /// Restart-only key paths whose new values were not applied (`RestartOnlySettings`), e.g.
    /// `listen[0].address`; the running values stay until the next start.
    public var restartRequired: [String]
    /// The route tables' generation in force afterwards (1 at start, one more per successful reload).
    public var generation: UInt64
    /// Routes in force afterwards.
    public var routes: Int
    /// TLS listeners whose certificates were read again.
    public var tlsListenersReloaded: Int

    /// The lifecycle event name: `config_reloaded` or `config_reload_failed`.
    public var eventName: String { succeeded ? "config_reloaded" : "config_reload_failed" }

    /// Writes the report's fields into a lifecycle JSON line: `result`, `source`, `generation`,
    /// `routes`, `tls_listeners_reloaded`, `restart_required` (array of key paths), `errors` and
    /// `warnings` (arrays of `{path, message, line, column}`; `line`/`column` only when known).
    public func write(into json: inout JSONWriter) {
        json.field("result", succeeded ? "success" : "failure")
        json.field("source", source)
        json.field("generation", Int64(generation))
        json.field("routes", routes)
        if succeeded { json.field("tls_listeners_reloaded", tlsListenersReloaded) }
        json.beginArray("restart_required")
        for path in restartRequired { json.value(path) }
        json.endArray()
        if !succeeded { ConfigIssue.write(errors, named: "errors", into: &json) }
        ConfigIssue.write(warnings, named: "warnings", into: &json)
    }
}
