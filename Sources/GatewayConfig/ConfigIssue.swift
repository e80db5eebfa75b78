/// One problem found in a configuration: where (key path and source position) and what.
///
/// Printed as `path: message (line L, column C)`, for example
/// `routes[0].max_body: expected a size like 64KiB or 1MiB, got "lots" (line 14, column 15)`.
/// Problems of the file as a whole (unreadable, YAML syntax) have an empty path and print as
/// `message (line L, column C)`.
public struct ConfigIssue: Sendable, Hashable, CustomStringConvertible {
    /// Whether the issue stops the configuration from loading.
    public enum Severity: String, Sendable, Hashable {
        /// The configuration is refused.
        case error
        /// The configuration loads, but an operator should look (check-config prints these).
        case warning
    }

    /// Error or warning.
    public var severity: Severity
    /// Key path in the document, e.g. `routes[0].max_body` or `upstreams.legacy.url`; empty for the
    /// file as a whole.
    public var path: String
    /// What is wrong, and when possible what to write instead.
    public var message: String
    /// Where the offending node starts; nil when the issue has no position (e.g. unreadable file).
    public var mark: SourceMark?

    /// Creates an issue.
    public init(severity: Severity, path: String, message: String, mark: SourceMark?) {
        self.severity = severity
        self.path = path
        self.message = message
        self.mark = mark
    }

    /// 1-based line, when known.
    public var line: Int? { mark?.line }
    /// 1-based column, when known.
    public var column: Int? { mark?.column }

    /// `path: message (line L, column C)`.
    public var description: String {
        var text = path.isEmpty ? message : "\(path): \(message)"
        if let mark { text += " (\(mark))" }
        return text
    }
}
