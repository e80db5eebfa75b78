// HTTP/2 settings we advertise and the abuse limits we enforce (RFC 9113 sections 6.5.2 and 10.5).

import GatewayIO

/// Every HTTP/2 value of the server in one place: the SETTINGS it advertises (RFC 9113 section 6.5.2)
/// and the budgets that end an abusive connection with GOAWAY (RFC 9113 section 10.5). Documented for
/// operators in Config/REFERENCE.md, section "HTTP/2 limits".
///
/// A breached budget costs the connection (GOAWAY `ENHANCE_YOUR_CALM`, then close), never the
/// process; a request over a per-request limit costs only its stream. Values outside their bounds are
/// clamped (`clamped`).
public struct HTTP2Settings: Sendable, Hashable {
    // MARK: advertised SETTINGS

    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (RFC 9113 section 5.1.2): streams a client may have open at
    /// once. Default 100, bounds 1...10000. A HEADERS frame beyond it is refused with RST_STREAM
    /// `REFUSED_STREAM` while our SETTINGS are unacknowledged; after the client acknowledged them,
    /// nghttp2 treats it as a connection error (GOAWAY `PROTOCOL_ERROR`).
    public var maxConcurrentStreams: Int
    /// `SETTINGS_INITIAL_WINDOW_SIZE` (RFC 9113 section 6.9.2): bytes of request body a client may
    /// send on one stream before we open the window further. Default 65535, bounds 65535...2^31-1.
    public var initialWindowSize: Int
    /// `SETTINGS_MAX_FRAME_SIZE` (RFC 9113 section 4.2): largest frame payload we accept, in bytes.
    /// Default 16384, bounds 16384...16777215.
    public var maxFrameSize: Int
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` (RFC 9113 section 6.5.2): decoded header list size of one
    /// request (each field counts name + value + 32 bytes, RFC 9113 section 6.5.2), in bytes. nil
    /// (the default) uses the HTTP/1.1 limit `HTTP1ParserLimits.maxHeaderBytes`, so one setting bounds
    /// both protocols. A larger request is answered 431 `header_too_large` on its stream.
    public var maxHeaderListSize: Int?
    /// `SETTINGS_HEADER_TABLE_SIZE` (RFC 9113 section 6.5.2, RFC 7541 section 4.2): most bytes of the
    /// HPACK dynamic table the client's encoder may make us hold. Default 4096, bounds 0...65536. A
    /// table size update above it is a connection error (GOAWAY `COMPRESSION_ERROR`).
    public var headerTableSize: Int

    // MARK: abuse budgets (GOAWAY ENHANCE_YOUR_CALM)

    /// Most CONTINUATION frames after one HEADERS frame (CVE-2024-27316 class). Default 8,
    /// bounds 1...1000. The encoded header block is also bounded: at most twice the header list size.
    public var maxContinuationFrames: Int
    /// Rapid reset (CVE-2023-44487): the window, in streams opened, over which client resets are
    /// counted. Default 200, bounds 1...100000.
    public var resetWindowStreams: Int
    /// Rapid reset: more RST_STREAM frames from the client than this within the last
    /// `resetWindowStreams` streams opened ends the connection. Default 100, bounds 1...100000.
    public var maxResetsInWindow: Int
    /// SETTINGS and PING floods: most SETTINGS, PING and PRIORITY frames (ACKs not counted) and
    /// frames of extension or unknown types (PRIORITY_UPDATE, ALTSVC, ORIGIN, 0x0a-0xff: RFC 9113
    /// section 5.5 has a server ignore them, not accept them without bound) received within one
    /// `controlFrameWindow`. Default 100, bounds 1...1000000.
    public var maxControlFramesPerWindow: Int
    /// Length of the control-frame window, in seconds. Default 1, bounds 0.001...3600.
    public var controlFrameWindow: Double
    /// Most zero-length DATA frames without END_STREAM on one connection (CVE-2019-9518). Default 32,
    /// bounds 0...1000000.
    public var maxEmptyDataFrames: Int
    /// Most entries in one SETTINGS frame (nghttp2 `max_settings`). Default 32, bounds 1...1000.
    public var maxSettingsEntries: Int
    /// WINDOW_UPDATE floods (CVE-2019-9511 class): a connection may receive at most
    /// `5 + 2 × (streams opened + this × DATA frames sent)` WINDOW_UPDATE frames (Envoy's
    /// `max_inbound_window_update_frames_per_data_frame_sent`, same default). A client that answers
    /// every DATA frame with a connection and a stream update uses 2. Default 10, bounds 1...1000.
    public var maxWindowUpdatesPerDataFrame: Int
    /// Most SETTINGS and PING acknowledgements queued but not yet written (nghttp2
    /// `max_outbound_ack`): a client that floods without reading. Default 1000, bounds 1...100000.
    public var maxQueuedAcks: Int

    // MARK: buffering (upstream backpressure)

    /// Response bytes buffered per stream beyond what the client's flow-control window lets us send,
    /// in bytes. Above it the stream's upstream read pauses until the client opens its window.
    /// Default 65536, bounds 4096...16 MiB.
    public var streamBufferBytes: Int
    /// Response bytes buffered across all streams of one connection, in bytes. Above it every stream's
    /// upstream read pauses. Default 1 MiB, bounds 64 KiB...1 GiB.
    public var connectionBufferBytes: Int
    /// Request body bytes held across the streams of one connection, in bytes: bodies still arriving
    /// (before END_STREAM), and complete bodies until they are written whole to the upstream socket,
    /// answered without forwarding, or their stream ends (`HTTP2Session.releaseRequestBody(_:)`).
    /// Beyond it only the oldest body still arriving gets WINDOW_UPDATE (RFC 9113 section 6.9), and
    /// only while the complete bodies alone are within it: the others wait at their window, so a
    /// client cannot make the gateway hold its concurrency limit times the body limit, even when the
    /// upstream answers or reads slowly (a forwarded request over
    /// `UpstreamExchange.retryBufferBytes` is let go once written). Default 4 MiB, bounds
    /// 64 KiB...1 GiB.
    public var requestBodyBufferBytes: Int

    /// The `SETTINGS_INITIAL_WINDOW_SIZE` advertised: `initialWindowSize`, but at most an equal share
    /// of `requestBodyBufferBytes` per stream the client may open (`maxConcurrentStreams`), and at
    /// least 16 KiB: what every stream may send before any WINDOW_UPDATE. A stream whose body is
    /// expected is raised to `initialWindowSize` by WINDOW_UPDATE while the budget has room, so that
    /// one connection's request bodies stay near `requestBodyBufferBytes` (about three times it, plus
    /// one body, at worst: bytes held, windows granted, advertised windows) instead of
    /// `maxConcurrentStreams × initialWindowSize`.
    public var advertisedWindow: Int {
        let s = clamped
        return min(s.initialWindowSize, max(16_384, s.requestBodyBufferBytes / s.maxConcurrentStreams))
    }

    /// Settings with the given values (the defaults suit a public-facing reverse proxy).
    public init(maxConcurrentStreams: Int = 100, initialWindowSize: Int = 65535, maxFrameSize: Int = 16384,
                maxHeaderListSize: Int? = nil, headerTableSize: Int = 4096, maxContinuationFrames: Int = 8,
                resetWindowStreams: Int = 200, maxResetsInWindow: Int = 100, maxControlFramesPerWindow: Int = 100,
                controlFrameWindow: Double = 1, maxEmptyDataFrames: Int = 32, maxWindowUpdatesPerDataFrame: Int = 10,
                maxSettingsEntries: Int = 32,
                maxQueuedAcks: Int = 1000, streamBufferBytes: Int = 65536, connectionBufferBytes: Int = 1 << 20,
                requestBodyBufferBytes: Int = 4 << 20) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.maxFrameSize = maxFrameSize
        self.maxHeaderListSize = maxHeaderListSize
        self.headerTableSize = headerTableSize
        self.maxContinuationFrames = maxContinuationFrames
        self.resetWindowStreams = resetWindowStreams
        self.maxResetsInWindow = maxResetsInWindow
        self.maxControlFramesPerWindow = maxControlFramesPerWindow
        self.controlFrameWindow = controlFrameWindow
        self.maxEmptyDataFrames = maxEmptyDataFrames
        self.maxWindowUpdatesPerDataFrame = maxWindowUpdatesPerDataFrame
        self.maxSettingsEntries = maxSettingsEntries
        self.maxQueuedAcks = maxQueuedAcks
        self.streamBufferBytes = streamBufferBytes
        self.connectionBufferBytes = connectionBufferBytes
        self.requestBodyBufferBytes = requestBodyBufferBytes
    }

    /// The settings with every value within its documented bounds.
    public var clamped: HTTP2Settings {
        func c(_ v: Int, _ lo: Int, _ hi: Int) -> Int { min(max(v, lo), hi) }
        var s = self
        s.maxConcurrentStreams = c(maxConcurrentStreams, 1, 10000)
        s.initialWindowSize = c(initialWindowSize, 65535, Int(Int32.max))
        s.maxFrameSize = c(maxFrameSize, 16384, 16_777_215)
        s.maxHeaderListSize = maxHeaderListSize.map { c($0, 1024, 1 << 24) }
        s.headerTableSize = c(headerTableSize, 0, 65536)
        s.maxContinuationFrames = c(maxContinuationFrames, 1, 1000)
        s.resetWindowStreams = c(resetWindowStreams, 1, 100_000)
        s.maxResetsInWindow = c(maxResetsInWindow, 1, 100_000)
        s.maxControlFramesPerWindow = c(maxControlFramesPerWindow, 1, 1_000_000)
        s.controlFrameWindow = min(max(controlFrameWindow.isNaN ? 1 : controlFrameWindow, 0.001), 3600)
        s.maxEmptyDataFrames = c(maxEmptyDataFrames, 0, 1_000_000)
        s.maxWindowUpdatesPerDataFrame = c(maxWindowUpdatesPerDataFrame, 1, 1000)
        s.maxSettingsEntries = c(maxSettingsEntries, 1, 1000)
        s.maxQueuedAcks = c(maxQueuedAcks, 1, 100_000)
        s.streamBufferBytes = c(streamBufferBytes, 4096, 16 << 20)
        s.connectionBufferBytes = c(connectionBufferBytes, 64 << 10, 1 << 30)
        s.requestBodyBufferBytes = c(requestBodyBufferBytes, 64 << 10, 1 << 30)
        return s
    }

    /// The header list size in force: `maxHeaderListSize`, else the HTTP/1.1 header limit.
    func effectiveHeaderListSize(_ limits: HTTP1ParserLimits) -> Int {
        maxHeaderListSize ?? min(max(limits.maxHeaderBytes, 1024), 1 << 24)
    }
}
