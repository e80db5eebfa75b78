/// The store could not give a verdict: the gateway must answer `503 store_unavailable` with
/// `Retry-After` and action `retry` (fail-closed, DESIGN.md sections 2 and 4), or forward with verdict
/// `unverified` on a fail-open route. Never means "refused" and never means "accepted": a command whose
/// outcome is unknown (e.g. timed out after it was sent) is reported as unavailable too.
public struct StoreUnavailable: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Hashable, Sendable {
        /// Not connected (connection refused, reconnect backoff in progress): failed fast, nothing sent.
        case notConnected
        /// The connection broke while the command was pending: its outcome is unknown.
        case connectionLost
        /// No reply within the command timeout: the outcome is unknown; the connection is reset.
        case timeout
        /// The server answered with an error reply (e.g. `OOM`, `READONLY`, `LOADING`, `NOAUTH`); carries
        /// the reply's first word.
        case errorReply(String)
        /// Too many commands pending (bounded queue) or the memory store is at its challenge capacity.
        case overloaded
        /// The server's reply was malformed or a stored record could not be decoded.
        case protocolError
        /// The store was closed.
        case closed
    }

    /// The stable reason code of DESIGN.md section 2.
    public static let code = "store_unavailable"

    /// What went wrong.
    public let reason: Reason
    /// Human-readable detail for logs (never sent to clients).
    public let detail: String

    /// Creates an unavailable error.
    public init(_ reason: Reason, detail: String = "") {
        self.reason = reason
        self.detail = detail
    }

    /// Human-readable form for logs.
    public var description: String { "store_unavailable(\(reason))\(detail.isEmpty ? "" : ": \(detail)")" }
}
