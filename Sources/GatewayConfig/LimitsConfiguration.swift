/// Protocol limits applied to every downstream connection (`limits`).
public struct LimitsConfiguration: Sendable, Hashable {
    /// Largest request head (request line and all header fields) in bytes (default 16KiB, 1KiB...1MiB);
    /// larger answers 431 (HTTP/1.1) or resets the stream (HTTP/2).
    public var maxHeaderBytes: Int
    /// Most header fields in one request (default 100, 1...1000).
    public var maxHeaders: Int
    /// Most simultaneous downstream connections; further ones wait in the accept backlog
    /// (default 4096, 1...1000000).
    public var maxConnections: Int

    /// Default `max_header_bytes`.
    public static let defaultMaxHeaderBytes = 16 << 10
    /// Default `max_headers`.
    public static let defaultMaxHeaders = 100
    /// Default `max_connections`.
    public static let defaultMaxConnections = 4096

    /// Creates the limits; each defaults as documented.
    public init(maxHeaderBytes: Int = defaultMaxHeaderBytes, maxHeaders: Int = defaultMaxHeaders, maxConnections: Int = defaultMaxConnections) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaders = maxHeaders
        self.maxConnections = maxConnections
    }
}
