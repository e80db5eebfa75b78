// The handler as the (non-generic) connections call it.

import GatewayIO

/// An `HTTPHandler`'s calls with its `RequestContext` boxed (`HTTPContextBox`): what the connections
/// of a server call, so that they are not generic over the handler.
///
/// Made by the inlinable `init(_:)`, inlined into the module that creates the server
/// (`HTTPServer.init(configuration:group:handler:)`): the closures are compiled there for the
/// concrete handler type (direct calls, the context boxed and unboxed without a dynamic cast, no
/// generic metadata looked up per request), while the connection code, compiled once here, runs
/// fully specialized. Each closure runs where the `HTTPHandler` method it wraps runs.
@usableFromInline
struct HTTPHandlerCalls: Sendable {
    /// `HTTPHandler.headDecision`: the decision (its context taken out) and the context, boxed.
    @usableFromInline let headDecision: @Sendable (HTTPRequestHead, HTTPConnectionInfo) -> (HTTPHeadDecision<Void>, HTTPContextBox)
    /// `HTTPHandler.handle` with the boxed context; answers through the channel (as an `HTTPResponder`).
    @usableFromInline let handle: @Sendable (consuming HTTPRequest, HTTPContextBox, HTTPAnswerChannel) -> Void
    /// `HTTPHandler.errorResponse(for:head:context:)` with the boxed context (nil when no head was decided).
    @usableFromInline let errorResponse: @Sendable (HTTPError, HTTPRequestHead?, HTTPContextBox?) -> HTTPResponse
    /// `HTTPHandler.requestCompleted` with the boxed context (nil when no head was decided).
    @usableFromInline let requestCompleted: @Sendable (HTTPAccessRecord, HTTPContextBox?) -> Void
    /// `HTTPHandler.tlsHandshakeFinished`.
    @usableFromInline let tlsHandshakeFinished: @Sendable (TLSHandshakeReport) -> Void
    /// `HTTPHandler.connectionStarted`.
    @usableFromInline let connectionStarted: @Sendable (HTTPConnectionInfo) -> Void
    /// `HTTPHandler.connectionEnded`.
    @usableFromInline let connectionEnded: @Sendable (HTTPConnectionInfo) -> Void

    /// The calls of `handler` (retained by the closures).
    @inlinable
    init<Handler: HTTPHandler>(_ handler: Handler) {
        typealias Box = HTTPTypedContextBox<Handler.RequestContext>
        headDecision = { head, connection in
            switch handler.headDecision(for: head, connection: connection) {
            case .accept(let bodyLimit, let context): return (.accept(bodyLimit: bodyLimit), Box(context))
            case .respond(let response, let context): return (.respond(response), Box(context))
            }
        }
        handle = { request, context, channel in
            handler.handle(consume request, context: Box.unbox(context), responder: HTTPResponder(channel))
        }
        errorResponse = { error, head, context in
            handler.errorResponse(for: error, head: head, context: context.map { Box.unbox($0) })
        }
        requestCompleted = { record, context in
            handler.requestCompleted(record, context: context.map { Box.unbox($0) })
        }
        tlsHandshakeFinished = { report in handler.tlsHandshakeFinished(report) }
        connectionStarted = { connection in handler.connectionStarted(connection) }
        connectionEnded = { connection in handler.connectionEnded(connection) }
    }
}
