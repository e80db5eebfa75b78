// HTTP/1.1 response parser for the upstream side (RFC 9112 sections 4, 6.3, 7), value-type state machine.

import GatewayIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Parses the responses of an upstream HTTP/1.1 connection, as strictly as `HTTP1RequestParser`.
///
/// Before each response call `expectResponse(to:)` with the request method (a response to HEAD has
/// no body). Then feed bytes with `parse(_:)` exactly like the request parser: `.head`, `.body`
/// ranges, `.end`. Interim 1xx responses (100, 102, 103) are consumed silently; 101 is an error
/// (the proxy never asks the upstream to switch protocols). At end of input call `finish()`: it ends a
/// close-delimited body, and is an error anywhere else.
///
/// Framing (RFC 9112 section 6.3): no body for HEAD, 1xx, 204 and 304; `Transfer-Encoding: chunked`
/// is chunked, any other transfer coding (`gzip, chunked`, `gzip`) is refused, since the codings are
/// removed on the way and the client would get coded bytes as identity; Transfer-Encoding with
/// Content-Length, Transfer-Encoding on HTTP/1.0, several Content-Length fields or a bad value are
/// refused (strict); else Content-Length; else close-delimited. A status outside 100-599 is refused.
///
/// Every failure is reported as `.upstreamBadResponse` (or `.upstreamReset` from `finish()`);
/// `failureDetail` keeps the underlying syntax error for logs.
public struct HTTP1ResponseParser: Sendable {
    /// One parse result.
    public enum Event: Sendable {
        /// All input was consumed without completing anything; feed more.
        case needMoreData
        /// A complete final (non-1xx) response head.
        case head(HTTPResponseHead)
        /// Decoded body bytes: this range of the input passed to the call.
        case body(Range<Int>)
        /// The response is complete (trailers of a chunked body are dropped).
        case end
        /// The response is malformed or cut short; the connection must be closed.
        case error(HTTPError)
    }

    /// What one call consumed and produced.
    public struct Step: Sendable {
        /// Input bytes consumed.
        public var consumed: Int
        /// The event.
        public var event: Event
    }

    private enum State: Sendable {
        case idle
        case head
        case body
        case failed(HTTPError)
    }

    /// Limits applied to every response head.
    public let limits: HTTP1ParserLimits
    /// The syntax error behind the last `.upstreamBadResponse`, for logs.
    public private(set) var failureDetail: HTTPError?

    private var state: State = .idle
    private var requestWasHEAD = false
    private var lines = HTTP1LineReader()
    private var headBytes = 0
    private var sawStatusLine = false
    private var status = 0
    private var reason: [UInt8] = []
    private var version = HTTPVersion.http1_1
    private var headers = HTTPHeaders()
    private var body = HTTP1BodyDecoder(framing: .none, limits: HTTP1ParserLimits())
    /// Whether any byte of the current response has been received.
    public private(set) var receivedAnyByte = false

    /// A parser for a fresh upstream connection.
    public init(limits: HTTP1ParserLimits = HTTP1ParserLimits(maxHeaderBytes: 65536, maxHeaderCount: 200)) {
        self.limits = limits.clamped
    }

    /// Prepares for the response to a request with `method` (HEAD responses have no body).
    public mutating func expectResponse(to method: HTTPMethod) {
        requestWasHEAD = method == .head
        state = .head
        headBytes = 0
        sawStatusLine = false
        receivedAnyByte = false
        // `headers` is emptied (its storage kept for reuse) by the status line.
    }

    /// Whether the current response's head has been parsed and its body is being read.
    public var isReadingBody: Bool {
        if case .body = state { return true }
        return false
    }

    /// Whether the body in progress ends only when the upstream closes.
    public var isCloseDelimited: Bool {
        if case .body = state { return body.isCloseDelimited }
        return false
    }

    /// Consumes bytes from `input` and returns the next event.
    public mutating func parse(_ input: UnsafeRawBufferPointer) -> Step {
        if !input.isEmpty { receivedAnyByte = true }
        switch state {
        case .failed(let e):
            return Step(consumed: 0, event: .error(e))
        case .idle:
            if input.isEmpty { return Step(consumed: 0, event: .needMoreData) }
            return fail(.upstreamBadResponse, detail: .upstreamBadResponse, consumed: 0)
        case .body:
            let (consumed, event) = body.decode(input)
            switch event {
            case .needMoreData: return Step(consumed: consumed, event: .needMoreData)
            case .data(let r): return Step(consumed: consumed, event: .body(r))
            case .end:
                state = .idle
                return Step(consumed: consumed, event: .end)
            case .error(let e):
                return fail(.upstreamBadResponse, detail: e, consumed: consumed)
            }
        case .head:
            return parseHead(input)
        }
    }

    /// The upstream closed its side: ends a close-delimited body (`.end`), or reports `.upstreamReset`
    /// when a response was expected or incomplete. Idle (no response expected): `.needMoreData`.
    public mutating func finish() -> Event {
        switch state {
        case .idle: return .needMoreData
        case .failed(let e): return .error(e)
        case .body where body.isCloseDelimited:
            state = .idle
            return .end
        default:
            state = .failed(.upstreamReset)
            return .error(.upstreamReset)
        }
    }

    private mutating func fail(_ e: HTTPError, detail: HTTPError, consumed: Int) -> Step {
        state = .failed(e)
        failureDetail = detail
        return Step(consumed: consumed, event: .error(e))
    }

    private mutating func parseHead(_ input: UnsafeRawBufferPointer) -> Step {
        var i = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: input[i...])
            let budget = limits.maxHeaderBytes - headBytes - 1
            let lineLimit = sawStatusLine ? budget : min(budget, limits.maxStartLineBytes + 1)
            switch lines.scan(rest, limit: max(0, lineLimit)) {
            case .incomplete:
                return Step(consumed: input.count, event: .needMoreData)
            case .tooLong:
                return fail(.upstreamBadResponse, detail: .headerTooLarge, consumed: i)
            case .complete(let end):
                let lineLength: Int
                let outcome: LineOutcome
                if lines.partial.isEmpty {
                    // The usual case: the line lies whole in this input (no copy, no closure).
                    lineLength = end
                    outcome = processLine(UnsafeRawBufferPointer(rebasing: rest[0..<(end - 1)]))
                } else {
                    var length = 0
                    var reader = lines
                    lines = HTTP1LineReader()
                    outcome = reader.withLine(rest, end: end) { line in
                        length = line.count + 1
                        return self.processLine(line)
                    }
                    lines = reader
                    lineLength = length
                }
                i += end
                headBytes += lineLength
                switch outcome {
                case .more: continue
                case .failed(let e): return fail(.upstreamBadResponse, detail: e, consumed: i)
                case .interim:
                    headBytes = 0
                    sawStatusLine = false  // the next status line empties `headers`
                    continue
                case .complete(let head):
                    return Step(consumed: i, event: .head(head))
                }
            }
        }
    }

    private enum LineOutcome {
        case more
        case failed(HTTPError)
        case interim
        case complete(HTTPResponseHead)
    }

    private mutating func processLine(_ line: UnsafeRawBufferPointer) -> LineOutcome {
        let field = sawStatusLine  // the start line is scanned for a bare CR here; a field line by appendField
        guard let content = field ? HTTP1LineReader.fieldLineContent(of: line) : HTTP1LineReader.content(of: line) else {
            return .failed(.bareLineEnding)
        }
        if !field {
            if let e = parseStatusLine(content) { return .failed(e) }
            sawStatusLine = true
            return .more
        }
        if content.isEmpty { return finishHead() }
        if headers.count >= limits.maxHeaderCount { return .failed(.tooManyHeaders) }
        if let e = HTTP1LineReader.appendField(content, to: &headers) { return .failed(e) }
        return .more
    }

    /// `HTTP-version SP 3DIGIT SP [reason-phrase]` (RFC 9112 section 4); a missing final SP is tolerated.
    private mutating func parseStatusLine(_ line: UnsafeRawBufferPointer) -> HTTPError? {
        guard line.count >= 12, line[8] == HTTP1Syntax.sp,
              let v = HTTP1RequestParser.parseVersion(UnsafeRawBufferPointer(rebasing: line[0..<8])),
              v.major == 1, v.minor <= 1 else { return .badRequestLine }
        var code = 0
        for k in 9..<12 {
            let d = line[k]
            guard d >= 0x30 && d <= 0x39 else { return .badRequestLine }
            code = code * 10 + Int(d - 0x30)
        }
        guard code >= 100 && code <= 599 else { return .badRequestLine }  // RFC 9110 section 15: 100-599
        if line.count > 12 {
            guard line[12] == HTTP1Syntax.sp else { return .badRequestLine }
            let phrase = UnsafeRawBufferPointer(rebasing: line[13...])
            guard HTTP1Syntax.isFieldValue(phrase) else { return .badRequestLine }
            // The same phrase as the last response (the usual "OK") keeps its array: no allocation.
            let same = reason.count == phrase.count && reason.withUnsafeBytes { memcmp($0.baseAddress!, phrase.baseAddress!, phrase.count) == 0 }
            if !same { reason = Array(phrase) }
        } else if !reason.isEmpty {
            reason = []
        }
        status = code
        version = v
        HTTP1ResponseParser.empty(&headers)
        return nil
    }

    /// Empties `fields` for the next head, keeping its capacity when it is that of a usual head:
    /// the head handed out before has usually been dropped by now, so the arrays are not shared and
    /// a connection's responses reuse one allocation (shared, `removeAll` allocates the same
    /// capacity afresh, as a new list would). A list grown by a large head is not kept.
    private static func empty(_ fields: inout HTTPHeaders) {
        if fields.storage.capacity >= 512 && fields.storage.capacity <= 8192
            && fields.slots.capacity >= 16 && fields.slots.capacity <= 128 {
            fields.storage.removeAll(keepingCapacity: true)
            fields.slots.removeAll(keepingCapacity: true)
            fields.garbage = 0
        } else {
            fields = HTTPHeaders(reservingFields: 16, bytes: 512)
        }
    }

    private mutating func finishHead() -> LineOutcome {
        if status == 101 { return .failed(.badRequestLine) }
        if status < 200 { return .interim }

        let f = HTTP1FramingFields(headers)

        let noBody = requestWasHEAD || status == 204 || status == 304
        var framing: HTTPBodyFraming
        if f.transferEncodingSeen && f.contentLengthCount > 0 { return .failed(.contentLengthWithTransferEncoding) }
        if f.transferEncodingSeen && version.minor == 0 { return .failed(.badTransferEncoding) }
        // A transfer coding other than one `chunked` (`gzip, chunked`, `gzip`): the proxy removes
        // transfer codings (hop-by-hop) and would hand the client coded bytes as identity; refused
        // like nginx does ("unknown Transfer-Encoding").
        if f.transferEncodingSeen && !(f.transferEncodingAllChunked && f.transferEncodingElements == 1) {
            return .failed(.badTransferEncoding)
        }
        if f.contentLengthCount > 1 || f.contentLengthIsList { return .failed(.duplicateContentLength) }
        if f.contentLengthCount == 1 && f.contentLength == nil { return .failed(.badContentLength) }
        if noBody {
            framing = .none
        } else if f.transferEncodingSeen {
            framing = f.chunkedLast ? .chunked : .untilClose
        } else if let contentLength = f.contentLength {
            framing = contentLength == 0 ? .none : .contentLength(contentLength)
        } else {
            framing = .untilClose
        }
        if framing == .contentLength(0) { framing = .none }
        let persistent = version.minor == 1 ? !f.connectionClose : (f.connectionKeepAlive && !f.connectionClose)
        let head = HTTPResponseHead(status: status, reason: reason, version: version, headers: headers,
                                    framing: framing, keepAlive: persistent && framing != .untilClose)
        body = HTTP1BodyDecoder(framing: framing, limits: limits)
        state = .body
        return .complete(head)
    }
}
