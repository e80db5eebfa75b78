import Foundation

/// One HTTP answer as the transport received it.
public struct TransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields (names as received).
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Data

    /// Creates an answer.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
