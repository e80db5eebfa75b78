import Foundation
import GatewayRules

/// Sections other than routes and listeners: store, apps, trust, endpoints, headers, upstreams,
/// limits, timeouts, log.
extension ConfigValidator {
    /// Where each validated item came from, for cross-section checks.
    struct Marks {
        var listen: [SourceMark] = []
        var admin: SourceMark?
        var upstreams: [String: SourceMark] = [:]
        /// Every name written under `upstreams`, valid or not (so a route naming a broken upstream
        /// is not also told that the upstream does not exist).
        var upstreamNames: [String] = []
        /// Upstreams that validated, even when others did not.
        var validUpstreams: [UpstreamConfiguration] = []
        var apps: [AppID: ConfigPath] = [:]
    }

    // MARK: store

    func store(_ root: Fields) -> StoreConfiguration? {
        let path = root.path.key("store")
        guard let node = root.node("store") else { return .memory }
        let timeoutRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(60)
        if case .mapping = node.kind {
            guard let f = fields(node, path, .store) else { return nil }
            var kind: StoreConfiguration.Kind?
            if let urlNode = f.node("url") {
                kind = storeKind(urlNode, path.key("url"))
            } else {
                missing(f, "url", " (memory or redis://host:port/db)")
            }
            let command = optional(f, "command_timeout", default: StoreConfiguration.defaultCommandTimeout) { duration($0, $1, timeoutRange) }
            let connect = optional(f, "connect_timeout", default: StoreConfiguration.defaultConnectTimeout) { duration($0, $1, timeoutRange) }
            let waitReplicas = optional(f, "wait_replicas", default: 0) { integer($0, $1, 0...StoreConfiguration.maximumWaitReplicas) }
            let credentials = storeCredentials(f, path)
            let tls = storeTLS(f, kind: kind)
            guard let kind, let command, let connect, let waitReplicas, let credentials, let tls else { return nil }
            if kind == .memory, f.has("command_timeout") || f.has("connect_timeout") {
                warn(path, "command_timeout and connect_timeout have no effect on the memory store", f.mark)
            }
            if kind == .memory, waitReplicas > 0 {
                error(path.key("wait_replicas"), "wait_replicas needs a Redis store (the memory store has no replicas)", f.mark("wait_replicas"))
                return nil
            }
            guard case .redis(var url) = kind else {
                if credentials.password != nil || credentials.username != nil {
                    error(path, "username, password and password_file are for a Redis store; the memory store has no login", f.mark)
                    return nil
                }
                return StoreConfiguration(kind: kind, commandTimeout: command, connectTimeout: connect)
            }
            if let password = credentials.password {
                guard url.password == nil else {
                    error(path.key(credentials.passwordKey), "the Redis URL already holds a password: give it once (password_file, password or the URL)", f.mark(credentials.passwordKey))
                    return nil
                }
                url.password = password
            }
            if let username = credentials.username {
                guard url.username == nil else {
                    error(path.key("username"), "the Redis URL already holds a user name: give it once", f.mark("username"))
                    return nil
                }
                guard url.password != nil else {
                    error(path.key("username"), "a Redis user name needs a password (password_file or password)", f.mark("username"))
                    return nil
                }
                url.username = username
            }
            var configuration = StoreConfiguration(kind: .redis(url), commandTimeout: command, connectTimeout: connect, waitReplicas: waitReplicas)
            configuration.tls = tls
            return configuration
        }
        guard let kind = storeKind(node, path) else { return nil }
        return StoreConfiguration(kind: kind)
    }

    /// `store.username`, `store.password` and `store.password_file` (one of the two passwords at most;
    /// the file read now, one trailing newline stripped). nil when invalid (errors recorded).
    private func storeCredentials(_ f: Fields, _ path: ConfigPath) -> (username: String?, password: String?, passwordKey: String)? {
        var ok = true
        var username: String?
        if let node = f.node("username") {
            username = string(node, path.key("username"))
            if username == nil {
                ok = false
            } else if username?.isEmpty == true {
                error(path.key("username"), "must not be empty", node.mark)
                ok = false
            }
        }
        if f.has("password") && f.has("password_file") {
            error(path.key("password_file"), "give the Redis password once: password_file or password, not both", f.mark("password_file"))
            return nil
        }
        var password: String?
        var key = "password"
        if let node = f.node("password") {
            password = string(node, path.key("password"), expected: "the Redis password (write ${VARIABLE} to take it from the environment)")
            if password == nil { ok = false }
        } else if let node = f.node("password_file") {
            key = "password_file"
            if let file = string(node, path.key("password_file"), expected: "the path of a file holding the Redis password") {
                let resolved = NetworkSyntax.resolvePath(file, baseDirectory: baseDirectory)
                switch PasswordFile.read(resolved) {
                case .success(let text): password = text
                case .failure(let problem):
                    error(path.key("password_file"), problem.message, node.mark)
                    ok = false
                }
            } else {
                ok = false
            }
        }
        return ok ? (username, password, key) : nil
    }

    private func storeKind(_ node: YAMLNode, _ path: ConfigPath) -> StoreConfiguration.Kind? {
        guard let text = string(node, path, expected: "memory, a redis[s]:// or redis[s]+cluster:// URL or a mapping {url, command_timeout, connect_timeout, wait_replicas, tls}") else { return nil }
        if text == "memory" { return .memory }
        if Suggestion.closest(to: text, among: ["memory"]) != nil && !text.contains(":") {
            error(path, "expected memory, \(RedisURL.grammar), got \(ConfigText.quoted(text)); did you mean memory?", node.mark)
            return nil
        }
        do throws(RedisURLError) {
            return .redis(try RedisURL(parsing: text, baseDirectory: baseDirectory))
        } catch .unsupportedScheme {
            error(path, "expected memory, \(RedisURL.grammar), got \(ConfigText.redactedURL(text))", node.mark)
        } catch let problem {
            error(path, problem.description, node.mark)
        }
        return nil
    }

    // MARK: apps

    func apps(_ root: Fields, marks: inout Marks, storeIsMemory: Bool = true) -> [AppConfiguration]? {
        let path = root.path.key("apps")
        guard let node = root.node("apps") else {
            missing(root, "apps", ": list at least one app (- app_id: TEAMID.bundle.id) whose keys may attest")
            return nil
        }
        guard let items = list(node, path, of: "apps ({app_id, environment})") else { return nil }
        if items.isEmpty {
            error(path, "needs at least one app: routes in mode enforce or monitor accept keys of the apps listed here only", node.mark)
            return nil
        }
        var result: [AppConfiguration] = []
        var ok = true
        for (i, item) in items.enumerated() {
            let itemPath = path.index(i)
            guard let f = fields(item, itemPath, .app, what: "a mapping {app_id, environment}") else { ok = false; continue }
            var appID: AppID?
            if let idNode = f.node("app_id") {
                if let text = string(idNode, itemPath.key("app_id")) {
                    if let problem = AppID.problem(text) {
                        error(itemPath.key("app_id"), problem, idNode.mark)
                    } else if let id = AppID(text) {
                        if let first = marks.apps[id] {
                            error(itemPath.key("app_id"), "\(id) is already listed at \(first) (use environment: any to allow both environments)", idNode.mark)
                        } else {
                            appID = id
                            marks.apps[id] = itemPath
                        }
                    }
                }
            } else {
                missing(f, "app_id", " (TEAMID.bundle.identifier)")
            }
            let environment = optional(f, "environment", default: EnvironmentPolicy.production) { choice($0, $1, EnvironmentPolicy.self) }
            let signals: SignalPolicy?? = f.node("signals").map { signalPolicy($0, itemPath.key("signals")).map { .some($0) } } ?? .some(nil)
            let verdictToken = self.verdictToken(f, storeIsMemory: storeIsMemory)
            let riskSettings = risk(f, itemPath)
            guard let appID, let environment, let signals, let verdictToken, let riskSettings else { ok = false; continue }
            if environment == .any {
                warn(itemPath.key("environment"), "\(appID) accepts development keys too (builds signed for development in Xcode); use production outside tests", f.mark("environment"))
            }
            var app = AppConfiguration(appID: appID, environment: environment, signals: signals)
            app.verdictToken = verdictToken
            app.risk = riskSettings
            guard appLifecycle(f, itemPath, into: &app) else { ok = false; continue }
            guard let integrity = integrityPolicy(f, itemPath) else { ok = false; continue }
            app.integrity = integrity
            result.append(app)
        }
        return ok ? result : nil
    }

    /// `integrity_refuse` and `integrity_lower` of one app: lists of integrity codes
    /// (`IntegrityCodes` shape; a code outside the documented list is a warning, not an error).
    private func integrityPolicy(_ f: Fields, _ itemPath: ConfigPath) -> IntegrityPolicy? {
        var ok = true
        func codes(_ key: String) -> Set<String> {
            guard let node = f.node(key) else { return [] }
            let kp = itemPath.key(key)
            guard let items = list(node, kp, of: "integrity codes such as [jb_files, debugger]") else { ok = false; return [] }
            var result = Set<String>()
            for (i, item) in items.enumerated() {
                guard let code = string(item, kp.index(i), expected: "an integrity code") else { ok = false; continue }
                if let problem = IntegrityCodes.problem(code: code) {
                    error(kp.index(i), problem, item.mark)
                    ok = false
                } else {
                    if !IntegrityCodes.isDocumented(code) {
                        warn(kp.index(i), "\(code) is not a documented integrity code (\(IntegrityCodes.documented.map(\.code).joined(separator: ", "))); clients must send it as written", item.mark)
                    }
                    result.insert(code)
                }
            }
            return result
        }
        let refuse = codes("integrity_refuse"), lower = codes("integrity_lower")
        for code in refuse.intersection(lower).sorted() {
            warn(itemPath.key("integrity_lower"), "\(code) is in integrity_refuse too, which wins", f.mark("integrity_lower"))
        }
        return ok ? IntegrityPolicy(refuse: refuse, lower: lower) : nil
    }

    // MARK: trusted_proxies

    /// `trusted_proxies`: a list of IP networks (`CIDR`); absent or null: nobody is trusted.
    func trustedProxies(_ root: Fields) -> TrustedProxies? {
        guard let node = root.node("trusted_proxies") else { return TrustedProxies() }
        let path = root.path.key("trusted_proxies")
        guard let items = list(node, path, of: "IP networks such as [10.0.0.0/8, 2001:db8::/32]") else { return nil }
        var networks: [CIDR] = []
        var written: [CIDR: Int] = [:]
        var ok = true
        for (i, item) in items.enumerated() {
            let itemPath = path.index(i)
            guard let text = string(item, itemPath, expected: "an IP network such as 10.0.0.0/8") else { ok = false; continue }
            switch CIDR.parse(text) {
            case .failure(let problem):
                error(itemPath, problem.message, item.mark)
                ok = false
            case .success(let network):
                if let first = written[network] {
                    error(itemPath, "\(network) is already listed as trusted_proxies[\(first)]", item.mark)
                    ok = false
                    continue
                }
                written[network] = i
                if network.prefixLength == 0 {
                    warn(itemPath, "\(network) trusts every \(network.address.family == .ipv4 ? "IPv4" : "IPv6") peer: any such client can then choose the X-Forwarded-For and X-Forwarded-Proto the upstream sees", item.mark)
                }
                networks.append(network)
            }
        }
        return ok ? TrustedProxies(networks) : nil
    }

    // MARK: trust

    func trust(_ root: Fields) -> TrustConfiguration? {
        guard let node = root.node("trust") else { return TrustConfiguration() }
        let path = root.path.key("trust")
        guard let f = fields(node, path, .trust) else { return nil }
        guard let receiptRoots = extraReceiptRoots(f, path) else { return nil }
        guard let rootsNode = f.node("extra_roots") else {
            var trust = TrustConfiguration()
            trust.extraReceiptRoots = receiptRoots
            return trust
        }
        let rootsPath = path.key("extra_roots")
        guard let items = list(rootsNode, rootsPath, of: "PEM file paths") else { return nil }
        var roots: [String] = []
        var ok = true
        for (i, item) in items.enumerated() {
            let itemPath = rootsPath.index(i)
            guard let text = string(item, itemPath, expected: "a PEM file path") else { ok = false; continue }
            let resolved = NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
            if let problem = pemProblem(resolved) {
                error(itemPath, problem, item.mark)
                ok = false
                continue
            }
            if roots.contains(resolved) {
                error(itemPath, "\(resolved) is listed twice", item.mark)
                ok = false
                continue
            }
            roots.append(resolved)
            tlsFiles.append(TLSFileReference(path: itemPath.description, mark: item.mark, files: .trustRoots(resolved)))
            warn(itemPath, "TEST DEVICES ONLY: \(resolved) is trusted as an App Attest root, so keys from the simulator or any holder of that CA's key are accepted like real devices; never deploy this to production", item.mark)
        }
        var trust = TrustConfiguration(extraRoots: roots)
        trust.extraReceiptRoots = receiptRoots
        return ok ? trust : nil
    }

    /// Why the file at `path` cannot serve as a PEM root file, or nil.
    private func pemProblem(_ path: String) -> String? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return "\(path) does not exist (relative paths resolve against the configuration file's folder, \(baseDirectory))"
        }
        if isDirectory.boolValue { return "\(path) is a folder, not a PEM file" }
        guard let handle = FileHandle(forReadingAtPath: path) else { return "\(path) cannot be read (permissions?)" }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 1 << 20)) ?? Data()
        guard let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") else {
            return "\(path) is not a PEM certificate file (no -----BEGIN CERTIFICATE----- line)"
        }
        return nil
    }

    // MARK: endpoints

    func endpoints(_ root: Fields) -> EndpointsConfiguration? {
        guard let node = root.node("endpoints") else { return EndpointsConfiguration() }
        let path = root.path.key("endpoints")
        guard let f = fields(node, path, .endpoints) else { return nil }
        let prefix = optional(f, "prefix", default: EndpointsConfiguration.defaultPrefix) { node, p -> String? in
            guard let text = string(node, p, expected: "an absolute path like /app-attest/v1") else { return nil }
            if let problem = PathSyntax.problem(text) {
                error(p, "\(ConfigText.quoted(text)) \(problem)", node.mark)
                return nil
            }
            if text == "/" {
                error(p, "must not be / (the gateway's endpoints would take every request); use e.g. /app-attest/v1", node.mark)
                return nil
            }
            if text.hasSuffix("/") {
                error(p, "write it without a trailing slash: \(text.dropLast())", node.mark)
                return nil
            }
            return text
        }
        let ttl = optional(f, "challenge_ttl", default: EndpointsConfiguration.defaultChallengeTTL) { duration($0, $1, .seconds(10) ... .seconds(3600)) }
        let bytes = optional(f, "challenge_bytes", default: EndpointsConfiguration.defaultChallengeBytes) { integer($0, $1, 16...64) }
        var rateLimitOK = true
        var rateLimit: EndpointsConfiguration.RateLimit?
        if let node = f.node("rate_limit") {
            let p = path.key("rate_limit")
            if let r = fields(node, p, .rateLimit, what: "a mapping with requests_per_second and burst") {
                let rate: Int?? = r.node("requests_per_second").map { integer($0, p.key("requests_per_second"), 1...100_000) }
                if rate == nil { missing(r, "requests_per_second") }
                let burst: Int?? = r.node("burst").map { integer($0, p.key("burst"), 1...1_000_000) }
                if case .some(.some(let rps)) = rate, burst.map({ $0 != nil }) ?? true {
                    rateLimit = EndpointsConfiguration.RateLimit(requestsPerSecond: rps, burst: burst ?? nil)
                } else {
                    rateLimitOK = false
                }
            } else {
                rateLimitOK = false
            }
        }
        let next = optional(f, "next_challenge", default: true) { boolean($0, $1) }
        let fleet: EndpointsConfiguration.FleetRate?? = f.node("fleet_attest_rate").map {
            fleetAttestRate($0, path.key("fleet_attest_rate")).map { .some($0) }
        } ?? .some(nil)
        guard let prefix, let ttl, let bytes, rateLimitOK, let next, let fleet else { return nil }
        return EndpointsConfiguration(prefix: prefix, challengeTTL: ttl, challengeBytes: bytes, rateLimit: rateLimit,
                                      nextChallenge: next, fleetAttestRate: fleet)
    }

    // MARK: headers

    /// Request headers whose names must never fall into the gateway's stripped family (a prefix that
    /// begins any of them is refused): the standard ones and those common APIs, browsers and tracing
    /// rely on (a probe renamed the family to `Cache-`, `Sec-` or `Origin` and lost them).
    static let essentialHeaders = [
        "host", "content-length", "content-type", "content-encoding", "content-language", "content-range", "transfer-encoding",
        "connection", "te", "upgrade", "keep-alive", "proxy-connection", "http2-settings", "authorization", "proxy-authorization",
        "cookie", "user-agent", "accept", "accept-encoding", "accept-language", "accept-charset", "forwarded", "x-forwarded-for",
        "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "x-request-id", "via", "traceparent", "tracestate", "baggage",
        "expect", "range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "cache-control",
        "pragma", "origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-websocket-key", "sec-ch-ua", "dnt", "priority",
        "prefer", "idempotency-key", "x-api-key", "x-csrf-token", "x-requested-with", "max-forwards", "date", "from",
        "early-data", "upgrade-insecure-requests",
    ]

    /// Response headers `headers.error` must not be named after: the gateway drops every upstream
    /// copy of that name from every response (so that none passes for a refusal), which would lose
    /// the upstream's cookies, redirects, caching or content type (a probe named it `Content-Type`,
    /// `Set-Cookie`, `Retry-After`).
    static let standardResponseHeaders: Set<String> = [
        "set-cookie", "location", "retry-after", "www-authenticate", "proxy-authenticate", "vary", "etag", "last-modified",
        "expires", "age", "server", "content-disposition", "content-location", "accept-ranges", "allow", "alt-svc", "link",
        "refresh", "trailer", "strict-transport-security", "content-security-policy", "x-content-type-options",
        "x-frame-options", "access-control-allow-origin", "access-control-allow-credentials", "access-control-allow-headers",
        "access-control-allow-methods", "access-control-expose-headers", "access-control-max-age", "cross-origin-opener-policy",
        "cross-origin-resource-policy", "referrer-policy", "permissions-policy", "timing-allow-origin", "server-timing",
        "x-request-id", "traceparent",
    ]

    func headers(_ root: Fields) -> HeadersConfiguration? {
        guard let node = root.node("headers") else { return HeadersConfiguration() }
        let path = root.path.key("headers")
        guard let f = fields(node, path, .headers) else { return nil }
        let defaults = HeadersConfiguration()
        var ok = true

        var prefix = defaults.prefix
        if let prefixNode = f.node("prefix") {
            let p = path.key("prefix")
            if let text = string(prefixNode, p, expected: "a header name prefix like App-Attest-") {
                if !HTTPSyntax.isToken(text) {
                    error(p, "\(ConfigText.quoted(text)) is not the start of a header name (letters, digits, - and a few symbols)", prefixNode.mark)
                    ok = false
                } else if text.utf8.count < 3 {
                    error(p, "\(ConfigText.quoted(text)) is too short: every request header starting with it is stripped", prefixNode.mark)
                    ok = false
                } else if let victim = Self.essentialHeaders.first(where: { $0.hasPrefix(text.lowercased()) }) {
                    error(p, "\(ConfigText.quoted(text)) would strip standard headers such as \(victim): every request header starting with the prefix is removed", prefixNode.mark)
                    ok = false
                } else {
                    prefix = text
                }
            } else { ok = false }
        }

        func name(_ f: Fields, _ key: String, _ fallback: String, family: Bool) -> String {
            guard let n = f.node(key) else { return fallback }
            let p = f.path.key(key)
            guard let text = string(n, p, expected: "a header name") else { ok = false; return fallback }
            guard HTTPSyntax.isToken(text) else {
                error(p, "\(ConfigText.quoted(text)) is not a valid header name", n.mark)
                ok = false
                return fallback
            }
            if family && !(text.lowercased().hasPrefix(prefix.lowercased()) && text.utf8.count > prefix.utf8.count) {
                error(p, "\(text) must start with headers.prefix (\(prefix)) so that ingress strips client copies of it", n.mark)
                ok = false
                return fallback
            }
            if HTTPSyntax.hopByHopAndFraming.contains(text.lowercased()) {
                error(p, "\(text) is a hop-by-hop or framing header", n.mark)
                ok = false
            }
            return text
        }

        var evidence = defaults.evidence
        if let evNode = f.node("evidence"), let ef = fields(evNode, path.key("evidence"), .evidence) {
            evidence = HeadersConfiguration.Evidence(
                keyID: name(ef, "key_id", defaults.evidence.keyID, family: true),
                challenge: name(ef, "challenge", defaults.evidence.challenge, family: true),
                assertion: name(ef, "assertion", defaults.evidence.assertion, family: true),
                clientData: name(ef, "client_data", defaults.evidence.clientData, family: true),
                signature: name(ef, "signature", defaults.evidence.signature, family: true))
        } else if f.has("evidence") { ok = false }
        // The names added with issue 12 follow the prefix when not written (`<prefix>Signal-Policy`,
        // `<prefix>Cohort`), so a configuration that renamed the family before keeps loading.
        var injected = defaults.injected
        injected.signalPolicy = prefix + "Signal-Policy"
        injected.cohort = prefix + "Cohort"
        let followed = injected
        if let inNode = f.node("injected"), let inf = fields(inNode, path.key("injected"), .injected) {
            injected = HeadersConfiguration.Injected(
                verdict: name(inf, "verdict", defaults.injected.verdict, family: true),
                reason: name(inf, "reason", defaults.injected.reason, family: true),
                keyID: name(inf, "key_id", defaults.injected.keyID, family: true),
                counter: name(inf, "counter", defaults.injected.counter, family: true),
                environment: name(inf, "environment", defaults.injected.environment, family: true),
                riskMetric: name(inf, "risk_metric", defaults.injected.riskMetric, family: true),
                validationCategory: name(inf, "validation_category", defaults.injected.validationCategory, family: true),
                bundleVersion: name(inf, "bundle_version", defaults.injected.bundleVersion, family: true),
                tier: name(inf, "tier", defaults.injected.tier, family: true),
                platformAttested: name(inf, "platform_attested", defaults.injected.platformAttested, family: true),
                integrity: name(inf, "integrity", defaults.injected.integrity, family: true),
                signalPolicy: name(inf, "signal_policy", followed.signalPolicy, family: true),
                cohort: name(inf, "cohort", followed.cohort, family: true))
            injected.riskAge = name(inf, "risk_age", defaults.injected.riskAge, family: true)
        } else if f.has("injected") { ok = false }
        let errorHeader = name(f, "error", defaults.error, family: false)
        if let errorNode = f.node("error"),
           Self.standardResponseHeaders.contains(errorHeader.lowercased()) || Self.essentialHeaders.contains(errorHeader.lowercased()) {
            error(path.key("error"), "\(errorHeader) is a standard header: the gateway drops every upstream copy of headers.error from every response (so that none passes for a refusal), which would lose the upstream's own \(errorHeader); name one of its own (App-Attest-Error, X-Gateway-Error)", errorNode.mark)
            ok = false
        }

        // A changed prefix must carry the (default) names along: names not written are checked too.
        let evidenceKeys = ConfigSchema.keys(.evidence), injectedKeys = ConfigSchema.keys(.injected)
        func check(_ names: [String], _ keys: [String], _ section: String) {
            var seen: [String: String] = [:]
            for (n, key) in zip(names, keys) {
                let p = path.key(section).key(key)
                if !(n.lowercased().hasPrefix(prefix.lowercased())) {
                    error(p, "\(n) (default) does not start with headers.prefix \(prefix): set headers.\(section).\(key) too", f.mark)
                    ok = false
                }
                if let other = seen[n.lowercased()] {
                    error(p, "\(n) is also headers.\(section).\(other)", f.mark(section))
                    ok = false
                }
                seen[n.lowercased()] = key
            }
        }
        if ok {
            check(evidence.all, evidenceKeys, "evidence")
            check(injected.all, injectedKeys, "injected")
            for (n, key) in zip(injected.all, injectedKeys) {
                if let i = evidence.all.firstIndex(where: { $0.lowercased() == n.lowercased() }), !(key == "key_id" && evidenceKeys[i] == "key_id") {
                    error(path.key("injected").key(key), "\(n) is also headers.evidence.\(evidenceKeys[i])", f.mark("injected"))
                    ok = false
                }
            }
        }
        return ok ? HeadersConfiguration(prefix: prefix, evidence: evidence, injected: injected, error: errorHeader) : nil
    }

    // MARK: upstreams

    func upstreams(_ root: Fields, marks: inout Marks) -> [UpstreamConfiguration]? {
        let path = root.path.key("upstreams")
        guard let node = root.node("upstreams") else {
            missing(root, "upstreams", " (e.g. upstreams: {app: http://127.0.0.1:8081})")
            return nil
        }
        guard case .mapping(let entries) = node.kind else {
            error(path, "expected a mapping of upstream names to URLs (legacy: http://127.0.0.1:8081), got \(node.kindDescription)", node.mark)
            return nil
        }
        if entries.isEmpty {
            error(path, "needs at least one upstream", node.mark)
            return nil
        }
        var result: [UpstreamConfiguration] = []
        var ok = true
        let connectRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(60)
        let responseRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(3600)
        marks.upstreamNames = entries.map(\.key)
        for entry in entries {
            let name = entry.key
            let p = path.key(name)
            guard name.utf8.count <= 64, !name.isEmpty, name.utf8.allSatisfy({ URISyntax.isUnreserved($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "~") }) else {
                error(p, "upstream names use letters, digits, _ and - (at most 64), got \(ConfigText.quoted(name))", entry.keyMark)
                ok = false
                continue
            }
            var upstream: UpstreamConfiguration?
            if case .mapping = entry.value.kind {
                guard let f = fields(entry.value, p, .upstream) else { ok = false; continue }
                let endpoints = upstreamEndpoints(f)
                let connect = optional(f, "connect_timeout", default: UpstreamConfiguration.defaultConnectTimeout) { duration($0, $1, connectRange) }
                let response = optional(f, "response_timeout", default: UpstreamConfiguration.defaultResponseTimeout) { duration($0, $1, responseRange) }
                let idle = optional(f, "max_idle_connections", default: UpstreamConfiguration.defaultMaxIdleConnections) { integer($0, $1, 0...4096) }
                let balance = optional(f, "balance", default: UpstreamConfiguration.Balance.roundRobin) { choice($0, $1, UpstreamConfiguration.Balance.self) }
                let ejection = optional(f, "ejection", default: UpstreamConfiguration.Ejection()) { self.upstreamEjection($0, $1) }
                let dnsRefresh = optional(f, "dns_refresh", default: UpstreamConfiguration.defaultDNSRefresh) { node, path -> Duration? in
                    guard let d = duration(node, path, .zero ... .seconds(3600)) else { return nil }
                    if d != .zero && d < .seconds(1) {
                        error(path, "expected 0 (resolve only while unresolved) or 1s to 1h, got \(DurationSyntax.format(d))", node.mark)
                        return nil
                    }
                    return d
                }
                let health: UpstreamConfiguration.HealthCheck?? = f.node("health_check").map { self.upstreamHealthCheck($0, p.key("health_check")).map { .some($0) } } ?? .some(nil)
                let tls = upstreamTLS(f, endpoint: endpoints?.first)
                if let endpoints, let connect, let response, let idle, let tls, let balance, let ejection, let dnsRefresh, let health {
                    upstream = UpstreamConfiguration(name: name, endpoint: endpoints[0], connectTimeout: connect, responseTimeout: response,
                                                     maxIdleConnections: idle, tls: tls, endpoints: endpoints, balance: balance,
                                                     ejection: ejection, dnsRefresh: dnsRefresh, healthCheck: health)
                    if endpoints.count == 1 {
                        for key in ["balance", "ejection"] where f.has(key) {
                            warn(p.key(key), "has no effect with a single endpoint", f.mark(key))
                        }
                    }
                    if dnsRefresh != UpstreamConfiguration.defaultDNSRefresh, upstream?.hostNames.isEmpty == true {
                        warn(p.key("dns_refresh"), "has no effect: no endpoint is a DNS name", f.mark("dns_refresh"))
                    }
                }
            } else if entry.value.isNull {
                error(p, "expected a URL (http://host:port, https://host:port or unix:/path) or a mapping {url, ...}, got null", entry.value.mark)
            } else if let endpoint = upstreamEndpoint(entry.value, p) {
                upstream = UpstreamConfiguration(name: name, endpoint: endpoint)
            }
            guard let upstream else { ok = false; continue }
            result.append(upstream)
            marks.validUpstreams.append(upstream)
            marks.upstreams[name] = entry.value.mark
        }
        return ok ? result : nil
    }

    /// `url` or `endpoints` (exactly one): 1..64 URLs of one scheme, none twice.
    private func upstreamEndpoints(_ f: Fields) -> [UpstreamEndpoint]? {
        let p = f.path
        switch (f.node("url"), f.node("endpoints")) {
        case (nil, nil):
            missing(f, "url", " (http://host:port, https://host:port or unix:/path; or endpoints: [URL, ...])")
            return nil
        case (.some, .some):
            error(p.key("endpoints"), "write either url or endpoints, not both (endpoints: [URL, ...] lists every endpoint)", f.mark("endpoints"))
            return nil
        case (let url?, nil):
            return upstreamEndpoint(url, p.key("url")).map { [$0] }
        case (nil, let node?):
            let path = p.key("endpoints")
            guard let items = list(node, path, of: "upstream URLs") else { return nil }
            guard (1...64).contains(items.count) else {
                error(path, "expected 1 to 64 endpoints, got \(items.count)", node.mark)
                return nil
            }
            var result: [UpstreamEndpoint] = []
            var ok = true
            for (i, item) in items.enumerated() {
                guard let e = upstreamEndpoint(item, path.index(i)) else { ok = false; continue }
                if result.contains(e) {
                    error(path.index(i), "\(e) is listed twice", item.mark)
                    ok = false
                    continue
                }
                if let first = result.first, Self.scheme(first) != Self.scheme(e) {
                    error(path.index(i), "every endpoint of an upstream uses one scheme: \(e) is not \(Self.scheme(first))", item.mark)
                    ok = false
                    continue
                }
                result.append(e)
            }
            return ok ? result : nil
        }
    }

    private static func scheme(_ e: UpstreamEndpoint) -> String {
        switch e {
        case .http: return "http://"
        case .https: return "https://"
        case .unix: return "unix:"
        }
    }

    /// `ejection: {consecutive_errors, base_time, max_time}`.
    private func upstreamEjection(_ node: YAMLNode, _ path: ConfigPath) -> UpstreamConfiguration.Ejection? {
        guard let f = fields(node, path, .upstreamEjection, what: "a mapping {consecutive_errors, base_time, max_time}") else { return nil }
        let d = UpstreamConfiguration.Ejection()
        let errors = optional(f, "consecutive_errors", default: d.consecutiveErrors) { integer($0, $1, 0...1000) }
        let base = optional(f, "base_time", default: d.baseTime) { duration($0, $1, .milliseconds(100) ... .seconds(3600)) }
        let maxTime = optional(f, "max_time", default: d.maxTime) { duration($0, $1, .milliseconds(100) ... .seconds(86400)) }
        guard let errors, let base, let maxTime else { return nil }
        guard maxTime >= base else {
            error(path.key("max_time"), "must be at least base_time (\(DurationSyntax.format(base)))", f.has("max_time") ? f.mark("max_time") : node.mark)
            return nil
        }
        return UpstreamConfiguration.Ejection(consecutiveErrors: errors, baseTime: base, maxTime: maxTime)
    }

    /// `health_check: {path, interval, timeout, healthy_threshold, unhealthy_threshold}`.
    private func upstreamHealthCheck(_ node: YAMLNode, _ path: ConfigPath) -> UpstreamConfiguration.HealthCheck? {
        guard let f = fields(node, path, .upstreamHealthCheck, what: "a mapping {path, interval, timeout, healthy_threshold, unhealthy_threshold}") else { return nil }
        let d = UpstreamConfiguration.HealthCheck()
        let checkPath = optional(f, "path", default: d.path) { node, p -> String? in
            guard let text = string(node, p, expected: "an absolute path like /healthz") else { return nil }
            if let problem = PathSyntax.problem(text) {
                error(p, problem, node.mark)
                return nil
            }
            return text
        }
        let interval = optional(f, "interval", default: d.interval) { duration($0, $1, .milliseconds(100) ... .seconds(3600)) }
        let timeout = optional(f, "timeout", default: d.timeout) { duration($0, $1, .milliseconds(10) ... .seconds(60)) }
        let healthy = optional(f, "healthy_threshold", default: d.healthyThreshold) { integer($0, $1, 1...100) }
        let unhealthy = optional(f, "unhealthy_threshold", default: d.unhealthyThreshold) { integer($0, $1, 1...100) }
        guard let checkPath, let interval, let timeout, let healthy, let unhealthy else { return nil }
        if timeout > interval {
            error(path.key("timeout"), "must not exceed interval (\(DurationSyntax.format(interval)))", f.has("timeout") ? f.mark("timeout") : node.mark)
            return nil
        }
        return UpstreamConfiguration.HealthCheck(path: checkPath, interval: interval, timeout: timeout,
                                                 healthyThreshold: healthy, unhealthyThreshold: unhealthy)
    }

    private func upstreamEndpoint(_ node: YAMLNode, _ path: ConfigPath) -> UpstreamEndpoint? {
        guard let text = string(node, path, expected: "a URL (http://host:port, https://host:port or unix:/path) or a mapping {url, ...}") else { return nil }
        switch UpstreamEndpoint.parse(text, baseDirectory: baseDirectory) {
        case .success(let e): return e
        case .failure(let e): error(path, e.message, node.mark); return nil
        }
    }

    // MARK: limits, timeouts, log

    func limits(_ root: Fields) -> LimitsConfiguration? {
        guard let node = root.node("limits") else { return LimitsConfiguration() }
        guard let f = fields(node, root.path.key("limits"), .limits) else { return nil }
        let headerBytes = optional(f, "max_header_bytes", default: LimitsConfiguration.defaultMaxHeaderBytes) { size($0, $1, 1024...(1 << 20)) }
        let headers = optional(f, "max_headers", default: LimitsConfiguration.defaultMaxHeaders) { integer($0, $1, 1...1000) }
        let connections = optional(f, "max_connections", default: LimitsConfiguration.defaultMaxConnections) { integer($0, $1, 1...1_000_000) }
        guard let headerBytes, let headers, let connections else { return nil }
        return LimitsConfiguration(maxHeaderBytes: headerBytes, maxHeaders: headers, maxConnections: connections)
    }

    func timeouts(_ root: Fields) -> TimeoutsConfiguration? {
        guard let node = root.node("timeouts") else { return TimeoutsConfiguration() }
        guard let f = fields(node, root.path.key("timeouts"), .timeouts) else { return nil }
        let d = TimeoutsConfiguration()
        let header = optional(f, "header", default: d.header) { duration($0, $1, .milliseconds(100) ... .seconds(300)) }
        let body = optional(f, "body", default: d.body) { duration($0, $1, .milliseconds(100) ... .seconds(3600)) }
        let idle = optional(f, "idle", default: d.idle) { duration($0, $1, .seconds(1) ... .seconds(3600)) }
        let drain = optional(f, "drain", default: d.drain) { duration($0, $1, .zero ... .seconds(600)) }
        let handshake = optional(f, "tls_handshake", default: d.tlsHandshake) { duration($0, $1, .milliseconds(100) ... .seconds(300)) }
        guard let header, let body, let idle, let drain, let handshake else { return nil }
        return TimeoutsConfiguration(header: header, body: body, idle: idle, drain: drain, tlsHandshake: handshake)
    }

    func log(_ root: Fields) -> LogConfiguration? {
        guard let node = root.node("log") else { return LogConfiguration() }
        guard let f = fields(node, root.path.key("log"), .log) else { return nil }
        let access = optional(f, "access", default: true) { boolean($0, $1) }
        var format: LogConfiguration.Format? = .json
        if let formatNode = f.node("format") {
            let p = f.path.key("format")
            if case .scalar(let s) = formatNode.kind, s.text == "text" {
                error(p, "the text format is not supported yet: json is the only format", formatNode.mark)
                format = nil
            } else {
                format = choice(formatNode, p, LogConfiguration.Format.self)
            }
        }
        let level = optional(f, "level", default: LogConfiguration.Level.info) { choice($0, $1, LogConfiguration.Level.self) }
        guard let access, let format, let level else { return nil }
        return LogConfiguration(access: access, format: format, level: level)
    }
}
