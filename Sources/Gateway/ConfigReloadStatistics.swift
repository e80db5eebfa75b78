import Synchronization

/// Configuration reloads (SIGHUP) for `/metrics`:
/// - `attest_gateway_config_reloads_total{result="success"|"failure"}` (counter);
/// - `attest_gateway_config_last_reload_success_timestamp_seconds` (gauge, Unix seconds of the last
///   configuration that took effect: the start, then each successful reload), so that an alert can
///   fire when a failed reload left an old configuration running.
final class ConfigReloadStatistics: Sendable {
    private let successes = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let lastSuccessMillis: Atomic<Int64>

    /// Counters at zero; the last success is the start (`startedAt`, Unix milliseconds).
    init(startedAt: Int64) {
        lastSuccessMillis = Atomic(startedAt)
    }

    /// Counts a reload that took effect at `now` (Unix milliseconds).
    func succeeded(at now: Int64) {
        successes.add(1, ordering: .relaxed)
        lastSuccessMillis.store(now, ordering: .relaxed)
    }

    /// Counts a reload that was refused (the last good configuration stays).
    func failed() { failures.add(1, ordering: .relaxed) }

    /// Reloads that took effect.
    var successCount: Int { successes.load(ordering: .relaxed) }
    /// Reloads refused.
    var failureCount: Int { failures.load(ordering: .relaxed) }

    /// The two metrics in the Prometheus text format 0.0.4.
    func prometheusText() -> String {
        let millis = lastSuccessMillis.load(ordering: .relaxed)
        let seconds = "\(millis / 1000).\(String(1000 + millis % 1000).dropFirst())"
        return """
            # HELP attest_gateway_config_reloads_total Configuration reloads (SIGHUP) by result.
            # TYPE attest_gateway_config_reloads_total counter
            attest_gateway_config_reloads_total{result="success"} \(successCount)
            attest_gateway_config_reloads_total{result="failure"} \(failureCount)
            # HELP attest_gateway_config_last_reload_success_timestamp_seconds Unix time the configuration in force took effect (start or last successful reload).
            # TYPE attest_gateway_config_last_reload_success_timestamp_seconds gauge
            attest_gateway_config_last_reload_success_timestamp_seconds \(seconds)

            """
    }
}
