import Foundation

/// How the SDK talks to the gateway: one blocking HTTP exchange per call (`URLSessionTransport` by
/// default; tests script a fake gateway behind it). Exactly one call is one round trip.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the gateway's answer, whatever its status.
    /// - Throws: when no answer arrived (connection refused, timeout, TLS failure); the SDK retries
    ///   its own endpoints, and a protected request when its method is idempotent or the error is a
    ///   `URLError` showing nothing was sent (`cannotConnectToHost`, `cannotFindHost`,
    ///   `dnsLookupFailed`, `notConnectedToInternet`).
    func send(_ request: TransportRequest) throws -> TransportResponse
}
