// One request/response exchange on an HTTP/2 connection.

import GatewayIO

/// The state of one HTTP/2 stream of an `HTTP2ServerConnection` (RFC 9113 section 5.1): the request
/// as it arrives, the handler's answer, the upstream exchange when forwarded, and the response body
/// bytes waiting for the client's flow-control window, and the handler's context of the request
/// (boxed by the handler's typed calls, `HTTPHandlerCalls`). It is the exchange's
/// `UpstreamResponseSink` and passes every event to its connection.
final class HTTP2Stream: UpstreamResponseSink {  // confined to the connection's loop
    enum Phase {
        /// Head in, body arriving.
        case receiving
        /// The whole request is with the handler.
        case handling
        /// Sent upstream; the response is relayed.
        case forwarding
        /// The response is submitted (its body may still be waiting for the window).
        case responding
    }

    // Release builds drop the run-time exclusivity check of `head`, `body`, `exchange`, `pending` and
    // `context` (`@exclusivity(unchecked)`; debug builds keep it): confined to the connection's
    // loop, and every access is a leaf (a value read or replaced, an array or buffer operation; an
    // exchange or context is read out before it is called). Several accesses per stream
    // (bench/PERFORMANCE.md, "Session 32").
    let id: Int32
    unowned let connection: HTTP2ServerConnection
    let start: UInt64
    var phase = Phase.receiving
    #if DEBUG
    var head: HTTPRequestHead?
    #else
    @exclusivity(unchecked) var head: HTTPRequestHead?
    #endif
    /// Method and target received, for the access record of a refused request (no `head`).
    var method: HTTPMethod?
    var target: [UInt8]?
    #if DEBUG
    var body: [UInt8] = []
    #else
    @exclusivity(unchecked) var body: [UInt8] = []
    #endif
    var bodyLimit = 0
    var requestBodyBytes = 0
    /// END_STREAM received.
    var requestComplete = false
    /// Its complete body left the connection's request body budget (`HTTP2Session.releaseRequestBody`).
    var requestBodyReleased = false
    /// Receiving: when the request stalls (body timeout), monotonic nanoseconds; 0 = none.
    var deadline: UInt64 = 0

    #if DEBUG
    var exchange: UpstreamExchange?
    #else
    @exclusivity(unchecked) var exchange: UpstreamExchange?
    #endif
    var upstreamName: String?
    var responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?
    /// `HTTPForward.responseField` of the forward.
    var responseField: (name: String, value: String)?
    var upstreamFailureAnswer: HTTPForward.UpstreamFailureAnswer?
    /// The error the server answered by itself, or the reason the stream failed.
    var error: HTTPError?
    /// Reset as malformed (RST_STREAM PROTOCOL_ERROR sent).
    var malformed = false
    /// The client reset the stream.
    var peerReset = false

    var responseStarted = false
    var responseStatus = 0
    var responseBodyBytes = 0
    /// Response body bytes not yet taken by nghttp2.
    #if DEBUG
    var pending = HTTP2BodyBuffer()
    #else
    @exclusivity(unchecked) var pending = HTTP2BodyBuffer()
    #endif
    /// No more bytes will be added to `pending`.
    var bodyComplete = false
    /// nghttp2 was told the body ended (END_STREAM queued).
    var endGiven = false
    /// nghttp2 waits for `resumeData`.
    var deferred = false
    /// The upstream exchange is paused until the client catches up.
    var upstreamPaused = false
    /// Last time nghttp2 took body bytes of this stream (or bytes started waiting), monotonic nanoseconds.
    var lastProgress: UInt64
    /// The handler's context: set by the head decision, replaced by an answer that carries one,
    /// handed to `requestCompleted` (nil for a stream refused or reset before its head was decided).
    #if DEBUG
    var context: HTTPContextBox?
    #else
    @exclusivity(unchecked) var context: HTTPContextBox?
    #endif

    #if DEBUG
    /// The server's count of live sinks (debug builds; `HTTPServerContext.liveSinks`).
    private let liveSinks: LiveObjectCount
    #endif

    init(id: Int32, connection: HTTP2ServerConnection, now: UInt64) {
        self.id = id
        self.connection = connection
        start = now
        lastProgress = now
        #if DEBUG
        liveSinks = connection.server.liveSinks
        liveSinks.increment()
        #endif
    }

    #if DEBUG
    deinit { liveSinks.decrement() }
    #endif

    func upstreamHead(_ head: consuming HTTPResponseHead) { connection.upstreamHead(self, head) }
    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool { connection.upstreamBody(self, bytes) }
    func upstreamReadDone() { connection.upstreamReadDone(self) }
    func upstreamEnd() { connection.upstreamEnd(self) }
    func upstreamFailed(_ error: HTTPError) { connection.upstreamFailed(self, error) }
    func upstreamRequestSent() { connection.upstreamRequestSent(self) }
    /// The budget counts a complete body until the upstream has it.
    var hearsRequestSent: Bool { true }
}
