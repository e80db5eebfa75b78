import GatewayConfig
import GatewayIO

extension GatewayRuntime {
    /// Reloads the configuration and the TLS certificates (SIGHUP; DESIGN.md section 10).
    ///
    /// 1. Reads `path` (default: the file it started from) and validates it with the checker
    ///    `check-config` runs (`ConfigCheckReport.validate`, certificate and CA files included).
    /// 2. Builds everything new before touching what runs: each TLS listener's certificates (a
    ///    complete new OpenSSL generation), the route tables (routes, upstream pools for upstreams
    ///    that changed, apps, trust roots read again, endpoints, header family, trusted proxies).
    /// 3. Swaps: TLS listeners take the new certificates for new handshakes (established
    ///    connections keep theirs), new requests use the new tables, requests in flight finish on
    ///    the tables they started with; an upstream pool no table uses any more closes once its
    ///    last request is done.
    ///
    /// Any failure in 1 or 2 changes nothing: the last good configuration stays, and the report lists
    /// every error with its key path. Restart-only settings that differ from the running ones
    /// (`RestartOnlySettings`) are not applied and are named in `restartRequired`. Counted in
    /// `attest_gateway_config_reloads_total{result}`. Blocking (reads files, resolves upstream
    /// names): call it off the event loops (the executable runs it on the main queue).
    public func reload(path: String? = nil) -> ConfigReloadReport {
        reloading.withLock { _ in reloadLocked(path: path) }
    }

    private func reloadLocked(path: String?) -> ConfigReloadReport {
        let running = tables.latestTables
        let source = path ?? loaded.sourcePath ?? started.sourcePath ?? ""
        var report = ConfigReloadReport(succeeded: false, source: source, errors: [], warnings: [], restartRequired: [],
                                        generation: running.generation, routes: running.routes.count, tlsListenersReloaded: 0)
        func refuse(_ errors: [ConfigIssue]) -> ConfigReloadReport {
            reloads.failed()
            report.errors = errors
            return report
        }
        guard !source.isEmpty else {
            return refuse([ConfigIssue(severity: .error, path: "", message: "no configuration file to reload from", mark: nil)])
        }

        // 1. The same checks as check-config.
        let next: LoadedConfiguration
        switch ConfigCheckReport.validate(path: source, checkFiles: { TLSFileChecker.check($0) }) {
        case .success(let loaded): next = loaded
        case .failure(let error):
            report.warnings = error.warnings
            return refuse(error.issues)
        }
        report.warnings = next.warnings
        let config = next.configuration
        report.restartRequired = RestartOnlySettings.changes(from: started.configuration, to: config)
        // An upstream name this reload brings in must resolve now: a typo must not replace a working
        // upstream with one that answers 503 (README, "Signals, reload and handover"). A name the
        // running configuration already has (unresolved since the start, say) is as at start: the
        // background resolution goes on, and other reloads are not blocked by it.
        let knownHosts = Set(loaded.configuration.upstreams.flatMap(\.hostNames))
        var unresolved: [ConfigIssue] = []
        for upstream in config.upstreams {
            for host in upstream.hostNames where !knownHosts.contains(host) {
                guard let problem = UpstreamHostChecker.problem(resolving: host) else { continue }
                unresolved.append(ConfigIssue(severity: .error, path: "upstreams.\(upstream.name)",
                                              message: "\(host) does not resolve (\(problem)): the running configuration stays",
                                              mark: nil))
            }
        }
        guard unresolved.isEmpty else { return refuse(unresolved) }

        // 2. Build: TLS generations for listeners that stay TLS at the same address, then the tables.
        var tlsReloads: [(context: TLSServerContext, generation: TLSServerContext.Generation)] = []
        var errors: [ConfigIssue] = []
        for (index, context) in tlsContexts.sorted(by: { $0.key < $1.key }) {
            guard index < config.listen.count, let tls = config.listen[index].tls,
                  config.listen[index].address == started.configuration.listen[index].address else { continue }
            let settings = GatewayRuntime.tlsSettings(tls)
            do {
                // Built whole (files read once, here) before any listener swaps: the swap below cannot fail.
                tlsReloads.append((context, try context.prepare(settings)))
            } catch {
                errors.append(ConfigIssue(severity: .error, path: "listen[\(index)].tls", message: "\(error)", mark: nil))
            }
        }
        var built: GatewayTables?
        do {
            built = try GatewayTables(loaded: next, generation: running.generation + 1, store: measuredStore, keys: keys,
                                      clock: clock, group: group, metrics: metrics, events: upstreamEvents,
                                      previous: running, refreshHooks: running.endpoints.refreshHooks)
        } catch let error as GatewayStartupError {
            errors.append(ConfigIssue(severity: .error, path: error.path, message: error.message, mark: nil))
        } catch {
            errors.append(ConfigIssue(severity: .error, path: "", message: "\(error)", mark: nil))
        }
        guard errors.isEmpty, let built else { return refuse(errors) }

        // 3. Swap: nothing here can fail, so either every listener and the tables change, or none.
        for (context, generation) in tlsReloads { context.install(generation) }
        tables.replace(with: built)
        current.withLock { $0 = next }
        reloads.succeeded(at: clock.now())
        report.succeeded = true
        report.generation = built.generation
        report.routes = built.routes.count
        report.tlsListenersReloaded = tlsReloads.count
        return report
    }
}
