// One HTTP/2 request header block (or trailer block) turned into an HTTPRequestHead (RFC 9113 section 8.3).

import GatewayIO
import GatewayRules

/// Collects the decoded fields of one header block as nghttp2 emits them and builds the same
/// `HTTPRequestHead` the HTTP/1.1 parser builds: method from `:method`, target from `:path`, version
/// 2.0, `Host` from `:authority` (added when absent), fields in received order, framing from
/// `content-length` and END_STREAM.
///
/// nghttp2 (HTTP messaging on) already enforces RFC 9113 sections 8.2.1, 8.2.2 and 8.3: missing,
/// duplicated, unknown or invalid pseudo-header fields, pseudo-header fields after regular ones or in
/// trailers, upper-case names, connection-specific fields (`Connection`, `Keep-Alive`,
/// `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`, `TE` other than `trailers`), several
/// `content-length` values. This builder adds what nghttp2 leaves to the application:
/// - field values with control bytes other than HTAB (RFC 9110 section 5.5; the HTTP/1.1 rule);
/// - `:authority` with userinfo, several `host` fields, or a `host` that differs from `:authority`
///   (RFC 9113 section 8.3.1); an authority that is not `host[:port]` (`a:b:c`, `h:99999`, `[::1`,
///   `user@h` in `host`) is refused `400 host_invalid`, as HTTP/1.1 refuses such a `Host`;
/// - the request-target rules of `RequestTargetPolicy` on `:path`, `CONNECT` refused, `Expect` other than
///   `100-continue` (the same answers as HTTP/1.1);
/// - the decoded header list size (name + value + 32 per field, RFC 9113 section 6.5.2) and field
///   count limits, and a hard bound far above them for HPACK bombs (RFC 9113 section 10.5.1);
/// - several `cookie` fields joined with `; ` into one (RFC 9113 section 8.2.3), as HTTP/1.1 expects.
struct HTTP2RequestHeadBuilder {
    /// What the block is.
    enum Kind { case request, trailers }

    /// How a finished block is handled.
    enum Outcome {
        /// A valid request head.
        case head(HTTPRequestHead)
        /// Valid trailer fields.
        case trailers(HTTPHeaders)
        /// A well-formed request the server refuses with this error response on the stream.
        case refused(HTTPError)
        /// A malformed request: RST_STREAM `PROTOCOL_ERROR` (RFC 9113 section 8.1.1).
        case malformed
    }

    /// What adding one field did.
    enum AddResult {
        /// Stored (or counted only, once over a limit).
        case ok
        /// Past the hard bound: the connection is ended (GOAWAY `ENHANCE_YOUR_CALM`).
        case abusive
    }

    let streamID: Int32
    let kind: Kind
    /// Decoded header list size so far (RFC 9113 section 6.5.2), in bytes.
    private(set) var listSize = 0
    /// Regular fields so far.
    private(set) var fieldCount = 0
    private let listLimit: Int
    private let countLimit: Int
    private var method: HTTPMethod?
    private var path: [UInt8]?
    private var authority: [UInt8]?
    private var headers = HTTPHeaders(reservingFields: 16, bytes: 512)
    private var cookie: [UInt8] = []
    private var hasCookie = false
    private var hostCount = 0
    private var malformed = false
    private var refusal: HTTPError?

    /// A builder for the block of `streamID`, with the header list size limit in bytes and the
    /// field count limit.
    init(streamID: Int32, kind: Kind, listLimit: Int, countLimit: Int) {
        self.streamID = streamID
        self.kind = kind
        self.listLimit = listLimit
        self.countLimit = countLimit
    }

    /// Method, when `:method` was seen (for the access record of a refused request).
    var methodSeen: HTTPMethod? { method }
    /// `:path` bytes, when seen (for the access record of a refused request).
    var targetSeen: [UInt8]? { path }

    /// Adds one decoded field (name lower-case, validated by nghttp2).
    mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> AddResult {
        listSize += name.count + value.count + 32
        if listSize > 2 * listLimit + 4096 || fieldCount > 2 * countLimit + 16 { return .abusive }
        if listSize > listLimit {
            if refusal == nil { refusal = .headerTooLarge }
            return .ok
        }
        guard let first = name.first else {
            malformed = true
            return .ok
        }
        if first == HTTP1Syntax.colon {
            switch name.count {
            case 7 where HTTP1Syntax.equalsLowercaseLiteral(name, ":method"):
                if !value.isEmpty && value.allSatisfy(HTTP1Syntax.isTchar) {
                    if let m = HTTPMethod(requestToken: value) {
                        method = m
                    } else {
                        // The same `400 method_invalid` as over HTTP/1.1 (answered on the stream).
                        method = HTTPMethod(validatedToken: value)
                        if refusal == nil { refusal = .methodInvalid }
                    }
                } else {
                    malformed = true
                }
            case 5 where HTTP1Syntax.equalsLowercaseLiteral(name, ":path"):
                path = Array(value)
            case 10 where HTTP1Syntax.equalsLowercaseLiteral(name, ":authority"):
                authority = Array(value)
            default:
                break  // :scheme (any scheme is accepted); nghttp2 refuses the others
            }
            return .ok
        }
        fieldCount += 1
        if fieldCount > countLimit {
            if refusal == nil { refusal = .tooManyHeaders }
            return .ok
        }
        if refusal != nil || malformed { return .ok }
        do {
            try HTTPHeaders.validate(name: name, value: value)
        } catch {
            malformed = true
            return .ok
        }
        switch name.count {
        case 4 where HTTP1Syntax.equalsLowercaseLiteral(name, "host"):
            hostCount += 1
        case 6 where HTTP1Syntax.equalsLowercaseLiteral(name, "cookie"):
            if hasCookie { cookie.append(contentsOf: [0x3B, 0x20]) }  // "; "
            cookie.append(contentsOf: value)
            hasCookie = true
            return .ok
        default:
            break
        }
        headers.appendUnchecked(name: name, value: value)
        return .ok
    }

    /// The outcome once the block is complete; `endStream` is the END_STREAM flag of its HEADERS frame.
    /// Call once: the fields move into the outcome (so that adding `host` or `cookie` to them copies
    /// nothing), the builder keeps none.
    mutating func finish(endStream: Bool, policy: RequestTargetPolicy) -> Outcome {
        if malformed { return .malformed }
        var fields = headers
        headers = HTTPHeaders()
        if hasCookie {
            cookie.withUnsafeBytes { c in
                HTTPHeaders.withUTF8("cookie") { n in fields.appendUnchecked(name: n, value: c) }
            }
        }
        if kind == .trailers {
            if let refusal { return .refused(refusal) }
            return .trailers(fields)
        }
        guard let method else { return .malformed }
        if method == .connect { return .refused(refusal ?? .targetNotOriginForm) }  // no tunnels (RFC 9113 section 8.5)
        guard let path else { return .malformed }
        if let authority, authority.contains(0x40) { return .malformed }  // userinfo (RFC 9113 section 8.3.1)
        if hostCount > 1 { return .malformed }
        if let authority {
            if hostCount == 1 {
                let same = fields.firstBytes("host").map { host in
                    host.withUnsafeBytes { h in authority.withUnsafeBytes { a in HTTP1Syntax.equalsCaseInsensitive(h, a) } }
                } ?? false
                if !same { return .malformed }
            } else {
                authority.withUnsafeBytes { a in
                    HTTPHeaders.withUTF8("host") { n in fields.appendUnchecked(name: n, value: a) }
                }
            }
        } else if hostCount == 0 {
            return .malformed
        }
        if let refusal { return .refused(refusal) }
        let validated: Result<Int, HTTPError> = path.withUnsafeBytes { p in
            do throws(TargetViolation) { return .success(try policy.validate(p)) } catch { return .failure(HTTPError(error)) }
        }
        let pathLength: Int
        switch validated {
        case .success(let n): pathLength = n
        case .failure(let error): return .refused(error)
        }
        let f = HTTP1FramingFields(fields)
        // `:authority` (now also `host`) or a lone `host` must be `host[:port]` as over HTTP/1.1
        // (RFC 9112 section 3.2, RFC 3986 section 3.2.2): the same `400 host_invalid`.
        if f.hostMalformed { return .refused(.hostInvalid) }
        if f.expectOther { return .refused(.expectationFailed) }
        let framing: HTTPBodyFraming
        if endStream {
            framing = .none
        } else if let length = f.contentLength {
            framing = length == 0 ? .none : .contentLength(length)
        } else {
            framing = .chunked
        }
        return .head(HTTPRequestHead(method: method, target: path, pathLength: pathLength, version: .http2,
                                     headers: fields, framing: framing, keepAlive: true,
                                     expectsContinue: f.expectContinue && framing.hasBody))
    }
}
