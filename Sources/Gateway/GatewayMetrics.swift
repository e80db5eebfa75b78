import GatewayHTTP

/// Request counters and latency histograms, exposed in the Prometheus text format on the admin
/// listener's `/metrics`.
///
/// - `attest_gateway_requests_total{route, status, verdict, protocol, tls}` (counter)
/// - `attest_gateway_request_duration_seconds{route}` (histogram, seconds from first request byte to
///   last response byte)
/// Per event loop (`PerLoop`): each loop counts into its own shard under a lock no other loop takes
/// on the request path; a scrape merges the shards.
final class GatewayMetrics: Sendable {
    private struct CounterKey: Hashable {
        let route: String
        let status: Int
        let verdict: String
        /// `h1` or `h2`.
        let proto: String
        /// `TLSv1.2`, `TLSv1.3`, or `none` on plain connections.
        let tls: String
    }

    private struct Histogram {
        var buckets: [UInt64]
        var count: UInt64 = 0
        var sum: Double = 0

        mutating func add(_ seconds: Double) {
            for (i, bound) in GatewayMetrics.bucketBounds.enumerated() where seconds <= bound { buckets[i] += 1 }
            count += 1
            sum += seconds
        }
    }

    private struct HandshakeKey: Hashable {
        let listener: String
        let result: String
        let version: String
    }

    private struct State {
        var requests: [CounterKey: UInt64] = [:]
        var durations: [String: Histogram] = [:]
        var handshakes: [HandshakeKey: UInt64] = [:]

        /// Adds `other`'s counts to these.
        mutating func merge(_ other: State) {
            requests.merge(other.requests, uniquingKeysWith: +)
            handshakes.merge(other.handshakes, uniquingKeysWith: +)
            for (route, histogram) in other.durations {
                if var mine = durations[route] {
                    for i in mine.buckets.indices { mine.buckets[i] += histogram.buckets[i] }
                    mine.count += histogram.count
                    mine.sum += histogram.sum
                    durations[route] = mine
                } else {
                    durations[route] = histogram
                }
            }
        }
    }

    /// Upper bounds of the latency buckets, seconds.
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private let shards: PerLoop<State>

    /// Metrics with one shard per event loop.
    init(loops: Int = 1) {
        shards = PerLoop(count: loops) { State() }
    }

    /// Counts one finished request.
    func record(_ record: HTTPAccessRecord, context: RequestLogContext?) {
        let route = context?.route ?? "none"
        let key = CounterKey(route: route, status: record.status, verdict: context?.verdict?.rawValue ?? "",
                             proto: record.connection.protocolName, tls: record.connection.tlsVersion ?? "none")
        let seconds = Double(record.latencyNanoseconds) / 1e9
        shards.withShard(record.connection.loopIndex) { state in
            state.requests[key, default: 0] += 1
            // Updated in place (a copy taken out of the dictionary would copy the bucket array each time).
            state.durations[route, default: Histogram(buckets: Array(repeating: 0, count: GatewayMetrics.bucketBounds.count))]
                .add(seconds)
        }
    }

    /// Counts one downstream TLS handshake: `result` `ok` (with its version, `resumed` when the
    /// session was resumed) or `failed`.
    func record(_ handshake: TLSHandshakeReport) {
        let result = handshake.succeeded ? (handshake.resumed ? "resumed" : "ok") : "failed"
        let key = HandshakeKey(listener: handshake.localAddress, result: result, version: handshake.version ?? "none")
        shards.withShard(handshake.loopIndex) { $0.handshakes[key, default: 0] += 1 }
    }

    /// The number of requests counted for `route` with `status` (tests and tools).
    func requests(route: String, status: Int) -> UInt64 {
        snapshot().requests.filter { $0.key.route == route && $0.key.status == status }.values.reduce(0, +)
    }

    /// Prometheus text exposition format 0.0.4.
    func prometheusText(extra: [(name: String, help: String, value: Int)] = []) -> String {
        let snapshot = snapshot()
        var out = "# HELP attest_gateway_requests_total Requests by route, final status and App Attest verdict.\n"
        out += "# TYPE attest_gateway_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: {
            ($0.key.route, $0.key.status, $0.key.verdict, $0.key.proto, $0.key.tls) < ($1.key.route, $1.key.status, $1.key.verdict, $1.key.proto, $1.key.tls)
        }) {
            out += "attest_gateway_requests_total{route=\"\(GatewayMetrics.escape(key.route))\",status=\"\(key.status)\",verdict=\"\(key.verdict)\",protocol=\"\(key.proto)\",tls=\"\(key.tls)\"} \(count)\n"
        }
        out += "# HELP attest_gateway_request_duration_seconds Time from the first request byte to the last response byte.\n"
        out += "# TYPE attest_gateway_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.durations.sorted(by: { $0.key < $1.key }) {
            let label = GatewayMetrics.escape(route)
            for (i, bound) in GatewayMetrics.bucketBounds.enumerated() {
                out += "attest_gateway_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(bound)\"} \(histogram.buckets[i])\n"
            }
            out += "attest_gateway_request_duration_seconds_bucket{route=\"\(label)\",le=\"+Inf\"} \(histogram.count)\n"
            out += "attest_gateway_request_duration_seconds_sum{route=\"\(label)\"} \(histogram.sum)\n"
            out += "attest_gateway_request_duration_seconds_count{route=\"\(label)\"} \(histogram.count)\n"
        }
        if !snapshot.handshakes.isEmpty {
            out += "# HELP attest_gateway_tls_handshakes_total Downstream TLS handshakes by listener, result (ok, resumed, failed) and version.\n"
            out += "# TYPE attest_gateway_tls_handshakes_total counter\n"
            for (key, count) in snapshot.handshakes.sorted(by: { ($0.key.listener, $0.key.result, $0.key.version) < ($1.key.listener, $1.key.result, $1.key.version) }) {
                out += "attest_gateway_tls_handshakes_total{listener=\"\(GatewayMetrics.escape(key.listener))\",result=\"\(key.result)\",version=\"\(key.version)\"} \(count)\n"
            }
        }
        for item in extra {
            out += "# HELP \(item.name) \(item.help)\n# TYPE \(item.name) gauge\n\(item.name) \(item.value)\n"
        }
        return out
    }

    /// Every shard merged.
    private func snapshot() -> State {
        var merged = State()
        shards.forEach { merged.merge($0) }
        return merged
    }

    private static func escape(_ text: String) -> String {
        var out = ""
        for ch in text {
            switch ch {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(ch)
            }
        }
        return out
    }
}
