// Body decoding for HTTP/1.1 messages: Content-Length, chunked (with trailers), close-delimited.
// RFC 9112 sections 6.2, 6.3, 7.1.

import GatewayIO

/// Value-type state machine that delimits and decodes one message body.
///
/// Consumes input and returns one event at a time; body events are ranges into the input given to
/// that call (no copy). Decoded bytes are counted against `limit` as they arrive (a chunk whose
/// declared size would pass the limit is refused before its data is read).
struct HTTP1BodyDecoder: Sendable {
    enum Mode: Sendable, Equatable {
        case length(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    enum Event: Equatable {
        case needMoreData
        case data(Range<Int>)
        case end(trailers: HTTPHeaders)
        case error(HTTPError)
    }

    var mode: Mode
    var decoded = 0
    /// Most decoded bytes accepted; more is `.bodyTooLarge`.
    var limit: Int = .max
    private var lines = HTTP1LineReader()
    private var trailers = HTTPHeaders()
    private var trailerBytes = 0
    let limits: HTTP1ParserLimits

    init(framing: HTTPBodyFraming, limits: HTTP1ParserLimits) {
        self.limits = limits
        switch framing {
        case .none: mode = .length(remaining: 0)
        case .contentLength(let n): mode = .length(remaining: n)
        case .chunked: mode = .chunkSize
        case .untilClose: mode = .untilClose
        }
    }

    /// Whether the body ends only when the peer closes.
    var isCloseDelimited: Bool { mode == .untilClose }

    @inline(__always) private mutating func take(_ n: Int) -> Bool {
        let (sum, overflow) = decoded.addingReportingOverflow(n)
        if overflow || sum > limit { return false }
        decoded = sum
        return true
    }

    /// Decodes from `input`; returns the bytes consumed and the event.
    mutating func decode(_ input: UnsafeRawBufferPointer) -> (consumed: Int, event: Event) {
        var i = 0
        while true {
            switch mode {
            case .length(let remaining):
                if remaining == 0 {
                    mode = .done
                    return (i, .end(trailers: HTTPHeaders()))
                }
                let available = input.count - i
                if available == 0 { return (i, .needMoreData) }
                let n = min(remaining, available)
                guard take(n) else { return (i, .error(.bodyTooLarge)) }
                mode = .length(remaining: remaining - n)
                return (i + n, .data(i..<(i + n)))

            case .untilClose:
                let available = input.count - i
                if available == 0 { return (i, .needMoreData) }
                guard take(available) else { return (i, .error(.bodyTooLarge)) }
                return (input.count, .data(i..<input.count))

            case .chunkSize:
                let rest = UnsafeRawBufferPointer(rebasing: input[i...])
                switch lines.scan(rest, limit: limits.maxChunkLineBytes) {
                case .incomplete: return (input.count, .needMoreData)
                case .tooLong: return (i, .error(.badChunk))
                case .complete(let end):
                    let size = lines.withLine(rest, end: end) { HTTP1BodyDecoder.parseChunkSize($0) }
                    i += end
                    switch size {
                    case .failure(let e): return (i, .error(e))
                    case .success(0): mode = .trailers
                    case .success(let n):
                        let (sum, overflow) = decoded.addingReportingOverflow(n)
                        if overflow || sum > limit { return (i, .error(.bodyTooLarge)) }
                        mode = .chunkData(remaining: n)
                    }
                }

            case .chunkData(let remaining):
                let available = input.count - i
                if available == 0 { return (i, .needMoreData) }
                let n = min(remaining, available)
                guard take(n) else { return (i, .error(.bodyTooLarge)) }
                mode = remaining == n ? .chunkDataEnd : .chunkData(remaining: remaining - n)
                return (i + n, .data(i..<(i + n)))

            case .chunkDataEnd:
                let rest = UnsafeRawBufferPointer(rebasing: input[i...])
                switch lines.scan(rest, limit: 1) {
                case .incomplete: return (input.count, .needMoreData)
                case .tooLong: return (i, .error(.badChunk))
                case .complete(let end):
                    // Classify by the line itself, not by `end` (its length within this piece), so the
                    // error does not depend on how the input was split.
                    let (ok, bareLF) = lines.withLine(rest, end: end) { ($0.count == 1 && $0[0] == HTTP1Syntax.cr, $0.isEmpty) }
                    i += end
                    guard ok else { return (i, .error(bareLF ? .bareLineEnding : .badChunk)) }
                    mode = .chunkSize
                }

            case .trailers:
                let rest = UnsafeRawBufferPointer(rebasing: input[i...])
                let budget = limits.maxTrailerBytes - trailerBytes
                switch lines.scan(rest, limit: max(0, budget - 1)) {
                case .incomplete: return (input.count, .needMoreData)
                case .tooLong: return (i, .error(.headerTooLarge))
                case .complete(let end):
                    var lineLength = 0
                    var finished = false
                    let failure: HTTPError? = lines.withLine(rest, end: end) { line in
                        lineLength = line.count + 1
                        guard let content = HTTP1LineReader.content(of: line) else { return .bareLineEnding }
                        if content.isEmpty { finished = true; return nil }
                        if trailers.count >= limits.maxHeaderCount { return .tooManyHeaders }
                        if let e = HTTP1LineReader.appendField(content, to: &trailers) {
                            return e == .obsoleteLineFolding ? e : .badTrailer
                        }
                        return nil
                    }
                    i += end
                    trailerBytes += lineLength
                    if let failure { return (i, .error(failure)) }
                    if finished {
                        mode = .done
                        let t = trailers
                        trailers = HTTPHeaders()
                        return (i, .end(trailers: t))
                    }
                }

            case .done:
                return (i, .needMoreData)
            }
        }
    }

    /// `chunk-size [ BWS ";" chunk-ext ] CRLF` (RFC 9112 section 7.1.1); returns the size.
    /// Extensions are tolerated (bounded by the line limit) but must not hold control bytes.
    static func parseChunkSize(_ line: UnsafeRawBufferPointer) -> Result<Int, HTTPError> {
        guard let content = HTTP1LineReader.content(of: line) else { return .failure(.bareLineEnding) }
        var value = 0
        var i = 0
        while i < content.count, let d = HTTP1Syntax.hexValue(content[i]) {
            if value > (Int.max >> 4) { return .failure(.badChunk) }
            value = value << 4 | d
            i += 1
        }
        guard i > 0 else { return .failure(.badChunk) }
        if i == content.count { return .success(value) }
        // Extensions: BWS ";" ...
        while i < content.count && (content[i] == HTTP1Syntax.sp || content[i] == HTTP1Syntax.htab) { i += 1 }
        guard i < content.count, content[i] == 0x3B else { return .failure(.badChunk) }
        guard HTTP1Syntax.isFieldValue(UnsafeRawBufferPointer(rebasing: content[i...])) else { return .failure(.badChunk) }
        return .success(value)
    }
}
