import GatewayConfig
import GatewayRules

extension ConfigIssue {
    /// Writes `issues` as the JSON array `name` of a log line: one object per issue with `path`,
    /// `message`, and `line`/`column` when known (plus `severity` when `withSeverity`). The one form
    /// of configuration issues in JSON lines (`config_reload_failed`, `start_failed`).
    public static func write(_ issues: [ConfigIssue], named name: String, withSeverity: Bool = false,
                             into json: inout JSONWriter) {
        json.beginArray(name)
        for issue in issues {
            json.beginObject()
            if withSeverity { json.field("severity", issue.severity.rawValue) }
            json.field("path", issue.path)
            json.field("message", issue.message)
            if let line = issue.line { json.field("line", line) }
            if let column = issue.column { json.field("column", column) }
            json.endObject()
        }
        json.endArray()
    }
}
