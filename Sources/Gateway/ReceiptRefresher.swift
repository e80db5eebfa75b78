import AppAttest
import AttestCrypto
import Dispatch
import Foundation
import GatewayConfig
import GatewayHTTP
import GatewayIO
import GatewayStore

/// Exchanges the stored receipts of attested keys with Apple's App Attest data server (issue 12
/// "Fraud-metric receipts"), off every request path, on one event loop.
///
/// - Schedule: fleet-wide in the store (`ReceiptRefreshStore`); a new key is due at once after its
///   attestation (`registered`), then as `ReceiptRefreshSchedule` decides. Each poll takes the due
///   keys; for each one the key's lease (`SET NX PX` under its hash tag) picks one replica, which
///   checks under the lease that the key is still due, exchanges, writes the next due time, then
///   releases the lease: one exchange per key and due time across the fleet.
/// - Exchange: `POST /v1/attestationData` with the stored receipt in base64 and `Authorization:` the
///   app's ES256 JWT (`DataServerToken`), over TLS (`HTTPSClientExchange`, `TLSClientContext`).
/// - `200`: the body (base64) is verified with `ReceiptVerifier` (CMS chain to the receipt roots,
///   signature) and must name this key (field 3) and app (field 2), be of type `RECEIPT` (field 6),
///   unexpired (field 21), and carry a risk metric (field 17) that fits 32 bits; then receipt, metric,
///   its time (a creation time ahead of the clock counts as now) and expiry replace the stored ones
///   atomically. Anything else is `invalid_receipt`: the last valid receipt and metric stay, back-off.
///   `304`: next at the receipt's not-before. `400`/`401`: metric state `stopped`, an alert event, no
///   more automatic exchanges. `404`: state `stale`. `429`/`5xx`/unreachable: exponential back-off.
/// - A stopped key is exchanged only when forced (`attestctl risk refresh`); any answer of the data
///   server but `400`/`401` then ends the stop (`304`: state `fresh`, the receipt is current; others:
///   `stale`, retried on the schedule), so a forced exchange never reports a retry that is skipped.
/// - A token bucket per app bounds the calls of this process (`risk.max_calls_per_second`).
/// - Every attempt (but one postponed by the rate bound) is an event `risk_refresh` (keyId, outcome,
///   owner, status, next_at, detail); a `400`/`401` also raises `risk_refresh_stopped` (alert).
final class ReceiptRefresher: @unchecked Sendable {  // apps, schedules, inFlight, timer, polling confined to `loop.queue`; counts and noticedKeys under `countsLock`
    /// One app's refresh settings.
    struct App {
        let server: RiskConfiguration.DataServer
        let tls: TLSClientContext
        var token: DataServerToken
        var limiter: CallRateLimiter
    }

    /// Poll period, seconds.
    let pollInterval: Double
    /// Lease lifetime, ms (longer than an exchange may take).
    static let leaseTTL: Int64 = 120_000
    /// Longest exchange by default, seconds.
    static let exchangeTimeout = 30.0
    /// Longest exchange of this refresher, seconds.
    let timeout: Double
    /// Largest response body accepted.
    static let maxBody = 256 * 1024

    let loop: EventLoop
    private let store: any ReceiptRefreshStore & AttestStore
    private let verifier: ReceiptVerifier
    private let clock: GatewayClock
    private let events: RateLimitedEvents.Sink
    /// This process' name in leases.
    let owner: String
    /// Confined to `loop.queue` (tokens and buckets change).
    private var apps: [String: App]
    /// The App IDs with `risk` at start, readable from any thread (restart-only: a reload never
    /// changes which apps are refreshed, `RestartOnlySettings`).
    let appIds: Set<String>
    /// Keys `noticed` already asked to schedule (bounded; cleared when full), under `countsLock`.
    private var noticedKeys: Set<KeyID> = []
    static let maxNoticedKeys = 100_000
    private var schedules: [KeyID: ReceiptRefreshSchedule] = [:]
    private var inFlight: Set<KeyID> = []
    private var timer: DispatchSourceTimer?
    private var polling = false
    private let timing: ReceiptRefreshSchedule.Timing
    /// Outcome counts (tests, metrics), read under `countsLock`.
    private let countsLock = NSLock()
    private var counts: [ReceiptRefreshReport.Outcome: Int] = [:]

    init(apps: [String: App], store: any ReceiptRefreshStore & AttestStore, verifier: ReceiptVerifier, loop: EventLoop,
         clock: GatewayClock, events: @escaping RateLimitedEvents.Sink, pollInterval: Double = 1,
         timing: ReceiptRefreshSchedule.Timing = ReceiptRefreshSchedule.Timing(), owner: String? = nil,
         timeout: Double = ReceiptRefresher.exchangeTimeout) {
        self.timeout = timeout
        self.apps = apps
        appIds = Set(apps.keys)
        self.store = store
        self.verifier = verifier
        self.loop = loop
        self.clock = clock
        self.events = events
        self.pollInterval = pollInterval
        self.timing = timing
        self.owner = owner ?? "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Builds the refresher of `config`'s apps that have `risk` settings (nil when none has): reads
    /// each `.p8` key and builds each data server's TLS client context.
    /// - Throws: `GatewayStartupError` naming `apps[i].risk` when a key or CA cannot be used.
    static func make(config: GatewayConfiguration, store: any AttestStore, trust: TrustAnchors, loop: EventLoop,
                     clock: GatewayClock, events: @escaping RateLimitedEvents.Sink, pollInterval: Double = 1) throws -> ReceiptRefresher? {
        var apps: [String: App] = [:]
        for (index, app) in config.apps.enumerated() {
            guard let risk = app.risk else { continue }
            let path = "apps[\(index)].risk"
            let key: ECPrivateKey
            do { key = try DataServerToken.key(inFile: risk.privateKeyFile) } catch {
                throw GatewayStartupError("\(path).private_key_file: \(error.description)")
            }
            let token: DataServerToken
            do { token = try DataServerToken(teamID: risk.teamID, keyID: risk.keyID, key: key) } catch {
                throw GatewayStartupError("\(path).private_key_file: \(error)")
            }
            var ca: String?
            if case .url(_, _, let file) = risk.dataServer { ca = file }
            let tls: TLSClientContext
            do { tls = try TLSClientContext(settings: TLSClientSettings(verify: true, caPath: ca, alpn: ["http/1.1"])) } catch {
                throw GatewayStartupError("\(path).data_server_ca: \(error)")
            }
            apps[app.appID.description] = App(server: risk.dataServer, tls: tls, token: token,
                                              limiter: CallRateLimiter(rate: risk.maxCallsPerSecond))
        }
        guard !apps.isEmpty else { return nil }
        guard let refreshStore = store as? any ReceiptRefreshStore & AttestStore else {
            throw GatewayStartupError("apps[].risk: the store cannot hold the receipt refresh schedule")
        }
        return ReceiptRefresher(apps: apps, store: refreshStore, verifier: ReceiptVerifier(trust: trust), loop: loop,
                                clock: clock, events: events, pollInterval: pollInterval)
    }

    /// Starts polling the schedule.
    func start() {
        loop.execute { [self] in
            guard timer == nil else { return }
            let t = DispatchSource.makeTimerSource(queue: loop.queue)
            let interval = DispatchTimeInterval.milliseconds(max(10, Int(pollInterval * 1000)))
            t.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
            t.setEventHandler { [weak self] in self?.poll() }
            timer = t
            t.resume()
        }
    }

    /// Stops polling (exchanges in flight finish).
    func stop() {
        loop.execute { [self] in
            timer?.cancel()
            timer = nil
        }
    }

    /// A key was just attested: its first exchange is due now (the attestation's response does not
    /// wait for this).
    func registered(_ keyId: KeyID, appId: String) {
        guard appIds.contains(appId) else { return }
        store.scheduleRefresh(keyId, dueAt: clock.now()) { _ in }
    }

    /// A request of a key whose metric was never fetched (e.g. attested before `risk` was set): its
    /// first exchange is due now unless the schedule already holds it (`ZADD NX`). Once per key and
    /// process (a bounded set), so the request path pays one store write per key at most.
    func noticed(_ keyId: KeyID, appId: String) {
        guard appIds.contains(appId) else { return }
        let first = countsLock.withLock { () -> Bool in
            if noticedKeys.count >= Self.maxNoticedKeys { noticedKeys.removeAll() }
            return noticedKeys.insert(keyId).inserted
        }
        guard first else { return }
        store.scheduleRefresh(keyId, dueAt: clock.now(), onlyIfAbsent: true) { _ in }
    }

    /// `attest_gateway_risk_refresh_total{outcome}` (Prometheus text): this process' attempts by
    /// outcome (`ReceiptRefreshReport.Outcome`), every outcome listed.
    func prometheusText() -> String {
        let snapshot = countsLock.withLock { counts }
        var out = "# HELP attest_gateway_risk_refresh_total Exchanges of receipts with Apple's App Attest data server attempted by this process, by outcome.\n"
        out += "# TYPE attest_gateway_risk_refresh_total counter\n"
        for outcome in ReceiptRefreshReport.Outcome.allCases {
            out += "attest_gateway_risk_refresh_total{outcome=\"\(outcome.rawValue)\"} \(snapshot[outcome] ?? 0)\n"
        }
        return out
    }

    /// How many exchanges ended with `outcome` so far.
    func count(_ outcome: ReceiptRefreshReport.Outcome) -> Int { countsLock.withLock { counts[outcome] ?? 0 } }

    // MARK: Polling

    private func poll() {
        guard !polling else { return }
        polling = true
        store.dueRefreshes(now: clock.now(), limit: 64) { [self] result in
            loop.execute { [self] in
                polling = false
                guard case .success(let due) = result else { return }
                for keyId in due where !inFlight.contains(keyId) {
                    refresh(keyId, forced: false) { _ in }
                }
            }
        }
    }

    /// One exchange for `keyId` now (lease first). `forced` also exchanges a key whose refreshes were
    /// stopped (`attestctl risk refresh`). The completion runs on `loop`.
    func refresh(_ keyId: KeyID, forced: Bool, completion: @escaping @Sendable (ReceiptRefreshReport) -> Void) {
        loop.execute { [self] in
            guard !inFlight.contains(keyId) else {
                completion(report(keyId, .leaseHeld, detail: "an exchange for this key is in flight"))
                return
            }
            inFlight.insert(keyId)
            let done: @Sendable (ReceiptRefreshReport) -> Void = { [self] report in
                loop.execute { [self] in
                    inFlight.remove(keyId)
                    countsLock.withLock { counts[report.outcome, default: 0] += 1 }
                    if report.outcome != .rateLimited {
                        var fields = [("outcome", report.outcome.rawValue), ("owner", owner), ("detail", report.detail)]
                        if let status = report.status { fields.append(("status", String(status))) }
                        if let next = report.nextAt { fields.append(("next_at", String(next))) }
                        emit("risk_refresh", keyId, fields)
                    }
                    completion(report)
                }
            }
            store.acquireRefreshLease(keyId, owner: owner, ttl: Self.leaseTTL) { [self] leased in
                loop.execute { [self] in
                    switch leased {
                    case .failure(let error): done(report(keyId, .storeUnavailable, detail: "\(error)"))
                    case .success(false): done(report(keyId, .leaseHeld, detail: "another replica refreshes this key"))
                    case .success(true):
                        // Released after the new schedule is written (same connection, in order): a
                        // replica taking the lease next sees the new due time.
                        let release: @Sendable (ReceiptRefreshReport) -> Void = { [self] report in
                            store.releaseRefreshLease(keyId, owner: owner) { _ in }
                            done(report)
                        }
                        guard !forced else { return fetchAndExchange(keyId, forced: true, done: release) }
                        store.refreshDueTime(keyId) { [self] due in
                            loop.execute { [self] in
                                switch due {
                                case .failure(let error): release(report(keyId, .storeUnavailable, detail: "\(error)"))
                                case .success(let at) where at == nil || at! > clock.now():
                                    release(report(keyId, .skipped, detail: "no longer due (refreshed by another replica)"))
                                case .success: fetchAndExchange(keyId, forced: false, done: release)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    private func fetchAndExchange(_ keyId: KeyID, forced: Bool, done: @escaping @Sendable (ReceiptRefreshReport) -> Void) {
        store.fetchKey(keyId) { [self] fetched in
            loop.execute { [self] in
                let record: KeyRecord
                switch fetched {
                case .failure(let error):
                    done(report(keyId, .storeUnavailable, detail: "\(error)"))
                    return
                case .success(nil):
                    store.unscheduleRefresh(keyId) { _ in }
                    done(report(keyId, .skipped, detail: "no key record"))
                    return
                case .success(let found?):
                    record = found
                }
                guard apps[record.appId] != nil else {
                    store.unscheduleRefresh(keyId) { _ in }
                    done(report(keyId, .skipped, detail: "app \(record.appId) has no risk settings"))
                    return
                }
                if record.riskState == .stopped && !forced {
                    store.unscheduleRefresh(keyId) { _ in }
                    done(report(keyId, .skipped, detail: "refreshes stopped after a 400/401; force one with attestctl risk refresh"))
                    return
                }
                guard let receipt = record.receipt, !receipt.isEmpty else {
                    store.unscheduleRefresh(keyId) { _ in }
                    done(report(keyId, .skipped, detail: "no stored receipt"))
                    return
                }
                let now = clock.now()
                guard forced || apps[record.appId]!.limiter.take(now: now) else {
                    done(report(keyId, .rateLimited, detail: "per-process call rate reached"))
                    return
                }
                let token: String
                do { token = try apps[record.appId]!.token.token(now: now / 1000) } catch {
                    done(report(keyId, .unreachable, detail: "JWT signing failed: \(error)"))
                    return
                }
                let app = apps[record.appId]!
                let request = Self.request(host: app.server.host, port: app.server.port, token: token, receipt: receipt)
                HTTPSClientExchange.send(request, host: app.server.host, port: app.server.port, serverName: app.server.host,
                                         context: app.tls, loop: loop, timeout: timeout, maxBody: Self.maxBody) { [self] result in
                    handle(result, record: record, done: done)
                }
            }
        }
    }

    /// `POST /v1/attestationData` with the receipt in base64 (`Connection: close`).
    static func request(host: String, port: UInt16, token: String, receipt: [UInt8]) -> [UInt8] {
        let body = Array(Base64.encode(receipt).utf8)
        let authority = port == 443 ? host : (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        var head = "POST /v1/attestationData HTTP/1.1\r\nHost: \(authority)\r\nAuthorization: \(token)\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    // MARK: Outcomes

    private func handle(_ result: Result<HTTPSClientExchange.Response, HTTPSClientExchange.Failure>, record: KeyRecord,
                        done: @escaping @Sendable (ReceiptRefreshReport) -> Void) {
        let keyId = record.keyId
        let now = clock.now()
        /// A stopped key reaches here only when forced: an answer other than 400/401 ends the stop.
        func unstop(_ state: RiskMetricState) {
            if record.riskState == .stopped { store.markRisk(keyId, state: state) { _ in } }
        }
        let response: HTTPSClientExchange.Response
        switch result {
        case .failure(let failure):
            unstop(.stale)
            finish(keyId, .retryable(retryAfter: nil), .unreachable, status: nil, detail: "\(failure)", now: now, record: record, done: done)
            return
        case .success(let r):
            response = r
        }
        let status = response.status
        switch status {
        case 200:
            let bytes = Base64.decode(response.body.filter { $0 != 0x0A && $0 != 0x0D }) ?? response.body
            /// A 200 whose receipt cannot replace the stored one: the last valid receipt and metric stay.
            func invalid(_ detail: String) {
                emit("risk_receipt_invalid", keyId, [("detail", detail)])
                unstop(.stale)
                finish(keyId, .retryable(retryAfter: nil), .invalidReceipt, status: status, detail: detail, now: now, record: record, done: done)
            }
            let verification = verifier.verify(bytes)
            guard verification.isValid, let receipt = verification.receipt else { return invalid(verification.detail) }
            guard let attested = receipt.attestedKeyId, ConstantTime.equals(attested, keyId.bytes) else {
                return invalid("the receipt names another key (its field 3 is not this keyId)")
            }
            guard receipt.appId == record.appId else {
                return invalid("the receipt names another app (\(receipt.appId ?? "none") instead of \(record.appId))")
            }
            guard receipt.type == "RECEIPT" else {
                return invalid("the receipt is of type \(receipt.type ?? "none"), not RECEIPT (a refreshed receipt)")
            }
            guard let expiration = receipt.expirationTime, expiration * 1000 > now else {
                return invalid("the receipt expired at \(receipt.expirationTime.map(String.init) ?? "an unknown time") (unix seconds)")
            }
            guard let metric = receipt.riskMetric.flatMap({ UInt32(exactly: $0) }) else {
                return invalid("the receipt carries no usable risk metric (field 17: \(receipt.riskMetric.map(String.init) ?? "absent"))")
            }
            // A creation time ahead of this clock (skew, or a clock running behind) counts as now: the
            // metric's age is never negative and the next exchange is never parked by it.
            let observedAt = min((receipt.creationTime ?? now / 1000) * 1000, now)
            let expiresAt: Int64? = expiration * 1000
            store.storeRefreshedReceipt(keyId, receipt: bytes, riskMetric: metric, observedAt: observedAt,
                                        receiptExpiresAt: expiresAt) { [self] stored in
                loop.execute { [self] in
                    switch stored {
                    case .success(true):
                        finish(keyId, .refreshed(notBefore: receipt.notBefore.map { $0 * 1000 }, expiresAt: expiresAt), .refreshed,
                               status: status, metric: metric, detail: "risk metric \(metric)", now: now, done: done)
                    case .success(false):
                        store.unscheduleRefresh(keyId) { _ in }
                        done(report(keyId, .skipped, status: status, detail: "the key record disappeared"))
                    case .failure(let error):
                        finish(keyId, .retryable(retryAfter: nil), .storeUnavailable, status: status, detail: "\(error)", now: now, record: record, done: done)
                    }
                }
            }
        case 304:
            let notBefore = record.receipt.flatMap { verifier.verify($0).receipt?.notBefore }.map { $0 * 1000 }
            unstop(.fresh)
            finish(keyId, .notModified(notBefore: notBefore), .notModified, status: status, detail: "receipt not modified", now: now, done: done)
        case 400, 401:
            emit("risk_refresh_stopped", keyId, [("status", String(status)),
                                                 ("detail", status == 401 ? "the data server refused the JWT (team_id, key_id or .p8 key)" : "the data server refused the receipt")])
            store.markRisk(keyId, state: .stopped) { _ in }
            finish(keyId, .rejected, .rejected, status: status, detail: "refreshes stopped for this key", now: now, done: done)
        case 404:
            store.markRisk(keyId, state: .stale) { _ in }  // also ends a stop
            finish(keyId, .notFound, .notFound, status: status, detail: "no receipt found: last receipt kept, metric stale", now: now, done: done)
        default:
            // Seconds or an HTTP-date, saturating: a hostile value never traps (the schedule caps it).
            let retryAfter = response.headers.first("Retry-After").flatMap { RetryAfterValue.milliseconds($0, now: now) }
            unstop(.stale)
            finish(keyId, .retryable(retryAfter: retryAfter), .throttled, status: status, detail: "backing off", now: now, record: record, done: done)
        }
    }

    /// When `record` became due, as every replica can tell from the record: a day (`interval`) after
    /// its metric's time, or its creation for a key never refreshed (due at once). Feeds the
    /// back-off, so that it grows across the fleet (`ReceiptRefreshSchedule`).
    private func overdueSince(_ record: KeyRecord) -> Int64 {
        record.riskObservedAt.map { $0 + timing.interval } ?? record.createdAt
    }

    private func finish(_ keyId: KeyID, _ outcome: ReceiptRefreshSchedule.Outcome, _ name: ReceiptRefreshReport.Outcome,
                        status: Int?, metric: UInt32? = nil, detail: String, now: Int64, record: KeyRecord? = nil,
                        done: @escaping @Sendable (ReceiptRefreshReport) -> Void) {
        var schedule = schedules[keyId] ?? ReceiptRefreshSchedule(timing: timing)
        let next = schedule.next(after: outcome, now: now, jitter: Double.random(in: 0...1), overdueSince: record.map(overdueSince))
        switch next {
        case .at(let due):
            schedules[keyId] = schedule.failures == 0 ? nil : schedule
            store.scheduleRefresh(keyId, dueAt: due) { _ in }
            done(ReceiptRefreshReport(keyId: keyId, outcome: name, status: status, riskMetric: metric, nextAt: due, detail: detail))
        case .stop:
            schedules[keyId] = nil
            store.unscheduleRefresh(keyId) { _ in }
            done(ReceiptRefreshReport(keyId: keyId, outcome: name, status: status, riskMetric: metric, nextAt: nil, detail: detail))
        }
    }

    private func report(_ keyId: KeyID, _ outcome: ReceiptRefreshReport.Outcome, status: Int? = nil, detail: String) -> ReceiptRefreshReport {
        ReceiptRefreshReport(keyId: keyId, outcome: outcome, status: status, riskMetric: nil, nextAt: nil, detail: detail)
    }

    private func emit(_ name: String, _ keyId: KeyID, _ fields: [(String, String)]) {
        events(name, [("keyId", Base64.encode(keyId.bytes))] + fields)
    }
}
