import GatewayHTTP
import GatewayRules

/// `http-request`: `HTTP1RequestParser` on a byte stream (pipelined requests). Framed input:
/// `options(1) splitSeed(1) stream...`; options bits 0-1 choose the body limit (0, 7, 300, 1 MiB),
/// bit 2 allows `;` in paths, bit 3 selects small parser limits (64-byte request line, 256-byte
/// head, 8 fields, 16-byte chunk lines, 64-byte trailers) instead of the defaults.
///
/// The stream is parsed twice: in one piece, and in pieces whose lengths derive from the input.
/// Invariants: both runs report the same heads, bodies, ends and errors (see
/// `HTTPRecord.sameOutcome`); every call consumes what it says (ranges inside the input, all of it
/// on `needMoreData`), a failed parser stays failed; an accepted head has a target in normal form
/// (independent `TargetCheck`) with the right path length, never both Content-Length and
/// Transfer-Encoding, at most one Content-Length (digits only) whose value is the framing,
/// Transfer-Encoding only as exactly `chunked` on HTTP/1.1, exactly one Host on HTTP/1.1 (at most one
/// on 1.0) whose value is `host[:port]` per an independent check (`HostCheck`), clean
/// field lines; decoded body bytes never exceed the limit; a Content-Length body ends after exactly
/// that many bytes; `bodyBytesDecoded` matches what was delivered.
enum HTTPRequestHarness {
    static let harness = Harness(name: "http-request", summary: "HTTP1RequestParser whole vs split, smuggling and limit invariants") { run($0) }

    static let smallLimits = HTTP1ParserLimits(maxStartLineBytes: 64, maxHeaderBytes: 256, maxHeaderCount: 8,
                                               maxChunkLineBytes: 16, maxTrailerBytes: 64)

    struct Run {
        var parser: HTTP1RequestParser
        let bodyLimit: Int
        let allowSemicolon: Bool
        var records: [HTTPRecord] = []
        var head: HTTPRequestHead?
        var bodyBytes = 0
        var failed: HTTPError?

        mutating func feed(_ chunk: [UInt8]) {
            let h = "http-request"
            if let failed {
                let step = chunk.withUnsafeBytes { parser.parse($0) }
                Invariant.check(step.consumed == 0 && step.event == .error(failed), h, "a failed parser did not stay failed")
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
                    checkHead(head)
                    self.head = head
                    bodyBytes = 0
                    parser.setBodyLimit(bodyLimit)
                    HTTPRecord.append(.head("\(head.method) \(head.targetString) \(head.version) \(head.framing) keepAlive=\(head.keepAlive) continue=\(head.expectsContinue) \(HTTPRecord.summary(head.headers))"), to: &records)
                case .body(let range):
                    Invariant.check(head != nil, h, "body before a head")
                    Invariant.check(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= step.consumed, h, "body range \(range) outside the \(step.consumed) consumed bytes")
                    bodyBytes += range.count
                    Invariant.check(bodyBytes <= bodyLimit, h, "\(bodyBytes) body bytes delivered, limit \(bodyLimit)")
                    Invariant.check(parser.bodyBytesDecoded == bodyBytes, h, "bodyBytesDecoded \(parser.bodyBytesDecoded) != delivered \(bodyBytes)")
                    if case .contentLength(let n)? = head?.framing { Invariant.check(bodyBytes <= n, h, "more body than Content-Length") }
                    if head?.framing == HTTPBodyFraming.none { Invariant.fail(h, "body bytes on a message without a body") }
                    HTTPRecord.append(.body(Array(chunk[(offset + range.lowerBound)..<(offset + range.upperBound)])), to: &records)
                case .end(let trailers):
                    guard let head else { Invariant.fail(h, "end before a head") }
                    switch head.framing {
                    case .contentLength(let n): Invariant.check(bodyBytes == n, h, "Content-Length \(n) ended after \(bodyBytes) bytes")
                    case .none: Invariant.check(bodyBytes == 0, h, "bodyless message with body")
                    case .chunked: break
                    case .untilClose: Invariant.fail(h, "a request framed until close")
                    }
                    if head.framing != .chunked { Invariant.check(trailers.isEmpty, h, "trailers without chunked framing") }
                    HTTPRecord.checkFields(trailers, h)
                    self.head = nil
                    HTTPRecord.append(.end(HTTPRecord.summary(trailers)), to: &records)
                case .error(let e):
                    if e == .bodyTooLarge { Invariant.check(bodyBytes <= bodyLimit, h, "bodyTooLarge after too much body") }
                    failed = e
                    HTTPRecord.append(.error(e), to: &records)
                    return
                }
                offset += step.consumed
            }
        }

        func checkHead(_ head: HTTPRequestHead) {
            let h = "http-request"
            let headers = head.headers
            Invariant.check(TargetCheck.normalPathLength(head.target, allowSemicolon: allowSemicolon) == head.pathLength, h,
                            "target \(head.targetString) accepted, not in normal form (or wrong path length \(head.pathLength))")
            Invariant.check(head.version == .http1_1 || head.version == .http1_0, h, "version \(head.version)")
            HTTPRecord.checkFields(headers, h)
            let cl = headers.count(of: "content-length"), te = headers.count(of: "transfer-encoding")
            Invariant.check(!(cl > 0 && te > 0), h, "accepted Content-Length together with Transfer-Encoding")
            Invariant.check(cl <= 1, h, "accepted \(cl) Content-Length fields")
            if te > 0 {
                Invariant.check(HTTPRecord.listElements(headers, "transfer-encoding") == ["chunked"], h, "Transfer-Encoding other than exactly chunked")
                Invariant.check(head.version == .http1_1, h, "Transfer-Encoding on HTTP/1.0")
                Invariant.check(head.framing == .chunked, h, "Transfer-Encoding without chunked framing")
            } else if cl == 1 {
                guard let n = HTTPRecord.decimal(headers.values("content-length")[0]) else { Invariant.fail(h, "Content-Length is not 1*DIGIT") }
                Invariant.check(head.framing == (n == 0 ? .none : .contentLength(n)), h, "framing \(head.framing) for Content-Length \(n)")
            } else {
                Invariant.check(head.framing == .none, h, "framing \(head.framing) without Content-Length or Transfer-Encoding")
            }
            let hosts = headers.count(of: "host")
            Invariant.check(head.version == .http1_1 ? hosts == 1 : hosts <= 1, h, "\(hosts) Host fields on \(head.version)")
            for field in headers where field.nameEquals("host") {
                Invariant.check(HostCheck.isValid(Array(field.valueBytes)), h, "Host \(field.value.debugDescription) accepted, not host[:port]")
            }
        }
    }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        let options = reader.u8()
        let seed = reader.u8()
        let stream = reader.rest()
        let bodyLimit = [0, 7, 300, 1 << 20][Int(options & 3)]
        let allowSemicolon = options & 4 != 0
        let limits = options & 8 != 0 ? smallLimits : HTTP1ParserLimits()
        func fresh() -> Run {
            Run(parser: HTTP1RequestParser(limits: limits, targetPolicy: RequestTargetPolicy(allowSemicolonInPath: allowSemicolon)),
                bodyLimit: bodyLimit, allowSemicolon: allowSemicolon)
        }
        var whole = fresh()
        whole.feed(stream)
        var split = fresh()
        var plan = SplitPlan(seed: UInt64(seed) << 32 | UInt64(stream.count))
        var offset = 0
        while offset < stream.count {
            let n = plan.next(max: stream.count - offset)
            split.feed(Array(stream[offset..<(offset + n)]))
            offset += n
        }
        split.feed([])
        Invariant.check(HTTPRecord.sameOutcome(whole.records, split.records), "http-request",
                        "whole and split parses differ:\n whole \(whole.records)\n split \(split.records)")
        Invariant.check(whole.parser.isIdle == split.parser.isIdle && whole.parser.isReadingHead == split.parser.isReadingHead,
                        "http-request", "whole and split end in different states")
    }
}
