import GatewayConfig

/// The settings a reload (SIGHUP) cannot apply to a running gateway, and how to name them: what the
/// listening sockets, the store connections and the server's connection machinery were built with.
///
/// | key paths | why |
/// |---|---|
/// | `listen` (count), `listen[N].address`, `listen[N].tls` (added or removed), `listen[N].proxy_protocol` | bound sockets and their accept path; a TLS listener's certificates and `min_version` do reload |
/// | `admin`, `admin.ready_requires_store` | a bound socket, and its handler's readiness rule |
/// | `apps[N].risk`, `trust.extra_receipt_roots` | the receipt refresher (keys, TLS contexts, receipt roots) is built at start |
/// | `store` (`store.url`, `store.command_timeout`, `store.connect_timeout`, any other store key) | store connections live in the event loops |
/// | `limits.max_header_bytes`, `limits.max_headers`, `limits.max_connections` | every connection's parser and the accept gate |
/// | `http2.*` | announced in each connection's SETTINGS |
/// | `timeouts.header`, `timeouts.body`, `timeouts.idle`, `timeouts.tls_handshake` | every connection's timers |
/// | `log.format` | (one format today) |
///
/// Everything else reloads: routes, upstreams (a changed or removed upstream gets a new pool, the
/// old one closes when its last request is done), apps, trust roots (files read again), endpoints,
/// headers, trusted proxies, `timeouts.drain`, `log.access`, `log.level`, and the TLS certificate
/// files of every listener.
enum RestartOnlySettings {
    /// The restart-only key paths whose values differ between the running configuration `started`
    /// and `new`, in document order (empty: everything in `new` can take effect now).
    static func changes(from started: GatewayConfiguration, to new: GatewayConfiguration) -> [String] {
        var paths: [String] = []
        if started.listen.count != new.listen.count { paths.append("listen") }
        for (i, (old, next)) in zip(started.listen, new.listen).enumerated() {
            if old.address != next.address { paths.append("listen[\(i)].address") }
            if old.isTLS != next.isTLS { paths.append("listen[\(i)].tls") }
            if old.proxyProtocol != next.proxyProtocol { paths.append("listen[\(i)].proxy_protocol") }
        }
        if started.admin != new.admin { paths.append("admin") }
        if started.readyRequiresStore != new.readyRequiresStore { paths.append("admin.ready_requires_store") }
        // The receipt refresher (keys, TLS contexts, receipt roots) is built at start.
        let startedRisk = Dictionary(started.apps.map { ($0.appID, $0.risk) }, uniquingKeysWith: { a, _ in a })
        for (i, app) in new.apps.enumerated() where (startedRisk[app.appID] ?? nil) != app.risk {
            paths.append("apps[\(i)].risk")
        }
        if started.trust.extraReceiptRoots != new.trust.extraReceiptRoots { paths.append("trust.extra_receipt_roots") }

        var store: [String] = []
        if started.store.kind != new.store.kind { store.append("store.url") }
        if started.store.commandTimeout != new.store.commandTimeout { store.append("store.command_timeout") }
        if started.store.connectTimeout != new.store.connectTimeout { store.append("store.connect_timeout") }
        if started.store.waitReplicas != new.store.waitReplicas { store.append("store.wait_replicas") }
        // A store setting added later than this list: named by its section rather than missed.
        if store.isEmpty && started.store != new.store { store.append("store") }
        paths += store

        var limits: [String] = []
        if started.limits.maxHeaderBytes != new.limits.maxHeaderBytes { limits.append("limits.max_header_bytes") }
        if started.limits.maxHeaders != new.limits.maxHeaders { limits.append("limits.max_headers") }
        if started.limits.maxConnections != new.limits.maxConnections { limits.append("limits.max_connections") }
        if limits.isEmpty && started.limits != new.limits { limits.append("limits") }
        paths += limits

        var http2: [String] = []
        if started.http2.maxConcurrentStreams != new.http2.maxConcurrentStreams { http2.append("http2.max_concurrent_streams") }
        if started.http2.initialWindowSize != new.http2.initialWindowSize { http2.append("http2.initial_window_size") }
        if started.http2.maxHeaderListSize != new.http2.maxHeaderListSize { http2.append("http2.max_header_list_size") }
        if http2.isEmpty && started.http2 != new.http2 { http2.append("http2") }
        paths += http2

        if started.timeouts.header != new.timeouts.header { paths.append("timeouts.header") }
        if started.timeouts.body != new.timeouts.body { paths.append("timeouts.body") }
        if started.timeouts.idle != new.timeouts.idle { paths.append("timeouts.idle") }
        if started.timeouts.tlsHandshake != new.timeouts.tlsHandshake { paths.append("timeouts.tls_handshake") }
        if started.log.format != new.log.format { paths.append("log.format") }
        return paths
    }
}
