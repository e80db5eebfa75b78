import GatewayIO

/// Whether an upstream's DNS name resolves now, the way the gateway resolves it (getaddrinfo, TCP,
/// any family): plugs into `ConfigCheckReport.check(path:checkFiles:resolveHost:)` so that
/// `check-config` and the running gateway agree on names that do not resolve (a warning, never an
/// error). Blocking: for `check-config` and start-up, never on an event loop.
public enum UpstreamHostChecker {
    /// nil when `host` resolves to at least one address now, else the resolver's reason.
    public static func problem(resolving host: String) -> String? {
        do {
            _ = try SocketAddress.resolveAll(host: host, port: 80)
            return nil
        } catch let failure as SocketAddress.Failure {
            if case .resolution(_, let message) = failure { return message }
            return "\(failure)"
        } catch {
            return "\(error)"
        }
    }
}
