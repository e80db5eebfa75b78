// What an HTTP2Session tells its owner.

import GatewayIO

/// The owner of an `HTTP2Session` (a downstream connection, or a test): receives its events while
/// `HTTP2Session.receive(_:now:)` or `HTTP2Session.produceOutput(into:limit:)` runs, on the same
/// queue. Inside these calls the owner may submit responses, resume data, reset streams and submit
/// GOAWAY, but must not call `receive` or `produceOutput` again.
///
/// Per stream, in order: `http2StreamOpened` (or `http2StreamRefused` / `http2StreamMalformed`),
/// any number of `http2StreamData`, `http2StreamEnded` when the request is complete, and
/// `http2StreamClosed` once (RFC 9113 section 5.1). `http2StreamReset` may come at any point before
/// `http2StreamClosed`. Stream identifiers are the client's odd numbers (RFC 9113 section 5.1.1).
package protocol HTTP2SessionDelegate: AnyObject {
    /// A request header block passed every check (RFC 9113 section 8.3): answer on this stream.
    /// `head.framing` is `.none` when the HEADERS frame ended the stream.
    func http2StreamOpened(_ streamID: Int32, head: HTTPRequestHead)

    /// A well-formed request the server refuses with an error response on the stream (target not in
    /// normal form, CONNECT, header list too large, Expect other than 100-continue; or, for a stream
    /// already opened, its trailer block too large). `method` and `target` are what was received,
    /// if anything, for the access record.
    func http2StreamRefused(_ streamID: Int32, error: HTTPError, method: HTTPMethod?, target: [UInt8]?)

    /// A malformed request (RFC 9113 section 8.1.1): the session has reset the stream with
    /// `PROTOCOL_ERROR`; there is nothing to answer. Also sent for a stream already opened whose
    /// trailer block was malformed.
    func http2StreamMalformed(_ streamID: Int32, method: HTTPMethod?, target: [UInt8]?)

    /// Request body bytes (DATA payload, padding removed; RFC 9113 section 6.1), valid during the call.
    func http2StreamData(_ streamID: Int32, _ bytes: UnsafeRawBufferPointer)

    /// The request is complete (END_STREAM), with its trailer fields (empty when none; RFC 9113
    /// section 8.1).
    func http2StreamEnded(_ streamID: Int32, trailers: HTTPHeaders)

    /// The client reset the stream with RST_STREAM (RFC 9113 section 6.4): stop its work at once.
    func http2StreamReset(_ streamID: Int32, error: HTTP2ErrorCode)

    /// The stream is closed (RFC 9113 section 5.1): `error` is `.noError` after a complete exchange,
    /// else the code of the RST_STREAM that closed it (sent or received).
    func http2StreamClosed(_ streamID: Int32, error: HTTP2ErrorCode)

    /// nghttp2 wants response body bytes for a DATA frame of this stream (at most `buffer.count`,
    /// already limited by the flow-control windows and the frame size, RFC 9113 section 6.9).
    func http2ReadResponseBody(_ streamID: Int32, into buffer: UnsafeMutableRawBufferPointer) -> HTTP2Session.BodyRead
}
