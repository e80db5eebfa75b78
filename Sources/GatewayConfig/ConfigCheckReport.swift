import Foundation
import GatewayRules
/// What `attest-gateway check-config FILE` prints and its exit status, ready to write out as is.
///
/// Exit 0: the configuration loads; warnings (if any) go to standard error as `warning: ...` lines and
/// a summary of listeners, store, apps and the route table (in match order) to standard output.
/// Exit 1: it does not; every error goes to standard error as `error: path: message (line L, column C)`,
/// followed by the warnings found on the way.
///
/// The TLS files the configuration names (certificates, CA bundles) are not opened by `GatewayConfig`;
/// `check(path:checkFiles:)` takes the checker that opens them and reports its findings at the key
/// paths that named the files.
public struct ConfigCheckReport: Sendable {
    /// 0 when the configuration loads, 1 when it does not.
    public var exitCode: Int32
    /// Summary for standard output (empty on failure).
    public var standardOutput: String
    /// Errors and warnings for standard error, one per line.
    public var standardError: String

    /// Loads the file at `path` and reports.
    ///
    /// - Parameter checkFiles: called once per entry of `LoadedConfiguration.tlsFiles` when the file
    ///   loads (never for a configuration with errors); returns the problems found in those files,
    ///   built with `TLSFileReference.issue(_:_:)` so that they carry the entry's key path and position.
    ///   An error among them makes the report fail (exit 1) like a configuration error; warnings are
    ///   printed with the others. Default: no file checks.
    /// - Parameter resolveHost: called once per DNS name among the upstreams' endpoints when the file
    ///   loads; returns nil when the name resolves now, else why not. A name that does not resolve is
    ///   a **warning** (as the running gateway treats it: it starts, answers `503 upstream_unresolved`
    ///   for that upstream while no endpoint resolves, and keeps resolving in the background), never
    ///   an error. Default: names are not resolved.
    /// - Parameter environment: where `${NAME}` values come from (the process environment by default).
    public static func check(path: String, checkFiles: (TLSFileReference) -> [ConfigIssue] = { _ in [] },
                             resolveHost: ((String) -> String?)? = nil,
                             environment: [String: String] = ProcessInfo.processInfo.environment) -> ConfigCheckReport {
        switch validate(path: path, checkFiles: checkFiles, resolveHost: resolveHost, environment: environment) {
        case .success(let loaded): return ConfigCheckReport(loaded: loaded)
        case .failure(let error):
            // The file named as the OK line names it (`LoadedConfiguration.sourcePath`: absolute).
            let shown = NetworkSyntax.resolvePath(path, baseDirectory: FileManager.default.currentDirectoryPath)
            return ConfigCheckReport(error: error, source: shown)
        }
    }

    /// The check behind `check(path:checkFiles:resolveHost:environment:)`, for callers that want the
    /// configuration rather than the text (the gateway's reload on SIGHUP runs exactly this): the
    /// loaded configuration with the files' warnings merged into its warnings, or every error
    /// (configuration and files) with its key path.
    public static func validate(path: String, checkFiles: (TLSFileReference) -> [ConfigIssue] = { _ in [] },
                                resolveHost: ((String) -> String?)? = nil,
                                environment: [String: String] = ProcessInfo.processInfo.environment)
        -> Result<LoadedConfiguration, ConfigError> {
        let loaded: LoadedConfiguration
        do {
            loaded = try GatewayConfiguration.load(path: path, environment: environment)
        } catch {
            return .failure(error)
        }
        var fileIssues = loaded.tlsFiles.flatMap(checkFiles)
        if let resolveHost {
            for upstream in loaded.configuration.upstreams {
                for host in upstream.hostNames {
                    guard let problem = resolveHost(host) else { continue }
                    fileIssues.append(ConfigIssue(
                        severity: .warning, path: "upstreams.\(upstream.name)",
                        message: "\(host) does not resolve now (\(problem)); the gateway starts anyway, keeps resolving it in the background and, while no endpoint of this upstream has an address, answers 503 upstream_unresolved",
                        mark: nil))
                }
            }
        }
        let errors = fileIssues.filter { $0.severity == .error }
        let warnings = loaded.warnings + fileIssues.filter { $0.severity == .warning }
        guard errors.isEmpty else {
            return .failure(ConfigError(issues: errors, warnings: warnings))
        }
        var withWarnings = loaded
        withWarnings.warnings = ConfigIssue.sortedByPosition(warnings)
        return .success(withWarnings)
    }

    /// The report of a configuration that loaded.
    public init(loaded: LoadedConfiguration) {
        let c = loaded.configuration
        exitCode = 0
        standardError = ConfigRedaction.apply(loaded.redactions, to: loaded.warnings.map { "warning: \($0)\n" }.joined())
        var out = "\(loaded.sourcePath ?? "configuration"): OK"
        if !loaded.warnings.isEmpty { out += " (\(ConfigText.plural(loaded.warnings.count, "warning")))" }
        out += "\n"
        out += "listen     \(c.listen.map(\.description).joined(separator: ", "))\n"
        for (i, listener) in c.listen.enumerated() {
            guard let tls = listener.tls else { continue }
            let certificates = tls.certificates.enumerated().map { j, pair in
                "\(pair.chain) + \(pair.key)" + (j == 0 ? " (default)" : "")
            }
            out += "tls        listen[\(i)]: \(certificates.joined(separator: ", "))\n"
        }
        out += "admin      \(c.admin?.description ?? "none")" + (c.admin != nil && c.readyRequiresStore ? " (readiness requires the store)" : "") + "\n"
        if !c.trustedProxies.isEmpty {
            out += "proxies    \(c.trustedProxies.networks.map(\.description).joined(separator: ", ")) (X-Forwarded-For and -Proto believed)\n"
        }
        out += "store      \(c.store)\n"
        out += "apps       \(c.apps.map { "\($0.appID) (\($0.environment.rawValue)\($0.lifecycleSummary))" }.joined(separator: ", "))\n"
        if !c.trust.extraRoots.isEmpty {
            out += "trust      TEST ROOTS: \(c.trust.extraRoots.joined(separator: ", "))\n"
        }
        for app in c.apps { if let s = app.signals { out += "signals    \(app.appID): \(Self.summary(s))\n" } }
        out += "endpoints  \(c.endpoints.prefix)/{challenge,attest,register,renew,forget} (served before routes; challenge ttl \(DurationSyntax.format(c.endpoints.challengeTTL)), \(c.endpoints.challengeBytes) bytes\(c.endpoints.nextChallenge ? "" : "; next_challenge off")\(c.endpoints.fleetAttestRate.map { "; fleet attest rate \($0.count) per \(DurationSyntax.format($0.per))" } ?? ""))\n"
        out += "upstreams  \(c.upstreams.map { "\($0.name) = \(Self.endpoints($0))" + Self.summary($0.tls) }.joined(separator: ", "))\n"
        out += "routes (first match wins):\n"
        let shadowed = Set(loaded.routeTable.shadowedRoutes().map(\.route))
        for (i, r) in c.routes.enumerated() {
            let methods = r.methods.isEmpty ? "*" : r.methods.joined(separator: ",")
            var line = "  [\(i)] \(r.name): \(methods) \(r.match) -> \(r.upstream), \(r.mode.rawValue)"
            if r.mode != .off {
                line += ", max_body \(ByteSize.format(r.maxBody)), \(r.onStoreError.rawValue)"
                if r.minTier != .attested { line += ", min_tier \(r.minTier.rawValue)" }
                if r.counterWindow > 0 { line += ", counter_window \(r.counterWindow)" }
                if let e = r.environment { line += ", \(e.rawValue) only" }
                if !r.bindHeaders.isEmpty { line += ", binds \(r.bindHeaders.joined(separator: ","))" }
                if let apps = r.apps { line += ", apps \(apps.map(\.description).joined(separator: ","))" }
                if let p = r.enforcePercent { line += ", enforce_percent \(p) (missing evidence: \(r.missingEvidence.rawValue))" }
                if let s = r.signals { line += ", signals \(Self.summary(s))" }
            } else {
                line += ", max_body \(ByteSize.format(r.maxBody))"
            }
            if let t = r.connectTimeout { line += ", connect_timeout \(DurationSyntax.format(t))" }
            if let t = r.responseTimeout { line += ", response_timeout \(DurationSyntax.format(t))" }
            if shadowed.contains(i) { line += "  (NEVER MATCHES)" }
            out += line + "\n"
        }
        standardOutput = ConfigRedaction.apply(loaded.redactions, to: out)
    }

    /// `bundle_version >= 2.3 enforce, validation_category in {01000000} monitor`.
    private static func summary(_ s: SignalPolicy) -> String {
        var parts: [String] = []
        if let v = s.bundleVersion { parts.append("bundle_version >= \(v.minimum) \(v.action.rawValue)") }
        if let c = s.validationCategory {
            let digits = Array("0123456789abcdef")
            let hex = c.allowed.map { bytes in String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }) }
            parts.append("validation_category in {\(hex.joined(separator: ","))} \(c.action.rawValue)")
        }
        return parts.joined(separator: ", ")
    }

    /// `URL`, or `[URL, URL] round_robin` (plus `, health GET /path`) for several endpoints.
    private static func endpoints(_ u: UpstreamConfiguration) -> String {
        var text = u.endpoints.count == 1 ? "\(u.endpoint)" : "[\(u.endpoints.map(\.description).joined(separator: ", "))] \(u.balance.rawValue)"
        if let h = u.healthCheck { text += ", health GET \(h.path) every \(DurationSyntax.format(h.interval))" }
        return text
    }

    /// ` (ca FILE, name NAME)` / ` (system CAs, NO VERIFICATION)` for an https upstream, else empty.
    private static func summary(_ tls: UpstreamTLSConfiguration?) -> String {
        guard let tls else { return "" }
        guard tls.verify else { return " (NO VERIFICATION, name \(tls.serverName))" }
        return " (\(tls.ca.map { "ca \($0)" } ?? "system CAs"), name \(tls.serverName))"
    }

    /// The report of a configuration that did not load.
    public init(error: ConfigError, source: String) {
        exitCode = 1
        standardOutput = ""
        var err = error.issues.map { "error: \($0)\n" }.joined()
        err += error.warnings.map { "warning: \($0)\n" }.joined()
        err += "\(source): invalid (\(ConfigText.plural(error.issues.count, "error")))\n"
        standardError = err
    }
}
