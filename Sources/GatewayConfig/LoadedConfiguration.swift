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

    /// Creates a loaded configuration.
    public init(configuration: GatewayConfiguration, routeTable: RouteTable, warnings: [ConfigIssue], sourcePath: String?) {
        self.configuration = configuration
        self.routeTable = routeTable
        self.warnings = warnings
        self.sourcePath = sourcePath
    }
}
