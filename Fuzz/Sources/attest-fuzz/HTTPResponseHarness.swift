import GatewayHTTP

/// `http-response`: `HTTP1ResponseParser` on an upstream byte stream (pipelined responses, then the
/// upstream closes: `finish()`). Framed input: `options(1) headMask(1) splitSeed(1) stream...`;
/// options bit 0 selects small limits; bit k of headMask makes the k-th response answer a HEAD.
///
/// Invariants: whole and split parses agree (heads, bodies, ends, errors, and what `finish()`
/// says); consumption as for requests; an accepted head has status >= 200 and not 101, never both
/// Content-Length and Transfer-Encoding, at most one Content-Length; HEAD, 204 and 304 have no body;
/// Transfer-Encoding never on HTTP/1.0 and chunked only when `chunked` is the last coding; a
/// Content-Length body ends after exactly that many bytes; close-delimited bodies are not keep-alive.
enum HTTPResponseHarness {
    static let harness = Harness(name: "http-response", summary: "HTTP1ResponseParser whole vs split, framing invariants, finish()") { run($0) }

    static let smallLimits = HTTP1ParserLimits(maxStartLineBytes: 64, maxHeaderBytes: 256, maxHeaderCount: 8,
                                               maxChunkLineBytes: 16, maxTrailerBytes: 64)

    struct Run {
        var parser: HTTP1ResponseParser
        let headMask: UInt8
        var responses = 0
        var records: [HTTPRecord] = []
        var head: HTTPResponseHead?
        var bodyBytes = 0
        var failed = false

        init(limits: HTTP1ParserLimits, headMask: UInt8) {
            parser = HTTP1ResponseParser(limits: limits)
            self.headMask = headMask
            parser.expectResponse(to: method(0))
        }

        func method(_ index: Int) -> HTTPMethod { index < 8 && headMask >> UInt8(index) & 1 == 1 ? .head : .get }

        mutating func feed(_ chunk: [UInt8]) {
            let h = "http-response"
            if failed {
                let step = chunk.withUnsafeBytes { parser.parse($0) }
                guard case .error = step.event, step.consumed == 0 else { Invariant.fail(h, "a failed parser did not stay failed") }
                return
            }
            var offset = 0
            var iterations = 0
            while true {
                iterations += 1
                Invariant.check(iterations <= 2 * chunk.count + 8, h, "no progress: \(iterations) events for \(chunk.count) bytes")
                let step = chunk.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                let available = chunk.count - offset
                Invariant.check(step.consumed >= 0 && step.consumed <= available, h, "consumed \(step.consumed) of \(available)")
                switch step.event {
                case .needMoreData:
                    Invariant.check(step.consumed == available, h, "needMoreData left \(available - step.consumed) bytes unconsumed")
                    return
                case .head(let head):
                    Invariant.check(step.consumed > 0, h, "head from no bytes")
                    checkHead(head, method: method(responses))
                    self.head = head
                    bodyBytes = 0
                    HTTPRecord.append(.head("\(head.status) \(head.version) \(head.framing) keepAlive=\(head.keepAlive) \(HTTPRecord.summary(head.headers))"), to: &records)
                case .body(let range):
                    guard let head else { Invariant.fail(h, "body before a head") }
                    Invariant.check(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= step.consumed, h, "body range \(range) outside the \(step.consumed) consumed bytes")
                    bodyBytes += range.count
                    if case .contentLength(let n) = head.framing { Invariant.check(bodyBytes <= n, h, "more body than Content-Length") }
                    Invariant.check(head.framing != .none, h, "body bytes on a bodyless response")
                    HTTPRecord.append(.body(Array(chunk[(offset + range.lowerBound)..<(offset + range.upperBound)])), to: &records)
                case .end:
                    guard let head else { Invariant.fail(h, "end before a head") }
                    checkEnd(head)
                    self.head = nil
                    HTTPRecord.append(.end(""), to: &records)
                    responses += 1
                    parser.expectResponse(to: method(responses))
                case .error(let e):
                    failed = true
                    HTTPRecord.append(.error(e), to: &records)
                    return
                }
                offset += step.consumed
            }
        }

        mutating func finish() {
            let event = parser.finish()
            switch event {
            case .end:
                guard let head else { Invariant.fail("http-response", "finish() ended no response") }
                Invariant.check(head.framing == .untilClose, "http-response", "finish() ended a \(head.framing) body")
                HTTPRecord.append(.finish("end"), to: &records)
            case .error(let e): HTTPRecord.append(.finish(e.rawValue), to: &records)
            case .needMoreData: HTTPRecord.append(.finish("idle"), to: &records)
            case .head, .body: Invariant.fail("http-response", "finish() returned \(event)")
            }
        }

        func checkEnd(_ head: HTTPResponseHead) {
            let h = "http-response"
            switch head.framing {
            case .contentLength(let n): Invariant.check(bodyBytes == n, h, "Content-Length \(n) ended after \(bodyBytes) bytes")
            case .none: Invariant.check(bodyBytes == 0, h, "bodyless response with body")
            case .chunked: break
            case .untilClose: Invariant.fail(h, "a close-delimited body ended before the close")
            }
        }

        func checkHead(_ head: HTTPResponseHead, method: HTTPMethod) {
            let h = "http-response"
            let headers = head.headers
            Invariant.check(head.status >= 200 && head.status <= 999, h, "final status \(head.status)")
            Invariant.check(head.version == .http1_1 || head.version == .http1_0, h, "version \(head.version)")
            HTTPRecord.checkFields(headers, h)
            let cl = headers.count(of: "content-length"), te = headers.count(of: "transfer-encoding")
            Invariant.check(!(cl > 0 && te > 0), h, "accepted Content-Length together with Transfer-Encoding")
            Invariant.check(cl <= 1, h, "accepted \(cl) Content-Length fields")
            if te > 0 { Invariant.check(head.version == .http1_1, h, "Transfer-Encoding on HTTP/1.0") }
            let noBody = method == .head || head.status == 204 || head.status == 304
            if noBody {
                Invariant.check(head.framing == .none, h, "\(method) / \(head.status) response with framing \(head.framing)")
            } else if te > 0 {
                let last = HTTPRecord.listElements(headers, "transfer-encoding").last { !$0.isEmpty }
                Invariant.check(head.framing == (last == "chunked" ? .chunked : .untilClose), h, "framing \(head.framing) for Transfer-Encoding ending in \(String(describing: last))")
            } else if cl == 1 {
                guard let n = HTTPRecord.decimal(headers.values("content-length")[0]) else { Invariant.fail(h, "Content-Length is not 1*DIGIT") }
                Invariant.check(head.framing == (n == 0 ? .none : .contentLength(n)), h, "framing \(head.framing) for Content-Length \(n)")
            } else {
                Invariant.check(head.framing == .untilClose, h, "framing \(head.framing) without length")
            }
            if head.framing == .untilClose { Invariant.check(!head.keepAlive, h, "close-delimited response kept alive") }
        }
    }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        let options = reader.u8()
        let headMask = reader.u8()
        let seed = reader.u8()
        let stream = reader.rest()
        let limits = options & 1 != 0 ? smallLimits : HTTP1ResponseParser().limits
        var whole = Run(limits: limits, headMask: headMask)
        whole.feed(stream)
        whole.finish()
        var split = Run(limits: limits, headMask: headMask)
        var plan = SplitPlan(seed: UInt64(seed) << 32 | UInt64(stream.count))
        var offset = 0
        while offset < stream.count {
            let n = plan.next(max: stream.count - offset)
            split.feed(Array(stream[offset..<(offset + n)]))
            offset += n
        }
        split.finish()
        Invariant.check(whole.records == split.records, "http-response", "whole and split parses differ:\n whole \(whole.records)\n split \(split.records)")
    }
}
