// What a handler decides once a request head is in.

import GatewayIO

/// A handler's decision after the request head, before any body byte is read, with the request's
/// context (`HTTPHandler.RequestContext`), handed back to `handle` and `requestCompleted`.
public enum HTTPHeadDecision<Context: Sendable>: Sendable {
    /// Read the body, at most `bodyLimit` decoded bytes (a larger Content-Length is refused with 413
    /// `body_too_large` before reading; a chunked body is refused as soon as it passes the limit).
    /// Answers `100 Continue` first when the client sent `Expect: 100-continue`.
    case accept(bodyLimit: Int, context: Context)
    /// Answer now without reading the body (e.g. 404, 405); `handle` is not called, `context` goes
    /// to `requestCompleted`. If the request announced a body the connection is closed after the
    /// response (its bytes are drained briefly, never parsed).
    case respond(HTTPResponse, context: Context)

    /// The context, whichever the decision.
    public var context: Context {
        switch self {
        case .accept(_, let context), .respond(_, let context): return context
        }
    }
}

extension HTTPHeadDecision where Context == Void {
    /// `accept(bodyLimit:context:)` for a handler without per-request context.
    public static func accept(bodyLimit: Int) -> HTTPHeadDecision { .accept(bodyLimit: bodyLimit, context: ()) }

    /// `respond(_:context:)` for a handler without per-request context.
    public static func respond(_ response: HTTPResponse) -> HTTPHeadDecision { .respond(response, context: ()) }
}
