/// One node of the raw configuration tree (layer 1): what libyaml read, with no meaning attached yet.
///
/// Only the three YAML node kinds exist here; anchors, aliases, merge keys and non-standard tags were
/// refused by `YAMLReader` before a tree is built, so the tree is a plain finite tree of at most
/// `YAMLReader.maximumDepth` levels.
struct YAMLNode: Sendable {
    /// A scalar as written: its text and whether it was plain (unquoted), which decides whether it
    /// may be read as a number, a boolean or null.
    struct Scalar: Sendable {
        /// The scalar's text after YAML unescaping and folding.
        var text: String
        /// True for a plain (unquoted, non-block) scalar without a `!!str` tag.
        var isPlain: Bool
    }

    /// One `key: value` pair of a mapping; keys are always scalars (checked by the reader).
    struct Entry: Sendable {
        /// The key's text.
        var key: String
        /// Where the key starts.
        var keyMark: SourceMark
        /// The value node.
        var value: YAMLNode
    }

    /// The node's kind and content.
    enum Kind: Sendable {
        case scalar(Scalar)
        case sequence([YAMLNode])
        case mapping([Entry])
    }

    /// The node's content.
    var kind: Kind
    /// Where the node starts in the text.
    var mark: SourceMark

    /// True for a plain scalar spelled as YAML null (`~`, `null`, `Null`, `NULL` or nothing at all).
    var isNull: Bool {
        guard case .scalar(let s) = kind, s.isPlain else { return false }
        switch s.text {
        case "", "~", "null", "Null", "NULL": return true
        default: return false
        }
    }

    /// Human words for the node's kind, used in "expected X, got Y" messages.
    var kindDescription: String {
        switch kind {
        case .scalar(let s):
            if isNull { return "null" }
            return s.isPlain ? "\(ConfigText.quoted(s.text))" : "the string \(ConfigText.quoted(s.text))"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }
}
