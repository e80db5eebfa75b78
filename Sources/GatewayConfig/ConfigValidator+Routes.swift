import GatewayRules

/// Routes, and the checks that span sections (upstream names, apps, endpoints, loops, shadowing).
extension ConfigValidator {
    /// Where a validated route's parts were written.
    struct RouteSource {
        var path: ConfigPath
        var mark: SourceMark
        var fields: Fields
    }

    /// Methods defined by RFC 9110 section 9 and RFC 5789 (PATCH), for typo hints.
    static let standardMethods = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"]

    /// The routes that validated (with where they came from) and whether all of them did.
    func routes(_ root: Fields, headers: HeadersConfiguration) -> (valid: [(RouteConfiguration, RouteSource)], complete: Bool) {
        let path = root.path.key("routes")
        guard let node = root.node("routes") else {
            missing(root, "routes", " (e.g. routes: [{path_prefix: /, upstream: NAME, mode: off}])")
            return ([], false)
        }
        guard let items = list(node, path, of: "routes") else { return ([], false) }
        if items.isEmpty {
            error(path, "needs at least one route", node.mark)
            return ([], false)
        }
        var result: [(RouteConfiguration, RouteSource)] = []
        var ok = true
        var names: [String: ConfigPath] = [:]
        for (i, item) in items.enumerated() {
            let p = path.index(i)
            guard let f = fields(item, p, .route, what: "a route mapping {path_prefix, upstream, mode, ...}") else { ok = false; continue }
            guard let route = route(f, index: i, headers: headers, names: &names) else { ok = false; continue }
            result.append((route, RouteSource(path: p, mark: item.mark, fields: f)))
        }
        return (result, ok)
    }

    private func route(_ f: Fields, index: Int, headers: HeadersConfiguration, names: inout [String: ConfigPath]) -> RouteConfiguration? {
        let p = f.path
        var ok = true

        var name = "routes[\(index)]"
        if let n = f.node("name") {
            if let text = string(n, p.key("name"), expected: "a route name") {
                if text.utf8.count > 64 || !HTTPSyntax.isToken(text) {
                    error(p.key("name"), "route names use letters, digits and - _ . (at most 64, no spaces), got \(ConfigText.quoted(text))", n.mark)
                    ok = false
                } else if let first = names[text] {
                    error(p.key("name"), "\(ConfigText.quoted(text)) is already the name of \(first)", n.mark)
                    ok = false
                } else {
                    names[text] = p
                    name = text
                }
            } else { ok = false }
        }

        var match: RouteConfiguration.PathMatch?
        switch (f.node("path_prefix"), f.node("path")) {
        case (.some, .some):
            error(p, "set either path_prefix or path, not both", f.mark)
            ok = false
        case (nil, nil):
            if f.misspelt["path_prefix"] != nil || f.misspelt["path"] != nil { ok = false; break }
            error(p.key("path_prefix"), "required key is missing: set path_prefix (a path and everything under it) or path (exactly one path)", f.mark)
            ok = false
        case (.some(let node), nil):
            let kp = p.key("path_prefix")
            if let text = string(node, kp, expected: "a path like /v1/purchases") {
                if let problem = PathSyntax.problem(text) {
                    error(kp, "\(ConfigText.quoted(text)) \(problem)", node.mark)
                } else if text != "/" && text.hasSuffix("/") {
                    error(kp, "write \(text.dropLast()) without the trailing slash: prefixes match whole segments, so it already takes \(text)...", node.mark)
                } else {
                    match = .prefix(text)
                }
            }
            if match == nil { ok = false }
        case (nil, .some(let node)):
            let kp = p.key("path")
            if let text = string(node, kp, expected: "a path like /v1/health") {
                if let problem = PathSyntax.problem(text) {
                    error(kp, "\(ConfigText.quoted(text)) \(problem)", node.mark)
                } else {
                    match = .exact(text)
                }
            }
            if match == nil { ok = false }
        }

        var methods: [String] = []
        if let node = f.node("methods") {
            let kp = p.key("methods")
            if let items = list(node, kp, of: "HTTP methods such as [POST, PUT]") {
                if items.isEmpty {
                    error(kp, "an empty list would match nothing: omit methods to take every method", node.mark)
                    ok = false
                }
                for (i, item) in items.enumerated() {
                    let ip = kp.index(i)
                    guard let text = string(item, ip, expected: "an HTTP method") else { ok = false; continue }
                    if !HTTPSyntax.isToken(text) {
                        error(ip, "\(ConfigText.quoted(text)) is not an HTTP method token", item.mark)
                        ok = false
                    } else if text != text.uppercased() {
                        error(ip, "methods are case-sensitive and written in upper case: \(text.uppercased())", item.mark)
                        ok = false
                    } else if text == "CONNECT" {
                        error(ip, "CONNECT is not proxied (the gateway is a reverse proxy, not a tunnel)", item.mark)
                        ok = false
                    } else if methods.contains(text) {
                        error(ip, "\(text) is listed twice", item.mark)
                        ok = false
                    } else {
                        if !Self.standardMethods.contains(text), let s = Suggestion.closest(to: text, among: Self.standardMethods) {
                            warn(ip, "\(text) is not a standard method; did you mean \(s)?", item.mark)
                        }
                        methods.append(text)
                    }
                }
            } else { ok = false }
        }

        var upstream: String?
        if let node = f.node("upstream") {
            upstream = string(node, p.key("upstream"), expected: "the name of an upstream")
        } else {
            missing(f, "upstream", " (a name from upstreams)")
        }
        if upstream == nil { ok = false }

        let mode = optional(f, "mode", default: RouteConfiguration.Mode.enforce) { choice($0, $1, RouteConfiguration.Mode.self) }
        let maxBody = optional(f, "max_body", default: RouteConfiguration.defaultMaxBody) { size($0, $1, 0...RouteConfiguration.maximumMaxBody) }
        let onStoreError = optional(f, "on_store_error", default: RouteConfiguration.StoreErrorPolicy.failClosed) { choice($0, $1, RouteConfiguration.StoreErrorPolicy.self) }
        let window = optional(f, "counter_window", default: 0) { integer($0, $1, 0...RouteConfiguration.maximumCounterWindow) }
        var environment: AppAttestEnvironment?
        if let node = f.node("environment") {
            environment = choice(node, p.key("environment"), AppAttestEnvironment.self)
            if environment == nil { ok = false }
        }

        var bind: [String] = []
        if let node = f.node("bind_headers") {
            let kp = p.key("bind_headers")
            if let items = list(node, kp, of: "header names such as [Authorization]") {
                if items.count > 16 { error(kp, "at most 16 headers, got \(items.count)", node.mark); ok = false }
                var seen = Set<String>()
                for (i, item) in items.enumerated() {
                    let ip = kp.index(i)
                    guard let text = string(item, ip, expected: "a header name") else { ok = false; continue }
                    let lower = text.lowercased()
                    if text.hasPrefix(":") {
                        error(ip, "pseudo-headers cannot be bound: the method and request-target are bound already", item.mark)
                        ok = false
                    } else if !HTTPSyntax.isToken(text) {
                        error(ip, "\(ConfigText.quoted(text)) is not a valid header name", item.mark)
                        ok = false
                    } else if HTTPSyntax.hopByHopAndFraming.contains(lower) {
                        error(ip, "\(text) is a hop-by-hop or framing header that proxies rewrite; it cannot be bound", item.mark)
                        ok = false
                    } else if headers.isOwnHeader(text) {
                        error(ip, "\(text) is in the gateway's own header family (\(headers.prefix)), which is stripped on ingress; it cannot be bound", item.mark)
                        ok = false
                    } else if seen.contains(lower) {
                        error(ip, "\(text) is listed twice (header names are case-insensitive)", item.mark)
                        ok = false
                    } else {
                        seen.insert(lower)
                        bind.append(text)
                    }
                }
            } else { ok = false }
        }

        var apps: [AppID]?
        if let node = f.node("apps") {
            let kp = p.key("apps")
            if let items = list(node, kp, of: "app IDs") {
                if items.isEmpty {
                    error(kp, "an empty list would refuse every request: omit apps to allow every configured app", node.mark)
                    ok = false
                }
                var ids: [AppID] = []
                for (i, item) in items.enumerated() {
                    let ip = kp.index(i)
                    guard let text = string(item, ip, expected: "an app ID (TEAMID.bundle)") else { ok = false; continue }
                    if let problem = AppID.problem(text) {
                        error(ip, problem, item.mark)
                        ok = false
                    } else if let id = AppID(text) {
                        if ids.contains(id) { error(ip, "\(id) is listed twice", item.mark); ok = false } else { ids.append(id) }
                    }
                }
                apps = ids
            } else { ok = false }
        }

        let connect: Duration?? = f.node("connect_timeout").map { duration($0, p.key("connect_timeout"), .milliseconds(1) ... .seconds(60)).map { .some($0) } } ?? .some(nil)
        let response: Duration?? = f.node("response_timeout").map { duration($0, p.key("response_timeout"), .milliseconds(1) ... .seconds(3600)).map { .some($0) } } ?? .some(nil)
        let signals: SignalPolicy?? = f.node("signals").map { signalPolicy($0, p.key("signals")).map { .some($0) } } ?? .some(nil)
        let percent: Int?? = f.node("enforce_percent").map { integer($0, p.key("enforce_percent"), 0...100).map { .some($0) } } ?? .some(nil)
        // At 100 every key is in the enforced cohort: the route is a security boundary, so a request
        // without evidence is refused unless the operator says otherwise (and is warned).
        let full: Bool = { if case .some(.some(100)) = percent { return true } else { return false } }()
        let missingEvidence = optional(f, "missing_evidence", default: full ? RouteConfiguration.MissingEvidence.enforce : .monitor) {
            choice($0, $1, RouteConfiguration.MissingEvidence.self)
        }
        if full, missingEvidence == .monitor {
            warn(p.key("missing_evidence"), "with enforce_percent 100 and missing_evidence monitor, requests without evidence are still forwarded: this route is no security boundary", f.mark("missing_evidence"))
        }
        if case .some(.some) = percent, let mode, mode != .enforce {
            error(p.key("enforce_percent"), "enforce_percent ramps enforcement on a route in mode enforce; this route is in mode \(mode.rawValue)", f.mark("enforce_percent"))
            ok = false
        }
        if f.has("missing_evidence"), case .some(.none) = percent {
            error(p.key("missing_evidence"), "missing_evidence applies with enforce_percent only (a route without it enforces every request)", f.mark("missing_evidence"))
            ok = false
        }
        let minTier = optional(f, "min_tier", default: RouteConfiguration.MinimumTier.attested) { choice($0, $1, RouteConfiguration.MinimumTier.self) }
        let riskPolicy = routeRisk(f, p)
        guard ok, let match, let upstream, let mode, let maxBody, let onStoreError, let window, let connect, let response,
              let signals, let percent, let missingEvidence, let minTier, let riskPolicy else { return nil }
        var route = RouteConfiguration(name: name, match: match, methods: methods, upstream: upstream, mode: mode, maxBody: maxBody,
                                  onStoreError: onStoreError, counterWindow: window, environment: environment,
                                  bindHeaders: bind, apps: apps, connectTimeout: connect, responseTimeout: response,
                                  signals: signals, enforcePercent: percent, missingEvidence: missingEvidence)
        route.minTier = minTier
        route.riskPolicy = riskPolicy
        return route
    }

    // MARK: cross-section checks

    /// What validated, for the checks that span sections: each check runs when the parts it needs
    /// validated, so one broken section does not hide the other problems.
    struct Partial {
        var listen: [SocketAddress]?
        var admin: SocketAddress??
        var store: StoreConfiguration?
        var apps: [AppConfiguration]?
        var endpoints: EndpointsConfiguration?
        var upstreamsComplete: Bool
        /// Valid routes with their sources; `routesComplete` tells whether every route validated.
        var routes: [(RouteConfiguration, RouteSource)]
        var routesComplete: Bool
        var storeWasWritten: Bool
    }

    func crossCheck(_ v: Partial, marks: Marks) {
        var usedUpstreams = Set<String>()
        for (route, src) in v.routes {
            let p = src.path
            // Upstream exists (any name written under upstreams counts, valid or not).
            if !marks.upstreamNames.isEmpty || v.upstreamsComplete, !marks.upstreamNames.contains(route.upstream) {
                let names = marks.upstreamNames
                error(p.key("upstream"), "unknown upstream \(ConfigText.quoted(route.upstream))" + (Suggestion.closest(to: route.upstream, among: names).map { "; did you mean \($0)?" } ?? " (upstreams: \(names.joined(separator: ", ")))"), src.fields.mark("upstream"))
            }
            usedUpstreams.insert(route.upstream)

            // Apps exist; environment satisfiable.
            if let configuredApps = v.apps {
                let appIDs = configuredApps.map(\.appID)
                if let apps = route.apps {
                    for (i, id) in apps.enumerated() where !appIDs.contains(id) {
                        let itemMark = itemMarks(src.fields, "apps")[safe: i] ?? src.fields.mark("apps")
                        error(p.key("apps").index(i), "\(id) is not in apps" + Suggestion.hint(id.description, among: appIDs.map(\.description)), itemMark)
                    }
                }
                if let env = route.environment {
                    let allowed = configuredApps.filter { route.apps?.contains($0.appID) ?? true }
                    if !allowed.isEmpty && !allowed.contains(where: { $0.environment.allows(env) }) {
                        error(p.key("environment"), "no app allowed on this route accepts \(env.rawValue) keys (\(allowed.map { "\($0.appID): \($0.environment.rawValue)" }.joined(separator: ", "))): the route would refuse every request", src.fields.mark("environment"))
                    }
                }
            }

            // Gateway endpoints are served before routing.
            if let endpoints = v.endpoints, endpoints.owns(path: route.match.path) {
                var key = "path"
                if case .prefix = route.match { key = "path_prefix" }
                error(p.key(key), "\(route.match.path) is inside endpoints.prefix (\(endpoints.prefix)), which the gateway serves itself before routing: this route can never match", src.fields.mark(key))
            }

            // Settings that only matter when verifying.
            if route.mode == .off {
                let ignored = ["on_store_error", "counter_window", "environment", "bind_headers", "apps", "min_tier", "signals"].filter { src.fields.has($0) }
                if !ignored.isEmpty {
                    warn(p.key("mode"), "\(ignored.joined(separator: ", ")) \(ignored.count == 1 ? "has" : "have") no effect with mode off", src.fields.mark("mode"))
                }
            } else if route.onStoreError == .failOpen {
                warn(p.key("on_store_error"), "fail_open forwards requests with verdict unverified whenever the store is unavailable", src.fields.mark("on_store_error"))
            }
        }

        if v.routesComplete {
            routeOrderChecks(v.routes)
            for upstream in marks.validUpstreams where !usedUpstreams.contains(upstream.name) {
                warn(.root.key("upstreams").key(upstream.name), "no route uses this upstream", marks.upstreams[upstream.name])
            }
        }

        // Upstreams looping back into the gateway.
        if let listen = v.listen {
            for upstream in marks.validUpstreams {
                let mark = marks.upstreams[upstream.name]
                for endpoint in upstream.endpoints {
                    for (i, listener) in listen.enumerated() where Self.reaches(endpoint, listener) {
                        error(.root.key("upstreams").key(upstream.name), "\(endpoint) is the gateway's own listener listen[\(i)] (\(listener)): requests would loop", mark)
                    }
                    if case .some(.some(let admin)) = v.admin, Self.reaches(endpoint, admin) {
                        error(.root.key("upstreams").key(upstream.name), "\(endpoint) is the gateway's admin listener", mark)
                    }
                }
            }
        }

        // Admin listener.
        if case .some(.some(let admin)) = v.admin {
            for (i, listener) in (v.listen ?? []).enumerated() where listener.conflicts(with: admin) {
                error(.root.key("admin"), "\(admin) overlaps listen[\(i)] (\(listener)): the admin endpoints need their own address", marks.admin)
            }
            if !admin.isLocal {
                warn(.root.key("admin"), "\(admin) exposes /healthz and /readyz beyond this machine; bind it to 127.0.0.1 unless a probe needs it", marks.admin)
            }
        }

        // Store.
        if let store = v.store, case .memory = store.kind {
            let text = v.storeWasWritten ? "" : "store is not set, so "
            warn(.root.key("store"), "\(text)the memory store keeps challenges and keys in this process only: lost on restart and not shared between replicas; use redis:// in production", nil)
        }
    }

    /// Checks on the order of a complete route list: shadowed routes, HEAD falling through from a
    /// protected GET route, nothing protected at all.
    private func routeOrderChecks(_ list: [(RouteConfiguration, RouteSource)]) {
        let routes = list.map(\.0), sources = list.map(\.1)
        // Shadowed routes.
        let table = RouteTable(routes: routes)
        for s in table.shadowedRoutes() {
            let byNames = s.by.map { "routes[\($0)]" }.joined(separator: " and ")
            warn(sources[s.route].path, "this route can never match: every request it takes is taken first by \(byNames) (routes match in order, first match wins)", sources[s.route].mark)
        }

        // HEAD falling through from a protected GET route to a weaker one.
        let shadowed = Set(table.shadowedRoutes().map(\.route))
        for (index, route) in routes.enumerated() where route.mode != .off && !shadowed.contains(index)
            && route.methods.contains("GET") && !route.methods.contains("HEAD") {
            if let next = table.match(method: "HEAD", path: route.match.path), routes[next].mode == .off {
                warn(sources[index].path.key("methods"), "takes GET but not HEAD: HEAD \(route.match.path) falls through to routes[\(next)] (mode off); add HEAD if the upstream answers HEAD like GET", sources[index].fields.mark("methods"))
            }
        }

        if !routes.contains(where: { $0.mode != .off }) {
            warn(.root.key("routes"), "no route has mode enforce or monitor: the gateway verifies nothing", sources.first?.mark)
        }
    }

    /// Whether forwarding to `endpoint` would connect to `listener`.
    static func reaches(_ endpoint: UpstreamEndpoint, _ listener: SocketAddress) -> Bool {
        switch (endpoint, listener) {
        case (.unix(let a), .unix(let b)): return a == b
        case (.http(let host, let port), .ip(let lhost, let lport)), (.https(let host, let port), .ip(let lhost, let lport)):
            guard port == lport, lport != 0 else { return false }
            if host == lhost { return true }
            let loopbackish = host == "localhost" || host == "::1" || host.hasPrefix("127.")
            return listener.isWildcard && loopbackish || (host == "localhost" && (lhost == "::1" || lhost.hasPrefix("127.")))
        default: return false
        }
    }

    private func itemMarks(_ f: Fields, _ key: String) -> [SourceMark] {
        guard let node = f.node(key), case .sequence(let items) = node.kind else { return [] }
        return items.map(\.mark)
    }
}

extension Array {
    /// The element at `index`, or nil when out of range.
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
