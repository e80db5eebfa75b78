// Errors the proxy core answers by itself, with stable codes.

import GatewayIO
import GatewayRules

/// A failure the proxy core detects and answers itself (the handler renders the body through
/// `HTTPHandler.errorResponse(for:head:)`).
///
/// `code` is a stable snake_case identifier meant for clients, logs and metrics; `status` is the
/// HTTP status the server answers with. Every error except the upstream ones closes the downstream
/// connection after the answer (the framing of what follows can no longer be trusted).
public enum HTTPError: String, Error, Sendable, Hashable, CaseIterable {
    // MARK: 400 - malformed request (RFC 9112)

    /// Request line is not `method SP request-target SP HTTP-version` (RFC 9112 section 3).
    case badRequestLine = "bad_request_line"
    /// A field line is malformed: name not a token, whitespace before the colon, control bytes in
    /// the value (RFC 9112 section 5, RFC 9110 section 5.5).
    case badHeader = "bad_header"
    /// A field line starts with whitespace (obsolete line folding, RFC 9112 section 5.2).
    case obsoleteLineFolding = "obs_fold"
    /// A line ends with a bare LF, or a bare CR appears (RFC 9112 section 2.2; request smuggling guard).
    case bareLineEnding = "bare_line_ending"
    /// The `Host` field is missing on an HTTP/1.1 request, appears more than once, or its value is not
    /// `uri-host [ ":" port ]` (`a b`, `a/b`, empty, ...; RFC 9112 section 3.2, RFC 9110 section 7.2,
    /// `HTTPHostSyntax`).
    case hostInvalid = "host_invalid"
    /// The method holds a lower-case letter (`post`, `Delete`): applications behind the gateway often
    /// fold the method's case, so a route matched on `POST` could be passed by `post` (RFC 9110
    /// section 9.1 makes methods case-sensitive; nginx refuses such methods too). `HTTPMethod.init(requestToken:)`.
    case methodInvalid = "method_invalid"
    /// Content-Length is not a single `1*DIGIT` value (RFC 9110 section 8.6).
    case badContentLength = "bad_content_length"
    /// Several Content-Length fields or a list value, even when equal (refused as smuggling risk).
    case duplicateContentLength = "duplicate_content_length"
    /// Transfer-Encoding other than exactly `chunked`, or on HTTP/1.0 (RFC 9112 section 6.1).
    case badTransferEncoding = "bad_transfer_encoding"
    /// Both Content-Length and Transfer-Encoding (RFC 9112 section 6.1: refused and closed).
    case contentLengthWithTransferEncoding = "content_length_with_transfer_encoding"
    /// Malformed chunked framing: size, extension, missing CRLF, size overflow (RFC 9112 section 7.1).
    case badChunk = "bad_chunk"
    /// Malformed trailer section (RFC 9112 section 7.1.2).
    case badTrailer = "bad_trailer"

    // MARK: 400 - request-target not in normal form (DESIGN.md section 5, `GatewayRules.RequestTargetPolicy`)

    /// The target is not in origin-form: absolute-form, authority-form and asterisk-form are refused
    /// (RFC 9112 section 3.2).
    case targetNotOriginForm = "target_not_origin_form"
    /// The path has an empty segment (`//`).
    case targetEmptySegment = "target_empty_segment"
    /// The path has a `.` or `..` segment (RFC 3986 section 5.2.4).
    case targetDotSegment = "target_dot_segment"
    /// The path percent-encodes an unreserved character (`%41`, `%2E`, ...; RFC 3986 section 6.2.2.2).
    case targetEncodedUnreserved = "target_encoded_unreserved"
    /// The path percent-encodes a separator: `/` (`%2F`), `\` (`%5C`) or a control byte (`%00`-`%1F`, `%7F`).
    case targetEncodedSeparator = "target_encoded_separator"
    /// The path has `%` not followed by two hex digits.
    case targetBadEscape = "target_bad_escape"
    /// The path has a percent escape with lower-case hex digits (`%3a`; normal form is upper case,
    /// RFC 3986 section 6.2.2.1).
    case targetLowercaseEscape = "target_lowercase_escape"
    /// The path has a byte outside `pchar` / `/` (e.g. `\`, `"`, `{`, space, control, non-ASCII),
    /// or the target holds a `#` or a control byte.
    case targetBadByte = "target_bad_byte"
    /// The path has a `;` (path parameters are normalized away by some upstreams, so a route could be
    /// matched one way and served another). Allowed by `RequestTargetPolicy.allowSemicolonInPath`.
    case targetPathParameter = "target_path_parameter"

    // MARK: other client errors

    /// Request body (decoded bytes) over the limit the handler accepted (RFC 9110 section 15.5.14).
    case bodyTooLarge = "body_too_large"
    /// Header section larger than the configured limit (RFC 6585 section 5).
    case headerTooLarge = "header_too_large"
    /// More header fields than the configured limit (RFC 6585 section 5).
    case tooManyHeaders = "too_many_headers"
    /// Request line longer than the configured limit (RFC 9110 section 15.5.15).
    case requestLineTooLong = "request_line_too_long"
    /// HTTP version other than 1.0 / 1.1 on the HTTP/1 wire (RFC 9110 section 15.6.6).
    case versionNotSupported = "version_not_supported"
    /// `Expect` with something other than `100-continue` (RFC 9110 section 10.1.1).
    case expectationFailed = "expectation_failed"
    /// The header section did not arrive within the header timeout.
    case headerTimeout = "header_timeout"
    /// The body was not complete within the body timeout, counted from the end of the header section.
    case bodyTimeout = "body_timeout"

    // MARK: server side

    /// The handler released its responder without answering (a handler bug; answered 500).
    case handlerDidNotRespond = "handler_did_not_respond"
    /// The server is shutting down and refuses new work on this connection (503).
    case shuttingDown = "shutting_down"
    /// The request was still in progress when the shutdown's grace period (`timeouts.drain`) ran
    /// out, and the server closed its connection: cut by the server, not by the client (which a
    /// 499 means). Never answered; reported in the access record (status 503 when no response had
    /// started, else the status being sent; `aborted`).
    case drainDeadline = "drain_deadline"
    /// The client took no response bytes for longer than the write timeout (`HTTPServerTimeouts.write`; 60 s in the gateway, not configurable yet): over
    /// HTTP/1.1 its socket accepted nothing, over HTTP/2 the stream's (or every stream's)
    /// flow-control window stayed closed (RFC 9113 section 6.9). Cut by the server, not by the
    /// client, as nginx's "client timed out" on `send_timeout`. Reported in the access record
    /// (`aborted`; 408 when no response had started), never answered.
    case clientStalled = "client_stalled"

    // MARK: 502 / 504 - upstream

    /// The upstream could not be reached: connection refused, no such socket path, unreachable,
    /// pool shut down, or the pool belongs to another event loop group.
    case upstreamUnavailable = "upstream_unavailable"
    /// The upstream reset or closed the connection before the response was complete.
    case upstreamReset = "upstream_reset"
    /// The upstream answered something that is not a well-formed HTTP/1.1 response.
    case upstreamBadResponse = "upstream_bad_response"
    /// The TLS handshake with an `https://` upstream failed (certificate not trusted or not for the
    /// upstream's name, no common protocol version or cipher, the upstream closed during it).
    case upstreamTLSFailed = "upstream_tls_failed"
    /// No endpoint of the upstream has an address: its DNS names do not resolve (yet); the gateway
    /// keeps resolving them in the background (503, with `Retry-After`).
    case upstreamUnresolved = "upstream_unresolved"
    /// Connecting to the upstream took longer than the connect timeout.
    case upstreamConnectTimeout = "upstream_connect_timeout"
    /// The upstream response head did not arrive in time, or its body stalled longer than the response timeout.
    case upstreamTimeout = "upstream_timeout"

    /// Stable identifier, e.g. `"bad_chunk"`.
    public var code: String { rawValue }

    /// The HTTP status answered for this error.
    public var status: Int {
        switch self {
        case .bodyTooLarge: return 413
        case .headerTooLarge, .tooManyHeaders: return 431
        case .requestLineTooLong: return 414
        case .versionNotSupported: return 505
        case .expectationFailed: return 417
        case .headerTimeout, .bodyTimeout, .clientStalled: return 408
        case .handlerDidNotRespond: return 500
        case .shuttingDown, .drainDeadline, .upstreamUnresolved: return 503
        case .upstreamUnavailable, .upstreamReset, .upstreamBadResponse, .upstreamTLSFailed: return 502
        case .upstreamConnectTimeout, .upstreamTimeout: return 504
        default: return 400
        }
    }

    /// Whether this is an upstream failure (502 / 504) rather than a problem with the request.
    public var isUpstreamFailure: Bool { status == 502 || status == 504 || self == .upstreamUnresolved }
}

extension HTTPError {
    /// The 400 answer for a request-target that breaks the normal form (`RequestTargetPolicy`): one
    /// `target_*` code per rule; an empty target is a malformed request line.
    public init(_ violation: TargetViolation) {
        switch violation.rule {
        case .empty: self = .badRequestLine
        case .notOriginForm: self = .targetNotOriginForm
        case .emptySegment: self = .targetEmptySegment
        case .dotSegment: self = .targetDotSegment
        case .encodedUnreserved: self = .targetEncodedUnreserved
        case .encodedSeparator: self = .targetEncodedSeparator
        case .badEscape: self = .targetBadEscape
        case .lowercaseEscape: self = .targetLowercaseEscape
        case .badByte: self = .targetBadByte
        case .pathParameter: self = .targetPathParameter
        }
    }
}
