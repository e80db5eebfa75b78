// A complete response produced by a handler (or by the server for its own errors).

import GatewayIO

/// A complete response: status, header fields and the whole body.
///
/// The server frames it: it removes any `Content-Length`, `Transfer-Encoding`, `Connection` and
/// `Keep-Alive` fields the handler set, then writes `Content-Length` (except for 204 and 304,
/// RFC 9110 sections 8.6 / 15.3.5 / 15.4.5), `Date` when absent, and `Connection` as needed. A handler
/// that sets `Connection: close` gets the connection closed after the response. The body is not sent
/// in answer to HEAD (its length still is).
public struct HTTPResponse: Sendable {
    /// Final status code, 200...999 (RFC 9110 section 15); anything else is sent as 500.
    public var status: Int
    /// Header fields, in order.
    public var headers: HTTPHeaders
    /// The body bytes.
    public var body: [UInt8]

    /// A response from parts.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The standard reason phrase for `status` (RFC 9110 section 15), or an empty phrase.
    public static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return ""
        }
    }
}
