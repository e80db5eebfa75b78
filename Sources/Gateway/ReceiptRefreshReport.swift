import GatewayStore

/// How one exchange of a key's receipt with Apple's data server ended (logs, `attestctl risk refresh`).
public struct ReceiptRefreshReport: Sendable, Equatable {
    /// Stable outcome names.
    public enum Outcome: String, Sendable, CaseIterable {
        /// 200 and a valid receipt for this key and app: stored, metric fresh.
        case refreshed
        /// 304: the stored receipt stays.
        case notModified = "not_modified"
        /// 400 / 401: refreshes stopped for this key (alert).
        case rejected
        /// 404: the last receipt stays, its metric is marked stale.
        case notFound = "not_found"
        /// 429, 5xx or another status: backing off.
        case throttled
        /// The data server could not be reached (or timed out).
        case unreachable
        /// 200 with a receipt that did not verify, or that names another key or app: backing off.
        case invalidReceipt = "invalid_receipt"
        /// Another replica holds the key's refresh lease.
        case leaseHeld = "lease_held"
        /// The per-process call rate is used up: retried at the next poll.
        case rateLimited = "rate_limited"
        /// No key record, no stored receipt, no `risk` settings for its app, or refreshes stopped.
        case skipped
        /// The store did not answer.
        case storeUnavailable = "store_unavailable"
    }

    /// The key.
    public let keyId: KeyID
    /// How it ended.
    public let outcome: Outcome
    /// The data server's HTTP status, when it answered.
    public let status: Int?
    /// The new metric (refreshed only).
    public let riskMetric: UInt32?
    /// When the next automatic exchange is due (unix ms); nil when none is scheduled.
    public let nextAt: Int64?
    /// Detail for logs.
    public let detail: String
}
