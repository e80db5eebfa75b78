/// An error carrying a stable reason code, thrown by the byte-level helpers (base64, client data).
public struct AppAttestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable reason.
    public let reason: ReasonCode
    /// Human-readable detail for logs (never parsed).
    public let detail: String

    /// An error for `reason`.
    public init(_ reason: ReasonCode, _ detail: String = "") {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? reason.rawValue : "\(reason.rawValue): \(detail)" }
}
