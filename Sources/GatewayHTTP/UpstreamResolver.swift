// DNS resolution of an upstream's named endpoints, off the event loops.

import Dispatch
import GatewayIO
import Synchronization

/// Re-resolves the DNS names of an upstream's endpoints on a serial queue of its own (getaddrinfo
/// blocks: never on an event loop) and publishes the addresses to the shared endpoint state, which
/// the loops read when they open a connection.
///
/// Every `refresh` seconds each name is resolved again; a name that resolves to nothing keeps its
/// last addresses (a DNS outage does not take a working upstream away) and is logged. A name without
/// any address yet (it did not resolve at start) is retried after 1 s, then 2, 4... up to `refresh`
/// (or 30 s when `refresh` is 0).
final class UpstreamResolver: @unchecked Sendable {  // `failures` is touched only on `queue`
    private let upstream: String
    private let endpoints: [UpstreamEndpointState]
    private let refresh: Double
    private let events: (@Sendable (String, [(String, String)]) -> Void)?
    private let queue: DispatchQueue
    private let stopped = Atomic<Bool>(false)
    private var failures: [Int] = []
    /// When every name is resolved again next (uptime nanoseconds).
    private var nextRefresh: UInt64 = 0

    init(upstream: String, endpoints: [UpstreamEndpointState], refresh: Double,
         events: (@Sendable (String, [(String, String)]) -> Void)?) {
        self.upstream = upstream
        self.endpoints = endpoints
        self.refresh = refresh
        self.events = events
        queue = DispatchQueue(label: "attest-gateway.upstream-dns.\(upstream)")
        failures = Array(repeating: 0, count: endpoints.count)
    }

    /// Schedules the first round (the creator resolved once already).
    func start() {
        queue.async { [self] in
            nextRefresh = refresh > 0 ? DispatchTime.now().uptimeNanoseconds &+ UInt64(refresh * 1e9) : .max
            schedule()
        }
    }

    /// No further rounds.
    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Resolves every name once now (tests, and after `start`'s rounds).
    func resolveNow() {
        queue.sync { round(scheduleNext: false, everything: true) }
    }

    private func schedule() {
        guard !stopped.load(ordering: .relaxed) else { return }
        let cap = refresh > 0 ? refresh : 30
        var delay = refresh > 0 ? refresh : Double.infinity
        for (i, e) in endpoints.enumerated() where !e.isResolved {
            delay = min(delay, min(cap, Double(1 << min(failures[i], 16))))
        }
        guard delay.isFinite else { return }
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.round(scheduleNext: true, everything: false) }
    }

    private func round(scheduleNext: Bool, everything: Bool) {
        guard !stopped.load(ordering: .relaxed) else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let full = everything || now >= nextRefresh
        if full && refresh > 0 { nextRefresh = now &+ UInt64(refresh * 1e9) }
        for (i, e) in endpoints.enumerated() {
            // Between refreshes only unresolved names are tried (each on its own back-off).
            guard case .tcp(let host, let port) = e.endpoint, full || !e.isResolved else { continue }
            let wasResolved = e.isResolved
            do {
                let addresses = try SocketAddress.resolveAll(host: host, port: port)
                failures[i] = 0
                if e.setAddresses(addresses) {
                    events?(wasResolved ? "upstream_dns_changed" : "upstream_resolved",
                            [("upstream", upstream), ("endpoint", e.label),
                             ("addresses", addresses.map(\.description).joined(separator: ","))])
                }
            } catch {
                failures[i] += 1
                if failures[i] == 1 || !wasResolved && failures[i] & (failures[i] - 1) == 0 {
                    events?("upstream_unresolved", [("upstream", upstream), ("endpoint", e.label), ("detail", "\(error)"),
                                                    ("keeping", wasResolved ? "last addresses" : "none: 503 upstream_unresolved")])
                }
            }
        }
        if scheduleNext { schedule() }
    }
}
