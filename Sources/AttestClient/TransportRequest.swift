import Foundation

/// One HTTP request as the SDK means it to go on the wire.
public struct TransportRequest: Sendable {
    /// The method, e.g. `POST`.
    public var method: String
    /// The absolute URL; its path and query are the request-target the SDK signed.
    public var url: URL
    /// Header fields in order (names as given).
    public var headers: [(name: String, value: String)]
    /// The body (empty for none).
    public var body: Data
    /// Seconds to wait for the answer.
    public var timeout: Double

    /// Creates a request.
    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: Data = Data(), timeout: Double = 15) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
