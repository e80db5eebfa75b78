import Foundation

/// A request to a route the gateway protects, before the SDK adds its evidence headers.
public struct ProtectedRequest: Sendable {
    /// The method, e.g. `POST` (signed as given).
    public var method: String
    /// Path and query relative to the configured gateway URL, e.g. `/v1/orders?n=1`, exactly as it
    /// must go on the wire (already percent-encoded): the SDK signs these bytes.
    public var target: String
    /// Further header fields, in order.
    public var headers: [(name: String, value: String)]
    /// The body (empty for none).
    public var body: Data
    /// Header names the route binds into client data (`bind_headers`), in the route's order; their
    /// values are taken from `headers`.
    public var boundHeaders: [String]

    /// Creates a request.
    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data = Data(), boundHeaders: [String] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.boundHeaders = boundHeaders
    }
}
