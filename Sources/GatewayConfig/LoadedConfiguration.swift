/// A configuration that loaded: the validated values, the compiled route table and the warnings an
/// operator should read (check-config prints them; the gateway logs them at startup).
public struct LoadedConfiguration: Sendable {
    /// The validated configuration.
    public var configuration: GatewayConfiguration
    /// `configuration.routes` compiled for per-request matching.
    public var routeTable: RouteTable
    /// Warnings in document order (shadowed routes, test-only trust roots, memory store, ...).
    public var warnings: [ConfigIssue]
    /// Absolute path of the file it came from (nil when parsed from text).
    public var sourcePath: String?
    /// Every TLS file the configuration names (listener certificates, upstream CA bundles), in
    /// document order, each with the key path and position that named it. Not opened while loading:
    /// the caller checks them (check-config through `ConfigCheckReport.check(path:checkFiles:)`, the
    /// gateway when it builds its TLS contexts) and reports problems at these paths.
    public var tlsFiles: [TLSFileReference]
    /// Values expanded from `${NAME}`: hidden in anything printed about this configuration.
    var redactions: [ConfigRedaction] = []

    /// Creates a loaded configuration.
    public init(configuration: GatewayConfiguration, routeTable: RouteTable, warnings: [ConfigIssue], sourcePath: String?,
                tlsFiles: [TLSFileReference] = []) {
        self.configuration = configuration
        self.routeTable = routeTable
        self.warnings = warnings
        self.sourcePath = sourcePath
        self.tlsFiles = tlsFiles
    }
}
