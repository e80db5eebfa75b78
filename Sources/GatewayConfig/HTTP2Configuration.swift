/// HTTP/2 settings the gateway announces to downstream clients (`http2`), on TLS listeners (ALPN
/// `h2`) and on plain listeners (prior knowledge, h2c) alike.
///
/// YAML: `http2: {max_concurrent_streams: 100, initial_window_size: 1MiB, max_header_list_size: 16KiB}`,
/// every key optional. Each value is sent in the server's SETTINGS frame (RFC 9113 section 6.5.2) and
/// enforced on the connection.
public struct HTTP2Configuration: Sendable, Hashable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams a client may have open at once on one connection
    /// (`max_concurrent_streams`; default 100, 1...1000).
    public var maxConcurrentStreams: Int
    /// SETTINGS_INITIAL_WINDOW_SIZE, in bytes: how much request body a client may send on one stream
    /// before the gateway acknowledges it with WINDOW_UPDATE (`initial_window_size`; a size, default
    /// 1MiB, 1KiB...2147483647 = 2^31-1, the protocol's maximum). The default matches the default
    /// `max_body`, so a body within the default limit needs no window update round trip.
    public var initialWindowSize: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE, in bytes as RFC 9113 counts them (each field's name and value
    /// plus 32): the largest header block accepted (`max_header_list_size`; a size, default
    /// `limits.max_header_bytes`, 1KiB...1MiB). A larger block resets the stream.
    public var maxHeaderListSize: Int

    /// Default `max_concurrent_streams`.
    public static let defaultMaxConcurrentStreams = 100
    /// Default `initial_window_size` (1MiB).
    public static let defaultInitialWindowSize = 1 << 20
    /// Largest `initial_window_size` HTTP/2 allows (2^31-1).
    public static let maximumWindowSize = Int(Int32.max)

    /// Creates the settings. `maxHeaderListSize` defaults to `LimitsConfiguration.defaultMaxHeaderBytes`;
    /// a loaded configuration sets it to its `limits.maxHeaderBytes` when `max_header_list_size` is
    /// not written.
    public init(maxConcurrentStreams: Int = defaultMaxConcurrentStreams, initialWindowSize: Int = defaultInitialWindowSize,
                maxHeaderListSize: Int = LimitsConfiguration.defaultMaxHeaderBytes) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.maxHeaderListSize = maxHeaderListSize
    }
}
