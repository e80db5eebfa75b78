import Dispatch
import GatewayHTTP
import GatewayStore

/// The gateway's Prometheus metrics (text exposition format 0.0.4 on the admin listener's
/// `/metrics`; README "Observability" lists every family with its labels):
///
/// - `attest_gateway_requests_total{route, status, verdict, protocol, tls}` (counter) and
///   `attest_gateway_request_duration_seconds{route}` (histogram, first request byte to last
///   response byte);
/// - `attest_gateway_refusals_total{route, reason}`: answers the gateway gave itself with a reason
///   code (App Attest refusals, rate limits, malformed requests; never a forwarded response);
/// - `attest_gateway_requests_in_flight` (gauge: requests begun by `requestIDs`, i.e. heads decided,
///   not yet completed);
/// - `attest_gateway_connections_total{listener, protocol}` and `attest_gateway_open_connections{...}`;
/// - `attest_gateway_tls_handshakes_total{listener, result, version}` and
///   `attest_gateway_tls_handshake_failures_total{listener, reason}`;
/// - `attest_gateway_upstream_requests_total{upstream, status_class}`,
///   `attest_gateway_upstream_errors_total{upstream, kind}`,
///   `attest_gateway_upstream_duration_seconds{upstream}` (histogram, to the response head);
/// - `attest_gateway_store_commands_total{command}`, `attest_gateway_store_errors_total{command, reason}`
///   and `attest_gateway_store_command_duration_seconds{command}` (histogram). The state of the store's
///   connections and its outages are `StoreHealth`'s (readiness).
/// - `attest_gateway_signal_decisions_total{route, signal, value, decision, action}`: the `signals`
///   policy decisions (issue 12), by carried value (at most `maximumSignalSeries` label sets per
///   loop, then `value="other"`);
/// - `attest_gateway_cohort_requests_total{route, cohort, verdict}`: requests of routes with
///   `enforce_percent`, by cohort.
///
/// Every label value is non-empty (`none` stands for an absent one). Histogram buckets span the
/// configured timeouts (`Buckets.spanning(_:)`).
///
/// Per event loop (`PerLoop`): each loop counts into its own shard under a lock no other loop takes
/// on the request path (uncontended); a scrape merges the shards. Counting allocates nothing once a
/// label combination exists (label values are the configuration's strings and static literals).
final class GatewayMetrics: Sendable {
    /// Upper bounds of a histogram's buckets, seconds, ascending (`+Inf` is implicit).
    struct Buckets: Sendable {
        let bounds: [Double]

        /// The usual 1-2.5-5 series from 0.5 ms below `maxSeconds`, then `maxSeconds` itself, so
        /// that the largest finite bucket is the configured timeout (at least 10 ms).
        static func spanning(_ maxSeconds: Double) -> Buckets {
            let top = max(0.01, maxSeconds)
            var bounds: [Double] = []
            var decade = 0.0001
            outer: while true {
                for step in [1.0, 2.5, 5.0] {
                    let bound = (decade * step * 1e6).rounded() / 1e6
                    if bound < 0.0005 { continue }
                    if bound >= top { break outer }
                    bounds.append(bound)
                }
                decade *= 10
            }
            bounds.append(top)
            return Buckets(bounds: bounds)
        }

        /// Index of the bucket `seconds` falls in (`bounds.count`: above every bound).
        @inline(__always)
        func index(of seconds: Double) -> Int {
            var i = 0
            while i < bounds.count && seconds > bounds[i] { i += 1 }
            return i
        }
    }

    /// Counts per bucket (not cumulative: a scrape adds them up), count and sum.
    private struct Histogram {
        var counts: [UInt64]
        var sum: Double = 0

        init(_ buckets: Buckets) { counts = Array(repeating: 0, count: buckets.bounds.count + 1) }

        mutating func add(_ seconds: Double, _ buckets: Buckets) {
            counts[buckets.index(of: seconds)] += 1
            sum += seconds
        }

        /// Adds `other` to this one, or takes it when this one is the empty placeholder of a merge.
        mutating func mergeOrTake(_ other: Histogram) {
            guard counts.count == other.counts.count else {
                self = other
                return
            }
            for i in counts.indices { counts[i] += other.counts[i] }
            sum += other.sum
        }
    }

    /// The count of the last key counted, kept out of its table until the key changes or the table
    /// is read (`State.flushHot`).
    private struct HotCount<Key: Hashable & Sendable>: Sendable {
        var key: Key?
        var count: UInt64 = 0

        mutating func add(_ next: Key, table: inout [Key: UInt64]) {
            if HotCount.holds(key, next) {
                count += 1
                return
            }
            flush(into: &table)
            key = next
            count = 1
        }

        /// Whether `held` is `next`, compared in place (`held == next` promoted `next` to an optional:
        /// a copy, one retain per string of the key, on every request).
        private static func holds(_ held: Key?, _ next: Key) -> Bool {
            switch held {
            case .some(let current): return current == next
            case .none: return false
            }
        }

        mutating func flush(into table: inout [Key: UInt64]) {
            if let key, count > 0 { table[key, default: 0] += count }
            key = nil
            count = 0
        }
    }

    /// The histogram of the last name observed, taken out of its table (moved, not copied) until
    /// the name changes or the table is read.
    private struct HotHistogram: Sendable {
        var name: String?
        var histogram: Histogram?

        mutating func add(_ seconds: Double, name next: String, table: inout [String: Histogram], _ buckets: Buckets) {
            if name != next {
                flush(into: &table)
                histogram = table.removeValue(forKey: next) ?? Histogram(buckets)
                name = next
            }
            histogram!.add(seconds, buckets)
        }

        mutating func flush(into table: inout [String: Histogram]) {
            if let name, let histogram { table[name] = histogram }
            name = nil
            histogram = nil
        }
    }

    private struct RequestKey: Hashable {
        let route: String
        let status: Int
        let verdict: String
        /// `h1` or `h2`.
        let proto: String
        /// `TLSv1.2`, `TLSv1.3`, or `none` on plain connections.
        let tls: String
    }

    private struct LabelPair: Hashable, Comparable {
        let first: String
        let second: String
        static func < (a: LabelPair, b: LabelPair) -> Bool { (a.first, a.second) < (b.first, b.second) }
    }

    private struct HandshakeKey: Hashable {
        let listener: String
        let result: String
        let version: String
    }

    private struct SignalKey: Hashable, Comparable {
        let route: String
        let signal: String
        let value: String
        let decision: String
        let action: String
        static func < (a: SignalKey, b: SignalKey) -> Bool {
            (a.route, a.signal, a.value, a.decision, a.action) < (b.route, b.signal, b.value, b.decision, b.action)
        }
    }

    private struct CohortKey: Hashable, Comparable {
        let route: String
        let cohort: String
        let verdict: String
        static func < (a: CohortKey, b: CohortKey) -> Bool { (a.route, a.cohort, a.verdict) < (b.route, b.cohort, b.verdict) }
    }

    /// Most distinct label sets of `attest_gateway_signal_decisions_total` per loop; further values
    /// are counted as `value="other"` (a bundle version label per app release is fine, unbounded is not).
    static let maximumSignalSeries = 512

    /// Store command names (label `command`).
    enum StoreCommand: String, CaseIterable, Sendable {
        case issueChallenge = "issue_challenge", registerKey = "register_key", fetchKey = "fetch_key"
        case commitAssertion = "commit_assertion", revokeKey = "revoke_key", deleteKey = "delete_key", ping
        case renewKey = "renew_key", forgetKey = "forget_key", accountIndex = "account_index"
        case fleetSlot = "fleet_slot"
        /// `/register`'s attestation form storing the App Attest key that vouched (the registration itself is `register_key`).
        case registerVouchingKey = "register_vouching_key"
        /// A refused registration's back-off count.
        case registrationRefusal = "registration_refusal"
    }

    /// One loop's counts.
    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var durations: [String: Histogram] = [:]
        var refusals: [LabelPair: UInt64] = [:]
        var handshakes: [HandshakeKey: UInt64] = [:]
        var handshakeFailures: [LabelPair: UInt64] = [:]
        var connectionsStarted: [LabelPair: UInt64] = [:]
        var connectionsEnded: [LabelPair: UInt64] = [:]
        var requestsCompleted: UInt64 = 0
        var upstreamRequests: [LabelPair: UInt64] = [:]
        var upstreamErrors: [LabelPair: UInt64] = [:]
        var upstreamDurations: [String: Histogram] = [:]
        var storeCommands: [String: UInt64] = [:]
        var storeErrors: [LabelPair: UInt64] = [:]
        var storeDurations: [String: Histogram] = [:]
        var signalDecisions: [SignalKey: UInt64] = [:]
        var cohorts: [CohortKey: UInt64] = [:]

        // The labels of the last request and upstream exchange counted, kept outside the
        // dictionaries: a loop's consecutive requests mostly share their labels, and comparing keys
        // whose strings share storage costs far less than hashing them. Folded into the
        // dictionaries when the labels change and before every read (`flushHot`).
        var hotRequest = HotCount<RequestKey>()
        var hotDuration = HotHistogram()
        var hotUpstream = HotCount<LabelPair>()
        var hotUpstreamDuration = HotHistogram()

        /// Counts one request with `key`, its duration `seconds` under `route`.
        mutating func countRequest(_ key: RequestKey, route: String, seconds: Double, _ buckets: Buckets) {
            hotRequest.add(key, table: &requests)
            hotDuration.add(seconds, name: route, table: &durations, buckets)
        }

        /// Counts one upstream exchange with `key` (upstream, status class), its duration `seconds`.
        mutating func countUpstream(_ key: LabelPair, seconds: Double, _ buckets: Buckets) {
            hotUpstream.add(key, table: &upstreamRequests)
            hotUpstreamDuration.add(seconds, name: key.first, table: &upstreamDurations, buckets)
        }

        /// Folds the hot entries into the dictionaries (before the shard is read).
        mutating func flushHot() {
            hotRequest.flush(into: &requests)
            hotDuration.flush(into: &durations)
            hotUpstream.flush(into: &upstreamRequests)
            hotUpstreamDuration.flush(into: &upstreamDurations)
        }

        /// Adds `other`'s counts to these.
        mutating func merge(_ other: State) {
            signalDecisions.merge(other.signalDecisions, uniquingKeysWith: +)
            cohorts.merge(other.cohorts, uniquingKeysWith: +)
            requests.merge(other.requests, uniquingKeysWith: +)
            refusals.merge(other.refusals, uniquingKeysWith: +)
            handshakes.merge(other.handshakes, uniquingKeysWith: +)
            handshakeFailures.merge(other.handshakeFailures, uniquingKeysWith: +)
            connectionsStarted.merge(other.connectionsStarted, uniquingKeysWith: +)
            connectionsEnded.merge(other.connectionsEnded, uniquingKeysWith: +)
            requestsCompleted += other.requestsCompleted
            upstreamRequests.merge(other.upstreamRequests, uniquingKeysWith: +)
            upstreamErrors.merge(other.upstreamErrors, uniquingKeysWith: +)
            storeCommands.merge(other.storeCommands, uniquingKeysWith: +)
            storeErrors.merge(other.storeErrors, uniquingKeysWith: +)
            for (key, h) in other.durations { durations[key, default: Histogram(Buckets(bounds: []))].mergeOrTake(h) }
            for (key, h) in other.upstreamDurations { upstreamDurations[key, default: Histogram(Buckets(bounds: []))].mergeOrTake(h) }
            for (key, h) in other.storeDurations { storeDurations[key, default: Histogram(Buckets(bounds: []))].mergeOrTake(h) }
        }
    }

    /// Buckets of `attest_gateway_request_duration_seconds`.
    let requestBuckets: Buckets
    /// Buckets of `attest_gateway_upstream_duration_seconds`.
    let upstreamBuckets: Buckets
    /// Buckets of `attest_gateway_store_command_duration_seconds`.
    let storeBuckets: Buckets
    private let shards: PerLoop<State>
    /// Request ids, and the count of requests begun (heads decided) that the in-flight gauge uses:
    /// `RequestIdentity` begins each request once.
    let requestIDs: RequestIDGenerator

    /// Set on each event loop's queue to the loop's index (`GatewayRuntime` does it), so that calls
    /// without a connection at hand (store commands) count into their loop's shard.
    static let loopKey = DispatchSpecificKey<Int>()

    /// Metrics with one shard per event loop and histogram buckets up to the given timeouts
    /// (seconds): whole requests, upstream exchanges (connect plus response timeout), store commands.
    init(loops: Int = 1, requestSeconds: Double = 10, upstreamSeconds: Double = 65, storeSeconds: Double = 1) {
        shards = PerLoop(count: loops) { State() }
        requestIDs = RequestIDGenerator(loops: loops)
        requestBuckets = .spanning(requestSeconds)
        upstreamBuckets = .spanning(upstreamSeconds)
        storeBuckets = .spanning(storeSeconds)
    }

    /// The shard of the loop running the caller (0 off the loops).
    @inline(__always)
    static var currentLoop: Int { DispatchQueue.getSpecific(key: loopKey) ?? 0 }

    // MARK: - Counting (event loops)

    /// Counts one finished request: by route, status and verdict; its duration; a refusal when the
    /// gateway answered by itself with a reason. `decided`: a head decision was made for it.
    func record(_ record: HTTPAccessRecord, context: RequestLogContext?, decided: Bool = true) {
        let route = context?.route ?? "none"
        let key = RequestKey(route: route, status: record.status, verdict: context?.verdict?.rawValue ?? "none",
                             proto: record.connection.protocolName, tls: record.connection.tlsVersion ?? "none")
        let seconds = Double(record.latencyNanoseconds) / 1e9
        let refusal: String? = record.upstream == nil && record.status >= 400 ? (context?.reason ?? record.error?.code) : nil
        let buckets = requestBuckets
        shards.withShard(record.connection.loopIndex) { state in
            state.countRequest(key, route: route, seconds: seconds, buckets)
            if let refusal { state.refusals[LabelPair(first: route, second: refusal), default: 0] += 1 }
            if decided { state.requestsCompleted += 1 }
        }
    }

    /// Counts one downstream TLS handshake: `result` `ok` (with its version, `resumed` when the
    /// session was resumed) or `failed` (also counted by reason: `timeout`, `closed`, `draining`,
    /// `error` for a TLS error).
    func record(_ handshake: TLSHandshakeReport) {
        let result = handshake.succeeded ? (handshake.resumed ? "resumed" : "ok") : "failed"
        let key = HandshakeKey(listener: handshake.localAddress, result: result, version: handshake.version ?? "none")
        let failure: String? = handshake.failure.map { ["timeout", "closed", "draining"].contains($0) ? $0 : "error" }
        shards.withShard(handshake.loopIndex) { state in
            state.handshakes[key, default: 0] += 1
            if let failure { state.handshakeFailures[LabelPair(first: handshake.localAddress, second: failure), default: 0] += 1 }
        }
    }

    /// A downstream connection started (`started: true`) or ended speaking its protocol.
    func connection(_ info: HTTPConnectionInfo, started: Bool) {
        let key = LabelPair(first: info.localAddress, second: info.protocolName)
        shards.withShard(info.loopIndex) { state in
            if started { state.connectionsStarted[key, default: 0] += 1 } else { state.connectionsEnded[key, default: 0] += 1 }
        }
    }

    /// Counts one upstream exchange (`UpstreamConfiguration.observer`).
    func record(_ exchange: UpstreamExchangeReport) {
        let statusClass: String
        switch exchange.status {
        case 100..<200: statusClass = "1xx"
        case 200..<300: statusClass = "2xx"
        case 300..<400: statusClass = "3xx"
        case 400..<500: statusClass = "4xx"
        case 500..<600: statusClass = "5xx"
        default: statusClass = "none"
        }
        let kind: String?
        switch exchange.outcome {
        case .completed, .cancelled: kind = nil
        case .failed(let error): kind = GatewayMetrics.upstreamErrorKind(error)
        }
        let seconds = Double(exchange.nanoseconds) / 1e9
        let buckets = upstreamBuckets
        shards.withShard(exchange.loopIndex) { state in
            state.countUpstream(LabelPair(first: exchange.upstream, second: statusClass), seconds: seconds, buckets)
            if let kind { state.upstreamErrors[LabelPair(first: exchange.upstream, second: kind), default: 0] += 1 }
        }
    }

    /// Label `kind` of an upstream failure: `connect_refused` (refused, no such socket, unreachable),
    /// `connect_timeout`, `timeout` (response), `reset`, `bad_response`, `tls`, `unresolved` (no
    /// endpoint of the upstream has an address yet).
    static func upstreamErrorKind(_ error: HTTPError) -> String {
        switch error {
        case .upstreamUnavailable: return "connect_refused"
        case .upstreamConnectTimeout: return "connect_timeout"
        case .upstreamTimeout: return "timeout"
        case .upstreamReset: return "reset"
        case .upstreamBadResponse: return "bad_response"
        case .upstreamTLSFailed: return "tls"
        case .upstreamUnresolved: return "unresolved"
        default: return error.code
        }
    }

    /// Counts one store command that took `nanoseconds` and failed with `error` (nil: answered).
    func store(_ command: StoreCommand, loop: Int, nanoseconds: UInt64, error: StoreUnavailable?) {
        let seconds = Double(nanoseconds) / 1e9
        let buckets = storeBuckets
        let reason = error.map { GatewayMetrics.storeErrorReason($0.reason) }
        shards.withShard(loop) { state in
            state.storeCommands[command.rawValue, default: 0] += 1
            state.storeDurations[command.rawValue, default: Histogram(buckets)].add(seconds, buckets)
            if let reason { state.storeErrors[LabelPair(first: command.rawValue, second: reason), default: 0] += 1 }
        }
    }

    /// Counts the `signals` policy decisions of one request (`attest_gateway_signal_decisions_total`).
    func signalDecisions(_ decisions: [SignalCheck.Decision], route: String, loop: Int) {
        shards.withShard(loop) { state in
            for d in decisions {
                var key = SignalKey(route: route, signal: d.signal, value: d.value, decision: d.outcome, action: d.action)
                if state.signalDecisions[key] == nil && state.signalDecisions.count >= GatewayMetrics.maximumSignalSeries {
                    key = SignalKey(route: route, signal: d.signal, value: "other", decision: d.outcome, action: d.action)
                }
                state.signalDecisions[key, default: 0] += 1
            }
        }
    }

    /// Counts one request of a route with `enforce_percent` by cohort and verdict
    /// (`attest_gateway_cohort_requests_total`).
    func cohort(route: String, cohort: String, verdict: String, loop: Int) {
        shards.withShard(loop) { state in
            state.cohorts[CohortKey(route: route, cohort: cohort, verdict: verdict), default: 0] += 1
        }
    }

    /// Label `reason` of a store failure.
    static func storeErrorReason(_ reason: StoreUnavailable.Reason) -> String {
        switch reason {
        case .notConnected: return "not_connected"
        case .connectionLost: return "connection_lost"
        case .timeout: return "timeout"
        case .errorReply: return "error_reply"
        case .overloaded: return "overloaded"
        case .protocolError: return "protocol_error"
        case .closed: return "closed"
        }
    }

    // MARK: - Reading

    /// The number of requests counted for `route` with `status` (tests and tools).
    func requests(route: String, status: Int) -> UInt64 {
        snapshot().requests.filter { $0.key.route == route && $0.key.status == status }.values.reduce(0, +)
    }

    /// Prometheus text exposition format 0.0.4 of every family above, then `extra` gauges.
    func prometheusText(extra: [(name: String, help: String, value: Int)] = []) -> String {
        let s = snapshot()
        let begun = requestIDs.begun  // after the shards: every request counted completed is counted begun
        var out = ""
        out.reserveCapacity(8192)
        family(&out, "attest_gateway_requests_total", "counter", "Requests by route, final status, App Attest verdict, protocol and TLS version.")
        for (key, count) in s.requests.sorted(by: {
            ($0.key.route, $0.key.status, $0.key.verdict, $0.key.proto, $0.key.tls) < ($1.key.route, $1.key.status, $1.key.verdict, $1.key.proto, $1.key.tls)
        }) {
            sample(&out, "attest_gateway_requests_total", [("route", key.route), ("status", String(key.status)), ("verdict", key.verdict),
                                                           ("protocol", key.proto), ("tls", key.tls)], count)
        }
        histogram(&out, "attest_gateway_request_duration_seconds", "Time from the first request byte to the last response byte.",
                  label: "route", s.durations, requestBuckets)
        family(&out, "attest_gateway_refusals_total", "counter", "Answers the gateway gave itself, by route and reason code.")
        pairs(&out, "attest_gateway_refusals_total", ("route", "reason"), s.refusals)
        family(&out, "attest_gateway_requests_in_flight", "gauge", "Requests whose head was decided and whose response is not complete.")
        out += "attest_gateway_requests_in_flight \(begun >= s.requestsCompleted ? begun - s.requestsCompleted : 0)\n"
        family(&out, "attest_gateway_connections_total", "counter", "Downstream connections by listener and protocol (h1, h2).")
        pairs(&out, "attest_gateway_connections_total", ("listener", "protocol"), s.connectionsStarted)
        family(&out, "attest_gateway_open_connections", "gauge", "Open downstream connections by listener and protocol.")
        pairs(&out, "attest_gateway_open_connections", ("listener", "protocol"),
              s.connectionsStarted.merging(s.connectionsEnded) { started, ended in started >= ended ? started - ended : 0 })
        family(&out, "attest_gateway_tls_handshakes_total", "counter", "Downstream TLS handshakes by listener, result (ok, resumed, failed) and version.")
        for (key, count) in s.handshakes.sorted(by: { ($0.key.listener, $0.key.result, $0.key.version) < ($1.key.listener, $1.key.result, $1.key.version) }) {
            sample(&out, "attest_gateway_tls_handshakes_total", [("listener", key.listener), ("result", key.result), ("version", key.version)], count)
        }
        family(&out, "attest_gateway_tls_handshake_failures_total", "counter", "Failed downstream TLS handshakes by listener and reason (timeout, closed, draining, error).")
        pairs(&out, "attest_gateway_tls_handshake_failures_total", ("listener", "reason"), s.handshakeFailures)
        family(&out, "attest_gateway_upstream_requests_total", "counter", "Upstream exchanges by upstream and response status class (none: no response).")
        pairs(&out, "attest_gateway_upstream_requests_total", ("upstream", "status_class"), s.upstreamRequests)
        family(&out, "attest_gateway_upstream_errors_total", "counter", "Failed upstream exchanges by upstream and kind (connect_refused, connect_timeout, timeout, reset, bad_response, tls).")
        pairs(&out, "attest_gateway_upstream_errors_total", ("upstream", "kind"), s.upstreamErrors)
        histogram(&out, "attest_gateway_upstream_duration_seconds", "Time from the start of an upstream exchange to the response head (or to its failure).",
                  label: "upstream", s.upstreamDurations, upstreamBuckets)
        family(&out, "attest_gateway_store_commands_total", "counter", "Store commands by command.")
        for (command, count) in s.storeCommands.sorted(by: { $0.key < $1.key }) {
            sample(&out, "attest_gateway_store_commands_total", [("command", command)], count)
        }
        family(&out, "attest_gateway_store_errors_total", "counter", "Store commands that failed (store unavailable), by command and reason.")
        pairs(&out, "attest_gateway_store_errors_total", ("command", "reason"), s.storeErrors)
        histogram(&out, "attest_gateway_store_command_duration_seconds", "Time from submitting a store command to its answer or failure.",
                  label: "command", s.storeDurations, storeBuckets)
        family(&out, "attest_gateway_signal_decisions_total", "counter", "iOS 27 signals policy decisions by route, signal, carried value, decision (allowed, refused, absent) and action.")
        for (key, count) in s.signalDecisions.sorted(by: { $0.key < $1.key }) {
            sample(&out, "attest_gateway_signal_decisions_total", [("route", key.route), ("signal", key.signal), ("value", key.value),
                                                                   ("decision", key.decision), ("action", key.action)], count)
        }
        family(&out, "attest_gateway_cohort_requests_total", "counter", "Requests of routes with enforce_percent by cohort (enforced, monitored) and verdict.")
        for (key, count) in s.cohorts.sorted(by: { $0.key < $1.key }) {
            sample(&out, "attest_gateway_cohort_requests_total", [("route", key.route), ("cohort", key.cohort), ("verdict", key.verdict)], count)
        }
        for item in extra {
            out += "# HELP \(item.name) \(item.help)\n# TYPE \(item.name) gauge\n\(item.name) \(item.value)\n"
        }
        out += BuildInfo.prometheusText
        out += ProcessMetrics.prometheusText()
        return out
    }

    /// Every shard merged.
    private func snapshot() -> State {
        var merged = State()
        shards.forEach {
            $0.flushHot()
            merged.merge($0)
        }
        return merged
    }

    // MARK: - Text

    private func family(_ out: inout String, _ name: String, _ type: String, _ help: String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    private func sample(_ out: inout String, _ name: String, _ labels: [(String, String)], _ value: UInt64) {
        out += name
        GatewayMetrics.appendLabels(&out, labels)
        out += " \(value)\n"
    }

    private func pairs(_ out: inout String, _ name: String, _ labels: (String, String), _ counts: [LabelPair: UInt64]) {
        for (key, count) in counts.sorted(by: { $0.key < $1.key }) {
            sample(&out, name, [(labels.0, key.first), (labels.1, key.second)], count)
        }
    }

    private func histogram(_ out: inout String, _ name: String, _ help: String, label: String, _ histograms: [String: Histogram],
                           _ buckets: Buckets) {
        family(&out, name, "histogram", help)
        for (value, h) in histograms.sorted(by: { $0.key < $1.key }) {
            var cumulative: UInt64 = 0
            for (i, bound) in buckets.bounds.enumerated() {
                cumulative += h.counts[i]
                sample(&out, name + "_bucket", [(label, value), ("le", GatewayMetrics.format(bound))], cumulative)
            }
            cumulative += h.counts[buckets.bounds.count]
            sample(&out, name + "_bucket", [(label, value), ("le", "+Inf")], cumulative)
            out += name + "_sum"
            GatewayMetrics.appendLabels(&out, [(label, value)])
            out += " \(h.sum)\n"
            sample(&out, name + "_count", [(label, value)], cumulative)
        }
    }

    /// `{a="x",b="y"}` with every value escaped and never empty (`none`).
    static func appendLabels(_ out: inout String, _ labels: [(String, String)]) {
        out += "{"
        for (i, (name, value)) in labels.enumerated() {
            if i > 0 { out += "," }
            out += name
            out += "=\""
            out += escape(value.isEmpty ? "none" : value)
            out += "\""
        }
        out += "}"
    }

    /// A bucket bound as Prometheus clients write it (`0.005`, `1`, `2.5`).
    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? String(Int64(seconds)) : String(seconds)
    }

    /// A label value escaped for the text format (backslash, double quote, line feed).
    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return text }
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
