/// `${NAME}` expansion in the configuration's scalar values (DESIGN.md section 10: secrets need not
/// sit in the YAML), applied to the raw `YAMLNode` tree after libyaml parsed it and before validation,
/// so the YAML structure never depends on a variable's content.
///
/// Syntax, in any scalar value (never in mapping keys):
/// - `${NAME}` with `NAME` matching `[A-Za-z_][A-Za-z0-9_]*`: the variable's value (set but empty is
///   the empty string). An unset variable is an error at the value's key path.
/// - `$$`: one literal `$` (so `$${X}` is the text `${X}`).
/// - any other `$` is kept as written; `${` without a valid name and `}` is an error.
/// A value that came from a variable keeps the scalar's style (a plain `${PORT}` can be an integer),
/// but is never null: `${EMPTY}` is the empty string, not an absent key.
///
/// Expanded values are never printed: messages and the `check-config` summary show the text as
/// written (`"${REDIS_PASSWORD}"`) where the whole value would be quoted, and `${NAME}` wherever a
/// variable's value of 4 characters or more would appear (`redactions`).
struct EnvironmentExpansion {
    /// The variables (the process environment in the gateway).
    let environment: [String: String]
    /// Unset variables and malformed references, with their key paths.
    private(set) var issues: [ConfigIssue] = []
    /// Texts to hide in anything printed, longest first, and what to show instead.
    private(set) var redactions: [ConfigRedaction] = []

    init(environment: [String: String]) {
        self.environment = environment
    }

    /// `node` with every scalar value expanded.
    mutating func expand(_ node: YAMLNode, _ path: ConfigPath = .root) -> YAMLNode {
        var node = node
        switch node.kind {
        case .scalar(var scalar):
            guard scalar.text.utf8.contains(UInt8(ascii: "$")) else { return node }
            guard let (text, names) = expand(scalar.text, path, node.mark) else { return node }
            if !names.isEmpty {
                let written = scalar.text
                redactions.append(ConfigRedaction(hidden: ConfigText.quoted(text), shown: ConfigText.quoted(written)))
                for name in names {
                    if let value = environment[name], value.count >= 4 {
                        redactions.append(ConfigRedaction(hidden: value, shown: "${\(name)}"))
                    }
                }
                redactions.sort { $0.hidden.count > $1.hidden.count }
                scalar.text = text
                if YAMLNode(kind: .scalar(scalar), mark: node.mark).isNull { scalar.isPlain = false }
            } else {
                scalar.text = text
            }
            node.kind = .scalar(scalar)
        case .sequence(let items):
            node.kind = .sequence(items.enumerated().map { expand($1, path.index($0)) })
        case .mapping(let entries):
            node.kind = .mapping(entries.map { entry in
                var entry = entry
                entry.value = expand(entry.value, path.key(entry.key))
                return entry
            })
        }
        return node
    }

    /// One scalar's text expanded and the variables it named; nil (issues recorded) when a reference
    /// is malformed or unset.
    private mutating func expand(_ text: String, _ path: ConfigPath, _ mark: SourceMark) -> (String, [String])? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var names: [String] = []
        var ok = true
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            guard b == UInt8(ascii: "$"), i + 1 < bytes.count else {
                out.append(b)
                i += 1
                continue
            }
            switch bytes[i + 1] {
            case UInt8(ascii: "$"):
                out.append(b)
                i += 2
            case UInt8(ascii: "{"):
                guard let close = bytes[(i + 2)...].firstIndex(of: UInt8(ascii: "}")),
                      EnvironmentExpansion.isName(bytes[(i + 2)..<close]) else {
                    issues.append(ConfigIssue(severity: .error, path: path.description,
                                              message: "${ must be followed by a variable name ([A-Za-z_][A-Za-z0-9_]*) and }, as in ${REDIS_PASSWORD}; write $$ for a literal $",
                                              mark: mark))
                    return nil
                }
                let name = String(decoding: bytes[(i + 2)..<close], as: UTF8.self)
                if let value = environment[name] {
                    out.append(contentsOf: value.utf8)
                    names.append(name)
                } else {
                    issues.append(ConfigIssue(severity: .error, path: path.description,
                                              message: "the environment variable \(name) is not set (${\(name)}); set it, or write $${ for a literal ${",
                                              mark: mark))
                    ok = false
                }
                i = close + 1
            default:
                out.append(b)
                i += 1
            }
        }
        return ok ? (String(decoding: out, as: UTF8.self), names) : nil
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`.
    static func isName(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, first == UInt8(ascii: "_") || isLetter(first) else { return false }
        return bytes.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func isLetter(_ b: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
    }
}
