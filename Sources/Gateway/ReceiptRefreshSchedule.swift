/// When a key's receipt is exchanged next with Apple's data server (issue 12): a value-type state
/// machine fed the outcome of each exchange and the injected time, returning the next due time or
/// `stop`. No I/O, no clock of its own: unit-tested without sockets or sleeping.
///
/// Rules (times unix ms):
/// - `200` (`refreshed`): failures reset; next at the new receipt's not-before time (Apple answers
///   `304` before it), but never later than `refreshMargin` before its expiry nor `maximumRefreshDelay`
///   from now, and never sooner than `minimumDelay` from now. Without either time: `interval`.
/// - `304` (`notModified`): next at the stored receipt's not-before time when it is still ahead, else
///   `interval` (never sooner than `minimumDelay`).
/// - `400` / `401` (`rejected`): `stop` (the refresher alerts; only an operator restarts it).
/// - `404` (`notFound`): the last valid receipt stays, its metric is marked stale; next after `interval`.
/// - `429`, `5xx`, network failures, invalid receipts (`retryable`): exponential back-off
///   `baseBackoff * 2^(failures-1)`, or, when longer, the time the key has been overdue
///   (`overdueSince`, from the key record every replica reads: so the back-off grows across the
///   fleet and across restarts, where this process' failure count starts again at 0 whenever another
///   replica took the last turn), capped at `maximumBackoff`, scaled by a jitter factor in
///   0.5...1.0, and never before a `Retry-After` the server gave, up to `maximumRetryAfter` (a day:
///   a longer or absurd value, even `Int64.max`, waits a day, so a hostile or broken server can
///   neither trap the arithmetic nor park a key for good).
struct ReceiptRefreshSchedule: Sendable, Equatable {
    /// What one exchange ended with.
    enum Outcome: Sendable, Equatable {
        /// 200 with a valid receipt: its not-before and expiry (ms), when present.
        case refreshed(notBefore: Int64?, expiresAt: Int64?)
        /// 304: the stored receipt's not-before (ms), when known.
        case notModified(notBefore: Int64?)
        /// 400 or 401.
        case rejected
        /// 404.
        case notFound
        /// 429, 5xx, a transport failure or a receipt that did not verify; `retryAfter` ms if given.
        case retryable(retryAfter: Int64?)
    }

    /// What to do next.
    enum Next: Sendable, Equatable {
        /// Exchange again at this time (ms).
        case at(Int64)
        /// No more automatic exchanges for this key.
        case stop
    }

    /// Tunables (milliseconds).
    struct Timing: Sendable, Equatable {
        /// Default spacing when no receipt time says otherwise (1 day).
        var interval: Int64 = 86_400_000
        /// Refresh at least this long before the receipt expires (7 days).
        var refreshMargin: Int64 = 7 * 86_400_000
        /// Never sooner than this after an exchange (1 minute).
        var minimumDelay: Int64 = 60_000
        /// First back-off (30 s) and cap (1 hour).
        var baseBackoff: Int64 = 30_000
        var maximumBackoff: Int64 = 3_600_000
        /// The longest `Retry-After` honoured (1 day).
        var maximumRetryAfter: Int64 = 86_400_000
        /// The longest wait after a refresh, whatever the receipt's not-before says (2 days: Apple's
        /// not-before is about a day after the receipt's creation; one far ahead, from a clock
        /// running behind or a broken receipt, never parks the key for longer).
        var maximumRefreshDelay: Int64 = 172_800_000
    }

    let timing: Timing
    /// Consecutive retryable failures.
    private(set) var failures = 0

    init(timing: Timing = Timing()) { self.timing = timing }

    /// Feeds `outcome` at `now`; `jitter` in 0...1 (random in production, fixed in tests);
    /// `overdueSince`: when the key became due for the exchange that failed (ms; nil: unknown).
    mutating func next(after outcome: Outcome, now: Int64, jitter: Double, overdueSince: Int64? = nil) -> Next {
        let earliest = now + timing.minimumDelay
        switch outcome {
        case .refreshed(let notBefore, let expiresAt):
            failures = 0
            var due = notBefore ?? (now + timing.interval)
            if let expiresAt { due = min(due, expiresAt - timing.refreshMargin) }
            due = min(due, now + timing.maximumRefreshDelay)  // a not-before far ahead never parks the key
            return .at(max(due, earliest))
        case .notModified(let notBefore):
            failures = 0
            if let notBefore, notBefore > now { return .at(max(notBefore, earliest)) }
            return .at(max(now + timing.interval, earliest))
        case .rejected:
            failures = 0
            return .stop
        case .notFound:
            failures = 0
            return .at(max(now + timing.interval, earliest))
        case .retryable(let retryAfter):
            failures += 1
            let exponent = min(failures - 1, 30)
            let raw = timing.baseBackoff.multipliedReportingOverflow(by: Int64(1) << Int64(exponent))
            var backoff = raw.overflow ? timing.maximumBackoff : raw.partialValue
            if let since = overdueSince, now > since { backoff = max(backoff, now - since) }
            let capped = min(backoff, timing.maximumBackoff)
            let delay = Int64(Double(capped) * (0.5 + 0.5 * min(1, max(0, jitter))))
            let asked = min(max(retryAfter ?? 0, 0), timing.maximumRetryAfter)
            return .at(now + max(delay, asked))
        }
    }
}
