import GatewayConfig
import GatewayHTTP

/// One upstream pool as the route tables hold it: shared by every generation of tables
/// (`GatewayTables`) whose configuration of that upstream is unchanged, and shut down when the last
/// of them goes away, i.e. once no request that may still forward to it is in flight (a reload that
/// changes or removes an upstream retires its pool this way; exchanges in progress finish first).
final class UpstreamPoolLease: Sendable {
    /// The upstream as configured (`upstreams.NAME`): a reload reuses the pool when it is equal.
    let configuration: GatewayConfig.UpstreamConfiguration
    /// The pool requests are forwarded to.
    let pool: UpstreamPool

    init(configuration: GatewayConfig.UpstreamConfiguration, pool: UpstreamPool) {
        self.configuration = configuration
        self.pool = pool
    }

    /// Whether a reload with `other` for this upstream can keep this pool: the same settings and no
    /// TLS (an `https://` upstream gets a new pool on every reload, so that its CA bundle is read
    /// again, as listener certificates are).
    func canServe(_ other: GatewayConfig.UpstreamConfiguration) -> Bool {
        configuration == other && configuration.tls == nil
    }

    deinit { pool.shutdown() }
}
