/// Logging (`log`). Logs go to standard error, one JSON object per line.
public struct LogConfiguration: Sendable, Hashable {
    /// Log line format. Only JSON for now.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// One JSON object per line.
        case json
    }

    /// Least severe level written.
    public enum Level: String, Sendable, Hashable, CaseIterable, Comparable {
        /// Everything, including per-request verification traces.
        case debug
        /// Startup, reloads, access lines (the default).
        case info
        /// Degraded operation: store errors, fail-open forwards, upstream failures.
        case warning
        /// Failures that need an operator.
        case error

        private var rank: Int {
            switch self {
            case .debug: return 0
            case .info: return 1
            case .warning: return 2
            case .error: return 3
            }
        }

        /// Orders by severity.
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
    }

    /// One line per request with route, status, verdict and reason (default true).
    public var access: Bool
    /// Line format (default json).
    public var format: Format
    /// Least severe level written (default info).
    public var level: Level

    /// Creates the log configuration; each value defaults as documented.
    public init(access: Bool = true, format: Format = .json, level: Level = .info) {
        self.access = access
        self.format = format
        self.level = level
    }
}
