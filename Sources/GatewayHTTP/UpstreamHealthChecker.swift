// Active health checks of an upstream's endpoints, driven on one event loop.

import GatewayIO

/// Runs `UpstreamHealthCheck` for one upstream on one event loop (a resident of it: the loop's
/// timer drives it, nothing blocks): every `interval` each resolved endpoint gets one probe, a
/// `GET path` exchange pinned to that endpoint on a fresh connection (`Connection: close`; TLS for
/// https upstreams). A `2xx` head within `timeout` passes; a failure, another status or the timeout
/// fails. The verdicts go to the endpoint's shared state (`UpstreamEndpointState.recordCheck`),
/// changes to the event sink (`upstream_endpoint_down`, `upstream_endpoint_up`).
final class UpstreamHealthChecker: EventLoopResident, @unchecked Sendable {  // state confined to `pool.loop.queue` (created elsewhere, then only touched there)
    private let pool: UpstreamLoopPool
    private let check: UpstreamHealthCheck
    private let request: [UInt8]
    private let interval: UInt64
    private let timeout: UInt64
    private var nextRound: UInt64 = 0
    private var probes: [Int: Probe] = [:]
    private var stopped = false

    /// One probe in flight: its exchange and when it gives up.
    private final class Probe: UpstreamResponseSink {
        let endpoint: UpstreamEndpointState
        let deadline: UInt64
        var exchange: UpstreamExchange?
        var status: Int?
        var done: ((Bool) -> Void)?

        init(endpoint: UpstreamEndpointState, deadline: UInt64) {
            self.endpoint = endpoint
            self.deadline = deadline
        }

        func upstreamHead(_ head: consuming HTTPResponseHead) {
            status = head.status
            finish((200...299).contains(head.status))
        }
        func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool { true }
        func upstreamReadDone() {}
        func upstreamEnd() { finish(status.map { (200...299).contains($0) } ?? false) }
        func upstreamFailed(_ error: HTTPError) { finish(false) }

        func finish(_ passed: Bool) {
            guard let done else { return }
            self.done = nil
            done(passed)
        }
    }

    /// The loop it runs on.
    var home: EventLoop? { pool.loop }

    init(pool: UpstreamLoopPool, check: UpstreamHealthCheck, host: [UInt8]) {
        self.pool = pool
        self.check = check
        var head = Array("GET \(check.path) HTTP/1.1\r\nHost: ".utf8)
        head += check.host.map { Array($0.utf8) } ?? host
        head += Array("\r\nConnection: close\r\nUser-Agent: attest-gateway-health-check\r\nAccept: */*\r\n\r\n".utf8)
        request = head
        interval = UpstreamLoopPool.nanoseconds(check.interval)
        timeout = UpstreamLoopPool.nanoseconds(check.timeout)
    }

    /// Registers on the loop; the first round starts at once (call on the loop's queue).
    func start() {
        pool.loop.register(self)
        nextRound = EventLoop.now()
        tick(now: nextRound)
    }

    /// Stops (call on the loop's queue): probes in flight are cancelled without a verdict.
    func stop() {
        stopped = true
        pool.loop.unregister(self)
        let inFlight = probes.values
        probes.removeAll()
        for probe in inFlight {
            probe.done = nil
            probe.exchange?.cancel()
        }
    }

    func tick(now: UInt64) {
        guard !stopped else { return }
        for (index, probe) in probes where now >= probe.deadline {
            probe.exchange?.cancel()
            probes[index] = nil
            probe.finish(false)
        }
        guard now >= nextRound else { return }
        nextRound = now &+ interval
        for endpoint in pool.endpoints where probes[endpoint.index] == nil && endpoint.isResolved {
            launch(endpoint, now: now)
        }
    }

    private func launch(_ endpoint: UpstreamEndpointState, now: UInt64) {
        let probe = Probe(endpoint: endpoint, deadline: now &+ timeout)
        let index = endpoint.index
        probe.done = { [unowned self, unowned probe] passed in
            if probes[index] === probe { probes[index] = nil }
            record(endpoint, passed: passed)
        }
        probes[index] = probe
        let seconds = check.timeout
        let exchange = UpstreamExchange(pool: pool, method: .get, request: request, sink: probe,
                                        connectTimeout: seconds, responseTimeout: seconds, endpoint: index)
        probe.exchange = exchange
        exchange.start()  // may finish at once (refused): `done` then already ran
    }

    private func record(_ endpoint: UpstreamEndpointState, passed: Bool) {
        guard !stopped,
              let verdict = endpoint.recordCheck(passed: passed, healthyThreshold: check.healthyThreshold,
                                                 unhealthyThreshold: check.unhealthyThreshold) else { return }
        pool.shared.events?(verdict ? "upstream_endpoint_up" : "upstream_endpoint_down",
                            [("upstream", pool.settings.name), ("endpoint", endpoint.label), ("check", "GET \(check.path)")])
    }
}
