// The head of a request as received (RFC 9112 section 3, RFC 9110 section 6).

import GatewayIO
import GatewayRules

/// The head of a request: method, request-target, version, header fields and derived framing.
///
/// Protocol-agnostic: HTTP/1.1 fills it from the request line and header section; HTTP/2 fills it
/// from pseudo-header fields (`:method`, `:path`; `:authority` as `Host`, added when absent) with
/// version 2.0 (RFC 9113 section 8.3.1, `HTTP2RequestHeadBuilder`).
public struct HTTPRequestHead: Sendable {
    /// The method token (RFC 9110 section 9).
    public var method: HTTPMethod
    /// The request-target exactly as received (origin-form: path and query), byte for byte. This is
    /// what a signature binds (DESIGN.md section 1, "request-target"). Read-only: it was checked
    /// against the normal form; to send another target upstream set `HTTPForward.target`.
    public internal(set) var target: [UInt8]
    /// Length of the path part of `target` (index of the first `?`, or `target.count`).
    public internal(set) var pathLength: Int
    /// Protocol version of the request.
    public var version: HTTPVersion
    /// Header fields in received order and case.
    public var headers: HTTPHeaders
    /// How the request body is delimited (Content-Length, chunked, none). HTTP/2: `.none` when the
    /// HEADERS frame ended the stream, `.contentLength` from `content-length`, else `.chunked` (DATA
    /// frames of a length not known in advance).
    public var framing: HTTPBodyFraming
    /// Whether the client wants the connection kept open (RFC 9112 section 9.3: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`). Always true for HTTP/2.
    public var keepAlive: Bool
    /// Whether the request carries `Expect: 100-continue` and a body (RFC 9110 section 10.1.1; HTTP/1.1,
    /// and HTTP/2 where the interim response is a HEADERS frame, RFC 9113 section 8.1).
    public var expectsContinue: Bool

    /// A head from parts; the target is checked against `policy` (normal form, DESIGN.md section 5).
    /// - Throws: the `HTTPError` of the first normal-form rule `target` breaks.
    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
                headers: HTTPHeaders = HTTPHeaders(), framing: HTTPBodyFraming = .none,
                keepAlive: Bool = true, expectsContinue: Bool = false,
                policy: RequestTargetPolicy = RequestTargetPolicy()) throws(HTTPError) {
        let bytes = Array(target.utf8)
        let pathLength: Int
        do throws(TargetViolation) { pathLength = try policy.validate(target) } catch { throw HTTPError(error) }
        self.init(method: method, target: bytes, pathLength: pathLength, version: version, headers: headers,
                  framing: framing, keepAlive: keepAlive, expectsContinue: expectsContinue)
    }

    /// Memberwise (no validation): for parsers that validated every part.
    init(method: HTTPMethod, target: [UInt8], pathLength: Int, version: HTTPVersion, headers: HTTPHeaders,
         framing: HTTPBodyFraming, keepAlive: Bool, expectsContinue: Bool) {
        self.method = method
        self.target = target
        self.pathLength = pathLength
        self.version = version
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// The path bytes (the target up to the first `?`), in normal form.
    public var path: ArraySlice<UInt8> { target[0..<pathLength] }
    /// The query bytes after `?`, exactly as sent, or nil when the target has no `?`.
    public var query: ArraySlice<UInt8>? {
        pathLength < target.count ? target[(pathLength + 1)...] : nil
    }
    /// The target as a String (convenience; not for the hot path).
    public var targetString: String { String(decoding: target, as: UTF8.self) }
    /// The path as a String (convenience; not for the hot path).
    public var pathString: String { String(decoding: path, as: UTF8.self) }
    /// The query as a String, or nil (convenience; not for the hot path).
    public var queryString: String? { query.map { String(decoding: $0, as: UTF8.self) } }

    /// The declared Content-Length, or nil when the body is chunked or absent.
    public var contentLength: Int? {
        if case .contentLength(let n) = framing { return n }
        return nil
    }
}
