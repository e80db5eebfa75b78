// A handler's answer to one request.

/// A handler's answer to one request, as its responder hands it to the connection.
@usableFromInline
enum HTTPAnswer: Sendable {
    case response(HTTPResponse)
    case forward(HTTPForward)
    case error(HTTPError)
}
