import Foundation
import GatewayRules

/// `apps[].risk`, the routes' `max_risk_metric` / `risk_action` and `trust.extra_receipt_roots`
/// (issue 12, fraud-metric receipts).
extension ConfigValidator {
    /// `apps[].risk`: nil when absent (`.some(nil)`), nil on errors.
    func risk(_ app: Fields, _ appPath: ConfigPath) -> RiskConfiguration?? {
        guard let node = app.node("risk") else { return .some(nil) }
        let path = appPath.key("risk")
        guard let f = fields(node, path, .risk, what: "a mapping {team_id, key_id, private_key_file, data_server}") else { return nil }
        var ok = true
        func identifier(_ key: String, _ what: String) -> String? {
            guard let n = f.node(key) else { missing(f, key, " (\(what))"); ok = false; return nil }
            guard let text = string(n, path.key(key)) else { ok = false; return nil }
            guard AppID.isTeamID(text) else {
                error(path.key(key), "expected \(what): 10 upper-case letters or digits, got \(ConfigText.quoted(text))", n.mark)
                ok = false
                return nil
            }
            return text
        }
        let team = identifier("team_id", "the team ID of the DeviceCheck key")
        let keyID = identifier("key_id", "the DeviceCheck key's ID")
        var keyFile: String?
        if let n = f.node("private_key_file") {
            if let text = string(n, path.key("private_key_file"), expected: "the path of the .p8 file") {
                let resolved = NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
                if let contents = try? String(contentsOfFile: resolved, encoding: .utf8) {
                    if contents.contains("-----BEGIN PRIVATE KEY-----") {
                        keyFile = resolved
                        tlsFiles.append(TLSFileReference(path: path.key("private_key_file").description, mark: n.mark,
                                                         files: .deviceCheckKey(resolved)))
                    } else {
                        error(path.key("private_key_file"), "\(resolved) is not a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----, as Apple's .p8 files)", n.mark)
                    }
                } else {
                    error(path.key("private_key_file"), "cannot read \(resolved)", n.mark)
                }
            }
            if keyFile == nil { ok = false }
        } else {
            missing(f, "private_key_file", " (the DeviceCheck .p8 key file)")
            ok = false
        }
        var ca: String?
        if let n = f.node("data_server_ca") {
            if let text = string(n, path.key("data_server_ca"), expected: "a PEM file path") {
                let resolved = NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
                if let contents = try? String(contentsOfFile: resolved, encoding: .utf8), contents.contains("-----BEGIN CERTIFICATE-----") {
                    ca = resolved
                    tlsFiles.append(TLSFileReference(path: path.key("data_server_ca").description, mark: n.mark,
                                                     files: .certificateAuthorities(resolved)))
                } else {
                    error(path.key("data_server_ca"), "cannot read a PEM certificate from \(resolved)", n.mark)
                }
            }
            if ca == nil { ok = false }
        }
        var server: RiskConfiguration.DataServer? = .production
        if let n = f.node("data_server"), let text = string(n, path.key("data_server"), expected: "production, development or https://host:port") {
            switch text {
            case "production": server = .production
            case "development": server = .development
            default:
                if case .success(.https(let host, let port)) = UpstreamEndpoint.parse(text, baseDirectory: baseDirectory) {
                    server = .url(host: host, port: port, ca: ca)
                    warn(path.key("data_server"), "\(text) stands in for Apple's data server: for tests only", n.mark)
                } else {
                    error(path.key("data_server"), "expected production, development or https://host:port, got \(ConfigText.quoted(text))", n.mark)
                    server = nil
                }
            }
        } else if f.node("data_server") != nil {
            server = nil
        }
        if server == nil { ok = false }
        if ca != nil, let server, case .url = server {} else if ca != nil {
            error(path.key("data_server_ca"), "only used with a data_server URL (Apple's servers are checked against the system store)", f.mark("data_server_ca"))
            ok = false
        }
        let rate = optional(f, "max_calls_per_second", default: RiskConfiguration.defaultMaxCallsPerSecond) { n, p in
            integer(n, p, 1...1000).map(Double.init)
        }
        guard ok, let team, let keyID, let keyFile, let server, let rate else { return nil }
        return .some(RiskConfiguration(teamID: team, keyID: keyID, privateKeyFile: keyFile, dataServer: server, maxCallsPerSecond: rate))
    }

    /// A route's `max_risk_metric` and `risk_action`: `.some(nil)` when absent, nil on errors.
    func routeRisk(_ f: Fields, _ p: ConfigPath) -> RouteRiskPolicy?? {
        let action = optional(f, "risk_action", default: RiskAction.monitor) { choice($0, $1, RiskAction.self) }
        guard let n = f.node("max_risk_metric") else {
            if f.has("risk_action") { error(p.key("risk_action"), "has no effect without max_risk_metric", f.mark("risk_action")); return nil }
            return .some(nil)
        }
        guard let maximum = integer(n, p.key("max_risk_metric"), 0...1_000_000), let action else { return nil }
        return .some(RouteRiskPolicy(maxMetric: maximum, action: action))
    }

    /// `trust.extra_receipt_roots`: PEM files of test receipt roots (simulator receipts); nil on errors.
    func extraReceiptRoots(_ f: Fields, _ path: ConfigPath) -> [String]? {
        guard let node = f.node("extra_receipt_roots") else { return [] }
        let rootsPath = path.key("extra_receipt_roots")
        guard let items = list(node, rootsPath, of: "PEM file paths") else { return nil }
        var roots: [String] = []
        for (i, item) in items.enumerated() {
            let itemPath = rootsPath.index(i)
            guard let text = string(item, itemPath, expected: "a PEM file path") else { return nil }
            let resolved = NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
            guard let contents = try? String(contentsOfFile: resolved, encoding: .utf8), contents.contains("-----BEGIN CERTIFICATE-----") else {
                error(itemPath, "cannot read a PEM certificate from \(resolved)", item.mark)
                return nil
            }
            roots.append(resolved)
            tlsFiles.append(TLSFileReference(path: itemPath.description, mark: item.mark, files: .trustRoots(resolved)))
            warn(itemPath, "TEST ONLY: receipts signed under \(resolved) are accepted like Apple's; never deploy this to production", item.mark)
        }
        return roots
    }
}
