// HTTP/1.1 request parser (RFC 9112, RFC 9110) as a value-type state machine.

import GatewayIO
import GatewayRules

/// Parses a stream of HTTP/1.1 (and 1.0) requests, strictly, as a value-type state machine.
///
/// Feed bytes in pieces of any size; each call to `parse(_:)` consumes some of them and returns one
/// event. Call again with the remaining bytes (possibly none) until `.needMoreData`:
///
///     var parser = HTTP1RequestParser()
///     var offset = 0
///     loop: while true {
///         let step = parser.parse(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
///         // body ranges are relative to the buffer passed in: shift by `offset`
///         offset += step.consumed
///         switch step.event { case .needMoreData: break loop; ... }
///     }
///
/// Events: `.head` once the header section is complete and valid, then zero or more `.body` (decoded
/// bytes, as a range of the input passed to that call), then `.end` with the trailer fields; then the
/// next request of a pipeline. After `.head`, call `setBodyLimit(_:)` to bound the decoded body.
/// Any violation yields `.error` and the parser stays failed (the connection must be closed).
///
/// Strictness (request smuggling guards): CRLF line endings only (bare LF or CR -> `bare_line_ending`),
/// no obs-fold, no whitespace before a field colon, one Content-Length value (duplicates refused even
/// when equal), Transfer-Encoding exactly `chunked` and never with Content-Length nor on HTTP/1.0,
/// HTTP/1.1 requests need exactly one Host, an HTTP/1.0 request at most one, and its value must be
/// `uri-host [ ":" port ]` (RFC 9112 section 3.2, `HTTPHostSyntax`), request-target in normal form
/// (`GatewayRules.RequestTargetPolicy`). Up to the head limit, empty lines before the request line are ignored
/// (RFC 9112 section 2.2).
public struct HTTP1RequestParser: Sendable {
    /// One parse result.
    public enum Event: Sendable, Equatable {
        /// All input was consumed without completing anything; feed more.
        case needMoreData
        /// A complete, valid request head.
        case head(HTTPRequestHead)
        /// Decoded body bytes: this range of the input passed to the call.
        case body(Range<Int>)
        /// The request is complete; chunked trailers (empty otherwise). The parser is ready for the next request.
        case end(trailers: HTTPHeaders)
        /// The request is invalid; the parser stays failed.
        case error(HTTPError)

        /// Equal when of the same kind with equal payloads (heads compare method, target and fields).
        public static func == (a: Event, b: Event) -> Bool {
            switch (a, b) {
            case (.needMoreData, .needMoreData): return true
            case (.head(let x), .head(let y)):
                return x.method == y.method && x.target == y.target && x.headers == y.headers
            case (.body(let x), .body(let y)): return x == y
            case (.end(let x), .end(let y)): return x == y
            case (.error(let x), .error(let y)): return x == y
            default: return false
            }
        }
    }

    /// What one call consumed and produced.
    public struct Step: Sendable, Equatable {
        /// Input bytes consumed (the caller passes the rest next time).
        public var consumed: Int
        /// The event.
        public var event: Event
    }

    private enum State: Sendable {
        case head
        case body
        case failed(HTTPError)
    }

    /// Limits applied to every request.
    public let limits: HTTP1ParserLimits
    /// Normal-form rules for request-targets.
    public let targetPolicy: RequestTargetPolicy

    private var state: State = .head
    private var lines = HTTP1LineReader()
    private var headBytes = 0
    private var sawRequestLine = false
    private var method = HTTPMethod.get
    private var target: [UInt8] = []
    private var pathLength = 0
    private var version = HTTPVersion.http1_1
    private var headers = HTTPHeaders()
    private var body = HTTP1BodyDecoder(framing: .none, limits: HTTP1ParserLimits())

    /// A parser at the start of a connection.
    public init(limits: HTTP1ParserLimits = HTTP1ParserLimits(), targetPolicy: RequestTargetPolicy = RequestTargetPolicy()) {
        self.limits = limits.clamped
        self.targetPolicy = targetPolicy
    }

    /// Whether the parser is between requests with nothing buffered (a clean point to close).
    public var isIdle: Bool {
        if case .head = state { return !sawRequestLine && headBytes == 0 && lines.partial.isEmpty }
        return false
    }

    /// Whether bytes of a request head have been received but the head is not complete.
    public var isReadingHead: Bool {
        if case .head = state { return sawRequestLine || headBytes > 0 || !lines.partial.isEmpty }
        return false
    }

    /// Decoded body bytes seen so far for the current request.
    public var bodyBytesDecoded: Int { body.decoded }

    /// Bounds the decoded body of the current request (call after `.head`); more is `.bodyTooLarge`.
    public mutating func setBodyLimit(_ limit: Int) {
        body.limit = max(0, limit)
    }

    /// Consumes bytes from `input` and returns the next event (see the type's documentation).
    public mutating func parse(_ input: UnsafeRawBufferPointer) -> Step {
        switch state {
        case .failed(let e):
            return Step(consumed: 0, event: .error(e))
        case .body:
            let (consumed, event) = body.decode(input)
            switch event {
            case .needMoreData: return Step(consumed: consumed, event: .needMoreData)
            case .data(let r): return Step(consumed: consumed, event: .body(r))
            case .end(let trailers):
                resetForNextRequest()
                return Step(consumed: consumed, event: .end(trailers: trailers))
            case .error(let e):
                state = .failed(e)
                return Step(consumed: consumed, event: .error(e))
            }
        case .head:
            return parseHead(input)
        }
    }

    private mutating func resetForNextRequest() {
        state = .head
        headBytes = 0
        sawRequestLine = false
        target = []
        headers = HTTPHeaders()
    }

    private mutating func fail(_ e: HTTPError, consumed: Int) -> Step {
        state = .failed(e)
        return Step(consumed: consumed, event: .error(e))
    }

    private mutating func parseHead(_ input: UnsafeRawBufferPointer) -> Step {
        var i = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: input[i...])
            let budget = limits.maxHeaderBytes - headBytes - 1  // bytes before the LF
            let lineLimit = sawRequestLine ? budget : min(budget, limits.maxStartLineBytes + 1)
            switch lines.scan(rest, limit: max(0, lineLimit)) {
            case .incomplete:
                return Step(consumed: input.count, event: .needMoreData)
            case .tooLong:
                let e: HTTPError = (!sawRequestLine && lineLimit < budget) ? .requestLineTooLong : .headerTooLarge
                return fail(e, consumed: i)
            case .complete(let end):
                var lineLength = 0
                // Move the reader out so that processing the line may mutate `self` (no copy: the
                // buffer is moved, not shared).
                var reader = lines
                lines = HTTP1LineReader()
                let outcome: LineOutcome = reader.withLine(rest, end: end) { line in
                    lineLength = line.count + 1
                    return self.processLine(line)
                }
                lines = reader
                i += end
                headBytes += lineLength
                switch outcome {
                case .more: continue
                case .failed(let e): return fail(e, consumed: i)
                case .complete(let head):
                    return Step(consumed: i, event: .head(head))
                }
            }
        }
    }

    private enum LineOutcome {
        case more
        case failed(HTTPError)
        case complete(HTTPRequestHead)
    }

    private mutating func processLine(_ line: UnsafeRawBufferPointer) -> LineOutcome {
        let field = sawRequestLine  // the start line is scanned for a bare CR here; a field line by appendField
        guard let content = field ? HTTP1LineReader.fieldLineContent(of: line) : HTTP1LineReader.content(of: line) else {
            return .failed(.bareLineEnding)
        }
        if !field {
            if content.isEmpty { return .more }  // RFC 9112 section 2.2: ignore empty lines before the request line
            if let e = parseRequestLine(content) { return .failed(e) }
            sawRequestLine = true
            return .more
        }
        if content.isEmpty { return finishHead() }
        if headers.count >= limits.maxHeaderCount { return .failed(.tooManyHeaders) }
        if let e = HTTP1LineReader.appendField(content, to: &headers) { return .failed(e) }
        return .more
    }

    /// `method SP request-target SP HTTP-version` (RFC 9112 section 3).
    private mutating func parseRequestLine(_ line: UnsafeRawBufferPointer) -> HTTPError? {
        let sp1 = HTTP1Syntax.tokenLength(line)
        guard sp1 > 0, sp1 < line.count, line[sp1] == HTTP1Syntax.sp else { return .badRequestLine }
        var sp2 = sp1 + 1
        while sp2 < line.count && line[sp2] != HTTP1Syntax.sp { sp2 += 1 }
        guard sp2 < line.count, sp2 > sp1 + 1 else { return .badRequestLine }
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[(sp2 + 1)...])
        guard let v = HTTP1RequestParser.parseVersion(versionBytes) else { return .badRequestLine }
        guard v.major == 1 && (v.minor == 0 || v.minor == 1) else { return .versionNotSupported }
        let targetBytes = UnsafeRawBufferPointer(rebasing: line[(sp1 + 1)..<sp2])
        let pathLength: Int
        do throws(TargetViolation) { pathLength = try targetPolicy.validate(targetBytes) } catch { return HTTPError(error) }
        guard let m = HTTPMethod(requestToken: UnsafeRawBufferPointer(rebasing: line[0..<sp1])) else { return .methodInvalid }
        method = m
        target = Array(targetBytes)
        self.pathLength = pathLength
        version = v
        headers = HTTPHeaders(reservingFields: 16, bytes: 512)
        return nil
    }

    /// `HTTP/` DIGIT `.` DIGIT (RFC 9112 section 2.3).
    static func parseVersion(_ b: UnsafeRawBufferPointer) -> HTTPVersion? {
        guard b.count == 8, b[0] == 0x48, b[1] == 0x54, b[2] == 0x54, b[3] == 0x50, b[4] == 0x2F,
              b[6] == 0x2E, (0x30...0x39).contains(b[5]), (0x30...0x39).contains(b[7]) else { return nil }
        return HTTPVersion(major: Int(b[5] - 0x30), minor: Int(b[7] - 0x30))
    }

    /// Semantic checks of the complete header section; decides framing and persistence.
    private mutating func finishHead() -> LineOutcome {
        let f = HTTP1FramingFields(headers)

        let isHTTP11 = version.minor == 1
        // RFC 9112 section 3.2: 400 for a missing Host on HTTP/1.1, more than one, or an invalid value.
        if f.hostCount > 1 || (isHTTP11 && f.hostCount == 0) || f.hostMalformed { return .failed(.hostInvalid) }
        if f.transferEncodingSeen && f.contentLengthCount > 0 { return .failed(.contentLengthWithTransferEncoding) }
        if f.transferEncodingSeen && (!isHTTP11 || !f.transferEncodingAllChunked || f.transferEncodingElements != 1) {
            return .failed(.badTransferEncoding)
        }
        if f.contentLengthCount > 1 || f.contentLengthIsList { return .failed(.duplicateContentLength) }
        if f.contentLengthCount == 1 && f.contentLength == nil { return .failed(.badContentLength) }
        if isHTTP11 && f.expectOther { return .failed(.expectationFailed) }

        let framing: HTTPBodyFraming
        if f.transferEncodingSeen {
            framing = .chunked
        } else if let contentLength = f.contentLength {
            framing = contentLength == 0 ? .none : .contentLength(contentLength)
        } else {
            framing = .none
        }
        let keepAlive = isHTTP11 ? !f.connectionClose : (f.connectionKeepAlive && !f.connectionClose)
        let head = HTTPRequestHead(method: method, target: target, pathLength: pathLength, version: version,
                                   headers: headers, framing: framing, keepAlive: keepAlive,
                                   expectsContinue: isHTTP11 && f.expectContinue && framing.hasBody)
        body = HTTP1BodyDecoder(framing: framing, limits: limits)
        state = .body
        return .complete(head)
    }
}
