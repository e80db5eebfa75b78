import Foundation

/// A text that must not be printed (a value expanded from `${NAME}`, or its quoted form) and what to
/// print instead: applied to configuration messages and the `check-config` summary.
struct ConfigRedaction: Sendable, Hashable {
    /// The text to hide.
    let hidden: String
    /// What is shown in its place (`${NAME}`, or the value as written).
    let shown: String

    /// `text` with every redaction applied, in order (longest hidden text first).
    static func apply(_ redactions: [ConfigRedaction], to text: String) -> String {
        guard !redactions.isEmpty else { return text }
        var out = text
        for redaction in redactions where !redaction.hidden.isEmpty && out.contains(redaction.hidden) {
            out = out.replacingOccurrences(of: redaction.hidden, with: redaction.shown)
        }
        return out
    }
}
