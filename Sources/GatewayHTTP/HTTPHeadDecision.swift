// What a handler decides once a request head is in.

import GatewayIO

/// A handler's decision after the request head, before any body byte is read.
public enum HTTPHeadDecision: Sendable {
    /// Read the body, at most `bodyLimit` decoded bytes (a larger Content-Length is refused with 413
    /// `body_too_large` before reading; a chunked body is refused as soon as it passes the limit).
    /// Answers `100 Continue` first when the client sent `Expect: 100-continue`.
    case accept(bodyLimit: Int)
    /// Answer now without reading the body (e.g. 404, 405). If the request announced a body the
    /// connection is closed after the response (its bytes are drained briefly, never parsed).
    case respond(HTTPResponse)
    /// `respond(_:)` with an opaque value handed back in `HTTPAccessRecord.annotation` (e.g. the
    /// route and reason for the handler's access log).
    case respondAnnotated(HTTPResponse, annotation: any Sendable)
}
