import CYAML

/// Layer 1: configuration text to a raw `YAMLNode` tree, through libyaml's event API.
///
/// Stricter than YAML itself, on purpose (a gateway configuration is small and security relevant):
/// - at most `maximumBytes` of input, which must be UTF-8 (a UTF-8 byte order mark is tolerated);
/// - exactly one document (`---` separating a second document is refused);
/// - no anchors (`&a`) or aliases (`*a`): aliases can expand exponentially ("billion laughs");
/// - no merge keys (`<<`), no duplicate keys in a mapping, only scalar keys;
/// - only the YAML 1.2 core schema tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`,
///   `!!seq`), and a tagged scalar must match its tag;
/// - at most `maximumDepth` levels of nesting.
/// Problems that leave the tree well-formed (aliases, duplicates, tags) are all collected; a YAML syntax
/// error stops reading.
enum YAMLReader {
    /// Largest accepted input, in bytes (1 MiB).
    static let maximumBytes = 1 << 20
    /// Deepest accepted nesting of lists and mappings.
    static let maximumDepth = 32

    private static let tagPrefix = "tag:yaml.org,2002:"

    /// The tree and every problem found, for a caller that reports later problems too.
    ///
    /// `root` is nil when reading stopped (not UTF-8, too large, a syntax error, a second document,
    /// nesting too deep, an empty file). It is present, beside the issues, when every problem was one
    /// the reader steps over without changing the rest of the tree: a duplicate key (the first value
    /// is kept), a non-scalar or merge key (its value dropped), an anchor, an alias (read as an empty
    /// value), an unsupported or mismatched tag.
    static func readRecovering(_ input: [UInt8]) -> (root: YAMLNode?, issues: [ConfigIssue]) {
        // A UTF-8 byte order mark is invisible in editors: drop it so columns on line 1 stay right
        // (libyaml, told the encoding, would read it as content).
        let bytes = input.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(input.dropFirst(3)) : input
        if bytes.count > maximumBytes {
            return (nil, [issue("", "the configuration is \(bytes.count) bytes; the limit is \(maximumBytes) bytes (1MiB)", nil)])
        }
        if let bad = firstInvalidUTF8(bytes) {
            return (nil, [issue("", "the configuration is not valid UTF-8 (byte 0x\(String(bytes[bad], radix: 16, uppercase: true)) at offset \(bad)); save it as UTF-8", mark(of: bad, in: bytes))])
        }
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            return (nil, [issue("", "libyaml could not initialize a parser (out of memory)", nil)])
        }
        defer { yaml_parser_delete(parser) }
        return bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(parser, buffer.baseAddress, buffer.count)
            yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
            var builder = TreeBuilder()
            return builder.run(parser)
        }
    }

    static func issue(_ path: String, _ message: String, _ mark: SourceMark?) -> ConfigIssue {
        ConfigIssue(severity: .error, path: path, message: message, mark: mark)
    }

    /// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, surrogates or > U+10FFFF).
    static func firstInvalidUTF8(_ b: [UInt8]) -> Int? {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 { i += 1; continue }
            let need: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: need = 1
            case 0xE0: need = 2; lo = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: need = 2
            case 0xED: need = 2; hi = 0x9F
            case 0xF0: need = 3; lo = 0x90
            case 0xF1...0xF3: need = 3
            case 0xF4: need = 3; hi = 0x8F
            default: return i
            }
            if i + need >= n { return i }
            for k in 1...need {
                let d = b[i + k]
                let (l, h) = k == 1 ? (lo, hi) : (UInt8(0x80), UInt8(0xBF))
                if d < l || d > h { return i }
            }
            i += need + 1
        }
        return nil
    }

    /// Line and column (characters, 1-based) of byte `offset`.
    static func mark(of offset: Int, in bytes: [UInt8]) -> SourceMark {
        var line = 1, column = 1
        var i = 0
        while i < offset && i < bytes.count {
            if bytes[i] == 0x0A { line += 1; column = 1 } else if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        return SourceMark(line: line, column: column)
    }

    static func mark(_ m: yaml_mark_t) -> SourceMark {
        SourceMark(line: Int(clamping: m.line) &+ 1, column: Int(clamping: m.column) &+ 1)
    }

    static func string(_ p: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let p else { return nil }
        return String(cString: UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))
    }

    /// Event consumer building the tree with an explicit stack (no recursion on input depth).
    private struct TreeBuilder {
        enum PendingKey {
            case none
            case key(String, SourceMark)
            /// The key was refused; its value is read and dropped.
            case skip
        }

        enum Frame {
            case sequence(path: ConfigPath, mark: SourceMark, items: [YAMLNode])
            case mapping(path: ConfigPath, mark: SourceMark, entries: [YAMLNode.Entry],
                         pending: PendingKey, seen: [String: SourceMark])
        }

        var stack: [Frame] = []
        var issues: [ConfigIssue] = []
        var root: YAMLNode?
        var documents = 0

        /// Path at which the next completed node lands.
        var childPath: ConfigPath {
            guard let top = stack.last else { return .root }
            switch top {
            case .sequence(let path, _, let items): return path.index(items.count)
            case .mapping(let path, _, _, let pending, _):
                if case .key(let k, _) = pending { return path.key(k) }
                return path
            }
        }

        /// True when the next completed node is a mapping key.
        var expectingKey: Bool {
            if case .mapping(_, _, _, .none, _)? = stack.last { return true }
            return false
        }

        mutating func fail(_ path: ConfigPath, _ message: String, _ mark: SourceMark?) {
            issues.append(YAMLReader.issue(path.description, message, mark))
        }

        mutating func run(_ parser: UnsafeMutablePointer<yaml_parser_t>) -> (root: YAMLNode?, issues: [ConfigIssue]) {
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(parser, &event) == 1 else {
                    let p = parser.pointee
                    var message = "invalid YAML: " + (p.problem.map { String(cString: $0) } ?? "syntax error")
                    if let context = p.context.map({ String(cString: $0) }) {
                        let cm = YAMLReader.mark(p.context_mark)
                        message += " (\(context) that starts at \(cm))"
                    }
                    fail(.root, message, YAMLReader.mark(p.problem_mark))
                    return (nil, issues)
                }
                defer { yaml_event_delete(&event) }
                let start = YAMLReader.mark(event.start_mark)
                switch event.type {
                case YAML_STREAM_START_EVENT:
                    break
                case YAML_DOCUMENT_START_EVENT:
                    documents += 1
                    if documents > 1 {
                        fail(.root, "a second YAML document (---) was found: one configuration per file", start)
                        return (nil, issues)
                    }
                case YAML_DOCUMENT_END_EVENT:
                    break
                case YAML_STREAM_END_EVENT:
                    guard let root else {
                        fail(.root, "the configuration is empty", nil)
                        return (nil, issues)
                    }
                    return (root, issues)
                case YAML_ALIAS_EVENT:
                    let name = YAMLReader.string(event.data.alias.anchor) ?? ""
                    fail(childPath, "aliases (*\(name)) are not supported: they can expand exponentially (\"billion laughs\"); write the value out", start)
                    complete(YAMLNode(kind: .scalar(.init(text: "", isPlain: true)), mark: start))
                case YAML_SCALAR_EVENT:
                    let s = event.data.scalar
                    checkAnchor(s.anchor, start)
                    let text = s.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: s.length), as: UTF8.self) } ?? ""
                    var plain = s.style == YAML_PLAIN_SCALAR_STYLE
                    if let tag = YAMLReader.string(s.tag), tag != "!" {
                        switch tag {
                        case YAMLReader.tagPrefix + "str": plain = false
                        case YAMLReader.tagPrefix + "int":
                            if ScalarSyntax.integer(text) == nil { fail(childPath, "\(ConfigText.quoted(text)) is not an integer, but it is tagged !!int", start) }
                            plain = true
                        case YAMLReader.tagPrefix + "float":
                            if Double(text) == nil && ScalarSyntax.integer(text) == nil { fail(childPath, "\(ConfigText.quoted(text)) is not a number, but it is tagged !!float", start) }
                            plain = true
                        case YAMLReader.tagPrefix + "bool":
                            if ScalarSyntax.boolean(text) == nil { fail(childPath, "\(ConfigText.quoted(text)) is not true or false, but it is tagged !!bool", start) }
                            plain = true
                        case YAMLReader.tagPrefix + "null":
                            let n = YAMLNode(kind: .scalar(.init(text: text, isPlain: true)), mark: start)
                            if !n.isNull { fail(childPath, "\(ConfigText.quoted(text)) is not null, but it is tagged !!null", start) }
                            plain = true
                        default:
                            refuseTag(tag, start)
                        }
                    }
                    let node = YAMLNode(kind: .scalar(.init(text: text, isPlain: plain)), mark: start)
                    if expectingKey, plain, text == "<<" {
                        fail(childPath, "merge keys (<<) are not supported: write the keys out", start)
                        setPending(.skip)
                        break
                    }
                    complete(node)
                case YAML_SEQUENCE_START_EVENT:
                    let s = event.data.sequence_start
                    checkAnchor(s.anchor, start)
                    if let tag = YAMLReader.string(s.tag), tag != "!", tag != YAMLReader.tagPrefix + "seq" { refuseTag(tag, start) }
                    if stack.count >= YAMLReader.maximumDepth {
                        fail(childPath, "nesting deeper than \(YAMLReader.maximumDepth) levels", start)
                        return (nil, issues)
                    }
                    stack.append(.sequence(path: childPath, mark: start, items: []))
                case YAML_MAPPING_START_EVENT:
                    let s = event.data.mapping_start
                    checkAnchor(s.anchor, start)
                    if let tag = YAMLReader.string(s.tag), tag != "!", tag != YAMLReader.tagPrefix + "map" { refuseTag(tag, start) }
                    if stack.count >= YAMLReader.maximumDepth {
                        fail(childPath, "nesting deeper than \(YAMLReader.maximumDepth) levels", start)
                        return (nil, issues)
                    }
                    stack.append(.mapping(path: childPath, mark: start, entries: [], pending: .none, seen: [:]))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard let top = stack.popLast() else { break }
                    switch top {
                    case .sequence(_, let mark, let items):
                        complete(YAMLNode(kind: .sequence(items), mark: mark))
                    case .mapping(_, let mark, let entries, _, _):
                        complete(YAMLNode(kind: .mapping(entries), mark: mark))
                    }
                default:
                    break
                }
            }
        }

        mutating func checkAnchor(_ anchor: UnsafeMutablePointer<yaml_char_t>?, _ mark: SourceMark) {
            guard let name = YAMLReader.string(anchor) else { return }
            fail(childPath, "anchors (&\(name)) and aliases are not supported: aliases can expand exponentially (\"billion laughs\"); write the value out", mark)
        }

        mutating func refuseTag(_ tag: String, _ mark: SourceMark) {
            let shown = tag.hasPrefix(YAMLReader.tagPrefix) ? "!!" + tag.dropFirst(YAMLReader.tagPrefix.count) : tag
            fail(childPath, "the tag \(shown) is not supported: only !!str, !!int, !!float, !!bool, !!null, !!map and !!seq", mark)
        }

        mutating func setPending(_ pending: PendingKey) {
            guard case .mapping(let path, let mark, let entries, _, let seen)? = stack.last else { return }
            stack[stack.count - 1] = .mapping(path: path, mark: mark, entries: entries, pending: pending, seen: seen)
        }

        /// Attaches a finished node to its parent (or makes it the root).
        mutating func complete(_ node: YAMLNode) {
            guard let top = stack.popLast() else {
                root = node
                return
            }
            switch top {
            case .sequence(let path, let mark, var items):
                items.append(node)
                stack.append(.sequence(path: path, mark: mark, items: items))
            case .mapping(let path, let mark, var entries, let pending, var seen):
                switch pending {
                case .none:
                    guard case .scalar(let key) = node.kind else {
                        stack.append(.mapping(path: path, mark: mark, entries: entries, pending: .skip, seen: seen))
                        fail(path, "mapping keys must be plain strings, not \(node.kindDescription)", node.mark)
                        return
                    }
                    if let first = seen[key.text] {
                        stack.append(.mapping(path: path, mark: mark, entries: entries, pending: .skip, seen: seen))
                        fail(path.key(key.text), "duplicate key \(ConfigText.quoted(key.text)) (first at \(first))", node.mark)
                        return
                    }
                    seen[key.text] = node.mark
                    stack.append(.mapping(path: path, mark: mark, entries: entries, pending: .key(key.text, node.mark), seen: seen))
                case .key(let key, let keyMark):
                    entries.append(YAMLNode.Entry(key: key, keyMark: keyMark, value: node))
                    stack.append(.mapping(path: path, mark: mark, entries: entries, pending: .none, seen: seen))
                case .skip:
                    stack.append(.mapping(path: path, mark: mark, entries: entries, pending: .none, seen: seen))
                }
            }
        }
    }
}
