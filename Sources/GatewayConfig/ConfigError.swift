/// A configuration that cannot be used: every problem found, not just the first.
///
/// `description` prints the errors one per line in document order (`path: message (line L, column C)`),
/// ready for `check-config` or a startup log. Warnings found on the way are kept so that a tool can
/// show them as well, but they are not part of `description`.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The errors, in the order of their position in the file (issues without a position first).
    public var issues: [ConfigIssue]
    /// Warnings collected while validating (they would not have stopped loading on their own).
    public var warnings: [ConfigIssue]

    /// Creates an error from its issues; they are sorted by position.
    public init(issues: [ConfigIssue], warnings: [ConfigIssue] = []) {
        self.issues = ConfigIssue.sortedByPosition(issues)
        self.warnings = ConfigIssue.sortedByPosition(warnings)
    }

    /// One issue per line.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}

extension ConfigIssue {
    /// Issues ordered by line and column (stable for equal positions; positionless issues first).
    static func sortedByPosition(_ issues: [ConfigIssue]) -> [ConfigIssue] {
        issues.enumerated().sorted { a, b in
            let la = a.element.mark.map { ($0.line, $0.column) } ?? (0, 0)
            let lb = b.element.mark.map { ($0.line, $0.column) } ?? (0, 0)
            if la != lb { return la < lb }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// Whether key path `path` is `ancestor` or lies under it (`routes[0].max_body` is within
    /// `routes[0]` and `routes`, not within `route`). The file as a whole (`""`) holds only itself here.
    static func path(_ path: String, isWithin ancestor: String) -> Bool {
        guard path.hasPrefix(ancestor), !ancestor.isEmpty || path.isEmpty else { return false }
        if path.count == ancestor.count { return true }
        let next = path[path.index(path.startIndex, offsetBy: ancestor.count)]
        return next == "." || next == "["
    }
}
