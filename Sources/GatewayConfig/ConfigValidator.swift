/// Layer 2: raw `YAMLNode` tree to a validated `GatewayConfiguration`, collecting every problem with
/// its key path and position instead of stopping at the first.
///
/// Used once per load, from one thread; not shared.
final class ConfigValidator {
    /// Folder that relative file paths resolve against (the configuration file's folder).
    let baseDirectory: String
    /// Problems that refuse the configuration.
    private(set) var errors: [ConfigIssue] = []
    /// Problems an operator should see but that do not refuse it.
    private(set) var warnings: [ConfigIssue] = []
    /// TLS files named by validated entries, in document order (not opened here).
    var tlsFiles: [TLSFileReference] = []

    /// Values expanded from `${NAME}` that no message may show (`EnvironmentExpansion`).
    let redactions: [ConfigRedaction]

    init(baseDirectory: String, redactions: [ConfigRedaction] = []) {
        self.baseDirectory = baseDirectory
        self.redactions = redactions
    }

    func error(_ path: ConfigPath, _ message: String, _ mark: SourceMark?) {
        errors.append(ConfigIssue(severity: .error, path: path.description, message: ConfigRedaction.apply(redactions, to: message), mark: mark))
    }

    func warn(_ path: ConfigPath, _ message: String, _ mark: SourceMark?) {
        warnings.append(ConfigIssue(severity: .warning, path: path.description, message: ConfigRedaction.apply(redactions, to: message), mark: mark))
    }

    // MARK: mappings

    /// A mapping node whose keys were checked against its section.
    struct Fields {
        let path: ConfigPath
        let mark: SourceMark
        let entries: [YAMLNode.Entry]
        /// Known keys that an unknown key was probably meant to be (suggestion -> key as written).
        var misspelt: [String: String] = [:]

        /// The value of `key`, or nil when absent or explicitly null.
        func node(_ key: String) -> YAMLNode? {
            guard let entry = entries.first(where: { $0.key == key }), !entry.value.isNull else { return nil }
            return entry.value
        }

        /// Whether `key` is written with a non-null value.
        func has(_ key: String) -> Bool { node(key) != nil }

        /// Position of `key`'s value (or of the mapping when absent).
        func mark(_ key: String) -> SourceMark {
            entries.first(where: { $0.key == key })?.value.mark ?? mark
        }
    }

    /// `node` as a mapping of `section`; unknown keys are reported (with suggestions) and ignored.
    func fields(_ node: YAMLNode, _ path: ConfigPath, _ section: ConfigSchema.Section, what: String? = nil) -> Fields? {
        guard case .mapping(let entries) = node.kind else {
            let expected = what ?? "a mapping with keys such as \(ConfigSchema.keys(section).prefix(3).joined(separator: ", "))"
            error(path, "expected \(expected), got \(node.kindDescription)", node.mark)
            return nil
        }
        let known = ConfigSchema.keys(section)
        var misspelt: [String: String] = [:]
        for entry in entries where !known.contains(entry.key) {
            var message = "unknown key"
            if let suggestion = Suggestion.closest(to: entry.key, among: known) {
                message += "; did you mean \(suggestion)?"
                misspelt[suggestion] = entry.key
            } else {
                let elsewhere = ConfigSchema.sections(containing: entry.key, except: section)
                if !elsewhere.isEmpty {
                    message += " here; \(entry.key) is a key of \(elsewhere.map(\.rawValue).joined(separator: " and "))"
                } else {
                    message += " (known keys: \(known.joined(separator: ", ")))"
                }
            }
            error(path.key(entry.key), message, entry.keyMark)
        }
        return Fields(path: path, mark: node.mark, entries: entries, misspelt: misspelt)
    }

    /// Reports `key` missing from `fields`.
    /// Not reported when an unknown key in the same mapping was already reported as a likely
    /// misspelling of `key` (one mistake, one message).
    func missing(_ fields: Fields, _ key: String, _ hint: String = "") {
        if fields.misspelt[key] != nil { return }
        error(fields.path.key(key), "required key is missing" + hint, fields.mark)
    }

    // MARK: scalars

    /// A scalar's text (any style); errors on null, lists and mappings.
    func string(_ node: YAMLNode, _ path: ConfigPath, expected: String = "a string") -> String? {
        guard case .scalar(let s) = node.kind, !node.isNull else {
            error(path, "expected \(expected), got \(node.kindDescription)", node.mark)
            return nil
        }
        return s.text
    }

    /// A plain decimal integer within `range`.
    func integer(_ node: YAMLNode, _ path: ConfigPath, _ range: ClosedRange<Int>) -> Int? {
        guard case .scalar(let s) = node.kind, !node.isNull else {
            error(path, "expected an integer from \(range.lowerBound) to \(range.upperBound), got \(node.kindDescription)", node.mark)
            return nil
        }
        guard let n = ScalarSyntax.integer(s.text) else {
            error(path, "expected an integer from \(range.lowerBound) to \(range.upperBound), got \(ConfigText.quoted(s.text))", node.mark)
            return nil
        }
        guard s.isPlain else {
            error(path, "expected an integer, got the quoted string \(ConfigText.quoted(s.text)): remove the quotes", node.mark)
            return nil
        }
        guard range.contains(n) else {
            error(path, "must be from \(range.lowerBound) to \(range.upperBound), got \(n)", node.mark)
            return nil
        }
        return n
    }

    /// A plain `true` or `false`.
    func boolean(_ node: YAMLNode, _ path: ConfigPath) -> Bool? {
        guard case .scalar(let s) = node.kind, s.isPlain, let b = ScalarSyntax.boolean(s.text) else {
            var message = "expected true or false, got \(node.kindDescription)"
            if case .scalar(let s) = node.kind, ScalarSyntax.isYAML11Boolean(s.text) || !s.isPlain && ScalarSyntax.boolean(s.text) != nil {
                message += " (write true or false)"
            }
            error(path, message, node.mark)
            return nil
        }
        return b
    }

    /// A duration (see `DurationSyntax`) within `range`.
    func duration(_ node: YAMLNode, _ path: ConfigPath, _ range: ClosedRange<Duration>) -> Duration? {
        guard let text = string(node, path, expected: "a duration like 300s, 500ms, 2m or 1h") else { return nil }
        switch DurationSyntax.parse(text) {
        case .failure(let e):
            error(path, e.message, node.mark)
            return nil
        case .success(let d):
            guard range.contains(d) else {
                error(path, "must be from \(DurationSyntax.format(range.lowerBound)) to \(DurationSyntax.format(range.upperBound)), got \(text)", node.mark)
                return nil
            }
            return d
        }
    }

    /// A size in bytes (see `ByteSize`) within `range`.
    func size(_ node: YAMLNode, _ path: ConfigPath, _ range: ClosedRange<Int>) -> Int? {
        guard let text = string(node, path, expected: "a size like 64KiB or 1MiB") else { return nil }
        switch ByteSize.parse(text) {
        case .failure(let e):
            error(path, e.message, node.mark)
            return nil
        case .success(let n):
            guard range.contains(n) else {
                error(path, "must be from \(ByteSize.format(range.lowerBound)) to \(ByteSize.format(range.upperBound)), got \(text)", node.mark)
                return nil
            }
            return n
        }
    }

    /// One of an enum's raw values, with a suggestion for near misses.
    func choice<E: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ path: ConfigPath, _ type: E.Type) -> E? where E.RawValue == String {
        let names = E.allCases.map(\.rawValue)
        let list = names.joined(separator: " | ")
        guard case .scalar(let s) = node.kind, !node.isNull else {
            error(path, "expected one of \(list), got \(node.kindDescription)", node.mark)
            return nil
        }
        if let value = E(rawValue: s.text) { return value }
        error(path, "expected one of \(list), got \(ConfigText.quoted(s.text))" + Suggestion.hint(s.text, among: names), node.mark)
        return nil
    }

    /// A list's items; a non-list is an error.
    func list(_ node: YAMLNode, _ path: ConfigPath, of what: String) -> [YAMLNode]? {
        guard case .sequence(let items) = node.kind else {
            error(path, "expected a list of \(what), got \(node.kindDescription)", node.mark)
            return nil
        }
        return items
    }

    /// Reads `fields[key]` with `read` when present; `fallback` when absent or null.
    func optional<T>(_ fields: Fields, _ key: String, default fallback: T, _ read: (YAMLNode, ConfigPath) -> T?) -> T? {
        guard let node = fields.node(key) else { return fallback }
        return read(node, fields.path.key(key))
    }
}

extension ConfigValidator {
    /// Validates the whole document; nil when any section failed (the errors say why).
    func validate(_ rootNode: YAMLNode) -> GatewayConfiguration? {
        guard let root = fields(rootNode, .root, .root, what: "a mapping with keys such as listen, upstreams and routes") else { return nil }
        var marks = Marks()
        let listen = listeners(root, marks: &marks)
        var admin: SocketAddress?? = .some(nil)
        var readyRequiresStore: Bool? = false
        if let node = root.node("admin") {
            marks.admin = node.mark
            if case .mapping = node.kind {
                (admin, readyRequiresStore) = adminSection(node, .root.key("admin"))
            } else {
                admin = address(node, .root.key("admin")).map { .some($0) }
            }
        }
        if let node = root.node("tls") {
            error(.root.key("tls"), "TLS is set per listener: listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: PEM file, key: PEM file}]}}]", node.mark)
        }
        let trustedProxies = trustedProxies(root)
        let store = store(root)
        var storeIsMemory = true
        if case .redis = store?.kind { storeIsMemory = false }
        let apps = apps(root, marks: &marks, storeIsMemory: storeIsMemory)
        let verdictToken = self.verdictToken(root, storeIsMemory: storeIsMemory)
        let trust = trust(root)
        let endpoints = endpoints(root)
        let headers = headers(root)
        let upstreams = upstreams(root, marks: &marks)
        let routes = routes(root, headers: headers ?? HeadersConfiguration())
        let limits = limits(root)
        let http2 = http2(root, limits: limits ?? LimitsConfiguration())
        let timeouts = timeouts(root)
        let log = log(root)
        if let listen { unusedTLSSettings(root, listen: listen) }
        crossCheck(Partial(listen: listen?.map(\.address), admin: admin, store: store, apps: apps, endpoints: endpoints,
                           upstreamsComplete: upstreams != nil, routes: routes.valid, routesComplete: routes.complete,
                           storeWasWritten: root.has("store")), marks: marks)
        guard let verdictToken else { return nil }
        if let apps { crossCheckVerdictTokens(topLevel: verdictToken, apps: apps) }
        guard let listen, let admin, let readyRequiresStore, let trustedProxies, let store, let apps, let trust, let endpoints, let headers, let upstreams,
              routes.complete, let limits, let http2, let timeouts, let log else { return nil }
        var configuration = GatewayConfiguration(
            listen: listen, admin: admin, trustedProxies: trustedProxies, store: store, apps: apps, trust: trust, endpoints: endpoints, headers: headers,
            upstreams: upstreams, routes: routes.valid.map(\.0), limits: limits, http2: http2, timeouts: timeouts, log: log)
        configuration.readyRequiresStore = readyRequiresStore
        configuration.verdictToken = verdictToken
        return errors.isEmpty ? configuration : nil
    }

    /// `admin` written as a mapping `{address, ready_requires_store}`: the address (nil when invalid)
    /// and the readiness rule (nil when invalid).
    private func adminSection(_ node: YAMLNode, _ path: ConfigPath) -> (SocketAddress??, Bool?) {
        guard let f = fields(node, path, .admin, what: "an address like 127.0.0.1:9901 or a mapping {address, ready_requires_store}") else {
            return (nil, nil)
        }
        var address: SocketAddress??
        if let node = f.node("address") {
            address = self.address(node, path.key("address")).map { .some($0) }
        } else {
            missing(f, "address", " (the admin listener's address, e.g. 127.0.0.1:9901)")
        }
        let requires = optional(f, "ready_requires_store", default: false) { boolean($0, $1) }
        return (address, requires)
    }
}
