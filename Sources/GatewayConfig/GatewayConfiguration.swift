import Foundation
import GatewayRules

/// The validated gateway configuration: plain values that the `Gateway` module turns into listeners,
/// a store, upstream pools and a route table. Section by section it mirrors the YAML keys documented
/// in Config/REFERENCE.md (DESIGN.md sections 1, 2, 4 and 5).
///
/// Obtain one with `load(path:)` or `parse(yaml:baseDirectory:)`; both run the three layers
/// (YAML -> raw tree -> validated configuration -> compiled `RouteTable`) and either return everything
/// or throw a `ConfigError` listing every problem with its key path, line and column.
public struct GatewayConfiguration: Sendable, Hashable {
    /// Downstream listeners, in the order written (`listen`: one listener or a list of 1 to 16; each
    /// a plain address or a mapping `{address, tls}`; no two addresses overlap).
    public var listen: [ListenerConfiguration]
    /// Admin listener for `/healthz` and `/readyz` (`admin`; nil: none).
    public var admin: SocketAddress?
    /// `admin.ready_requires_store` (default false): `/readyz` answers 503 unless every event loop's
    /// store connection works. By default readiness ignores the store (routes in mode `off`, `monitor`
    /// and `fail_open` still serve during an outage) and reports its state in the body.
    public var readyRequiresStore: Bool = false
    /// Peers whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed (`trusted_proxies`; default none).
    public var trustedProxies: TrustedProxies
    /// State store (`store`; default memory).
    public var store: StoreConfiguration
    /// Apps whose keys may attest (`apps`; at least one, no duplicates).
    public var apps: [AppConfiguration]
    /// Extra trust anchors (`trust`).
    public var trust: TrustConfiguration
    /// The gateway's own endpoints (`endpoints`).
    public var endpoints: EndpointsConfiguration
    /// The gateway's header family (`headers`).
    public var headers: HeadersConfiguration
    /// Upstreams, in the order written (`upstreams`; at least one; names unique).
    public var upstreams: [UpstreamConfiguration]
    /// Routes in match order (`routes`; at least one).
    public var routes: [RouteConfiguration]
    /// Downstream protocol limits (`limits`).
    public var limits: LimitsConfiguration
    /// HTTP/2 settings announced to downstream clients (`http2`).
    public var http2: HTTP2Configuration
    /// Downstream timeouts (`timeouts`).
    public var timeouts: TimeoutsConfiguration
    /// Logging (`log`).
    public var log: LogConfiguration
    /// Signed verdicts (`verdict_token`; nil: none, the default). Apps may have their own.
    public var verdictToken: VerdictTokenConfiguration?

    /// Creates a configuration from parts (tests, tools). No validation happens here: configurations
    /// from files come from `load(path:)` / `parse(yaml:baseDirectory:)`.
    public init(listen: [ListenerConfiguration], admin: SocketAddress? = nil, trustedProxies: TrustedProxies = TrustedProxies(),
                store: StoreConfiguration = .memory,
                apps: [AppConfiguration], trust: TrustConfiguration = TrustConfiguration(),
                endpoints: EndpointsConfiguration = EndpointsConfiguration(), headers: HeadersConfiguration = HeadersConfiguration(),
                upstreams: [UpstreamConfiguration], routes: [RouteConfiguration], limits: LimitsConfiguration = LimitsConfiguration(),
                http2: HTTP2Configuration = HTTP2Configuration(), timeouts: TimeoutsConfiguration = TimeoutsConfiguration(), log: LogConfiguration = LogConfiguration()) {
        self.listen = listen
        self.admin = admin
        self.trustedProxies = trustedProxies
        self.store = store
        self.apps = apps
        self.trust = trust
        self.endpoints = endpoints
        self.headers = headers
        self.upstreams = upstreams
        self.routes = routes
        self.limits = limits
        self.http2 = http2
        self.timeouts = timeouts
        self.log = log
    }

    /// The upstream called `name`, or nil.
    public func upstream(named name: String) -> UpstreamConfiguration? {
        upstreams.first { $0.name == name }
    }

    /// The app entry for `appID`, or nil when the app is not configured.
    public func app(_ appID: AppID) -> AppConfiguration? {
        apps.first { $0.appID == appID }
    }

    /// The listeners' addresses, in order (plain and TLS alike).
    public var listenAddresses: [SocketAddress] { listen.map(\.address) }

    /// Reads, validates and compiles the configuration file at `path`. Relative paths inside it
    /// (extra roots, certificates, CA bundles, Unix sockets, password files) resolve against the
    /// file's folder. `${NAME}` in values expands from `environment` (`EnvironmentExpansion`).
    ///
    /// - Throws: `ConfigError` with every problem found (file unreadable or larger than 1MiB, YAML
    ///   errors, unset variables, schema and consistency errors), each with key path, line and column.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> LoadedConfiguration {
        let absolute = NetworkSyntax.resolvePath(path, baseDirectory: FileManager.default.currentDirectoryPath)
        let bytes: [UInt8]
        do {
            bytes = try readFile(absolute)
        } catch {
            throw ConfigError(issues: [ConfigIssue(severity: .error, path: "", message: error.message, mark: nil)])
        }
        let directory = (absolute as NSString).deletingLastPathComponent
        var loaded = try parse(bytes: bytes, baseDirectory: directory.isEmpty ? "/" : directory, environment: environment)
        loaded.sourcePath = absolute
        return loaded
    }

    /// Validates and compiles configuration text. Relative paths inside it resolve against
    /// `baseDirectory` (an absolute folder; a relative one is taken from the current directory).
    ///
    /// - Throws: `ConfigError` with every problem found.
    public static func parse(yaml: String, baseDirectory: String,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> LoadedConfiguration {
        try parse(bytes: Array(yaml.utf8), baseDirectory: baseDirectory, environment: environment)
    }

    /// `parse(yaml:baseDirectory:environment:)` on raw bytes, which must be UTF-8.
    public static func parse(bytes: [UInt8], baseDirectory: String,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> LoadedConfiguration {
        let base = NetworkSyntax.resolvePath(baseDirectory, baseDirectory: FileManager.default.currentDirectoryPath)
        // Every problem at once (REFERENCE.md): a YAML problem the reader stepped over (a duplicate
        // key, an alias, a tag) and an unset variable do not stop validation; the validator's own
        // errors at or under a path already reported are left out, since they would only restate it
        // (an unset `${HOST}` is also "not host:port").
        let (read, yamlIssues) = YAMLReader.readRecovering(bytes)
        guard let parsed = read else { throw ConfigError(issues: yamlIssues) }
        var expansion = EnvironmentExpansion(environment: environment)
        let root = expansion.expand(parsed)
        let earlier = yamlIssues + expansion.issues
        let validator = ConfigValidator(baseDirectory: base, redactions: expansion.redactions)
        let configuration = validator.validate(root)
        if !earlier.isEmpty {
            let later = validator.errors.filter { error in !earlier.contains { ConfigIssue.path(error.path, isWithin: $0.path) } }
            throw ConfigError(issues: earlier + later, warnings: validator.warnings)
        }
        guard validator.errors.isEmpty, let configuration else {
            throw ConfigError(issues: validator.errors, warnings: validator.warnings)
        }
        var loaded = LoadedConfiguration(configuration: configuration, routeTable: RouteTable(routes: configuration.routes),
                                         warnings: ConfigIssue.sortedByPosition(validator.warnings), sourcePath: nil,
                                         tlsFiles: validator.tlsFiles)
        loaded.redactions = expansion.redactions
        return loaded
    }

    /// The file's bytes, refusing anything larger than `YAMLReader.maximumBytes`.
    private static func readFile(_ path: String) throws(ConfigSyntaxError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigSyntaxError("cannot read \(path): no such file")
        }
        if isDirectory.boolValue { throw ConfigSyntaxError("cannot read \(path): it is a folder") }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigSyntaxError("cannot read \(path): permission denied")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: YAMLReader.maximumBytes + 1) ?? Data()
        } catch {
            throw ConfigSyntaxError("cannot read \(path): \(error.localizedDescription)")
        }
        if data.count > YAMLReader.maximumBytes {
            throw ConfigSyntaxError("\(path) is larger than \(YAMLReader.maximumBytes) bytes (1MiB)")
        }
        return [UInt8](data)
    }
}
