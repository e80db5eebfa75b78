import GatewayHTTP
import GatewayIO
import GatewayRules

/// `h2-session`: `HTTP2Session` (nghttp2 server session plus our request checks and budgets) on
/// client bytes. Framed input: `options(1) splitSeed(1) frames...`; the client preface and an empty
/// SETTINGS frame are prepended unless options bit 3 is set. Options bit 0 selects small limits and
/// budgets, bit 1 answers every request as soon as its head is in (else once it is complete), bit 2
/// feeds the bytes in input-derived pieces.
///
/// Invariants: nothing crashes; per stream, events come in RFC 9113 section 5.1 order (opened or
/// refused or malformed at most once, data and end only before the close, the close once); an opened
/// head is what RFC 9113 section 8 allows: version 2.0, exactly one `host`, a target in normal form
/// (`RequestTargetPolicy`), no pseudo-header or connection-specific field among the fields, `te` only
/// `trailers`, at most the field count limit; DATA never exceeds a declared `content-length` and a
/// complete request carries exactly that many bytes; once `receive` reports the end of the
/// connection it has a GOAWAY code and stays ended; producing output never fails.
enum H2SessionHarness {
    static let harness = Harness(name: "h2-session", summary: "HTTP2Session: stream event order, RFC 9113 section 8 heads, budgets end with GOAWAY") { run($0) }

    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]

    static let small = HTTP1ParserLimits(maxStartLineBytes: 64, maxHeaderBytes: 1024, maxHeaderCount: 8)
    static let smallSettings = HTTP2Settings(maxConcurrentStreams: 4, maxContinuationFrames: 2, resetWindowStreams: 4,
                                             maxResetsInWindow: 2, maxControlFramesPerWindow: 4, maxEmptyDataFrames: 2,
                                             maxSettingsEntries: 4, maxQueuedAcks: 8)

    final class Delegate: HTTP2SessionDelegate {
        enum State { case opened, refused, malformed }
        let h = "h2-session"
        let answerEarly: Bool
        let countLimit: Int
        var session: HTTP2Session!
        var state: [Int32: State] = [:]
        var closed: Set<Int32> = []
        var ended: Set<Int32> = []
        var answered: Set<Int32> = []
        var declared: [Int32: Int] = [:]
        var received: [Int32: Int] = [:]
        var pending: [Int32: Int] = [:]

        init(answerEarly: Bool, countLimit: Int) {
            self.answerEarly = answerEarly
            self.countLimit = countLimit
        }

        func answer(_ id: Int32, status: Int) {
            guard !answered.contains(id), !closed.contains(id) else { return }
            answered.insert(id)
            pending[id] = 2
            var headers = HTTPHeaders()
            try? headers.add(name: "X-Answer", value: "1")
            session.submitResponse(streamID: id, status: status, headers: headers, contentLength: 2, date: nil, hasBody: true)
        }

        func http2StreamOpened(_ streamID: Int32, head: HTTPRequestHead) {
            Invariant.check(streamID > 0 && streamID & 1 == 1, h, "opened stream \(streamID) is not a client stream")
            Invariant.check(state[streamID] == nil && !closed.contains(streamID), h, "stream \(streamID) opened twice")
            state[streamID] = .opened
            Invariant.check(head.version == .http2, h, "version \(head.version)")
            Invariant.check(head.headers.count(of: "host") == 1, h, "host fields: \(head.headers.count(of: "host"))")
            let pathLength = head.target.withUnsafeBytes { t in try? RequestTargetPolicy().validate(t) }
            Invariant.check(pathLength == head.path.count, h, "target not in normal form: \(head.targetString)")
            Invariant.check(head.method != .connect, h, "CONNECT opened")
            for field in head.headers {
                Invariant.check(field.nameBytes.first != 0x3A, h, "pseudo-header among the fields: \(field.name)")
                for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
                    Invariant.check(!field.nameEquals(name), h, "connection-specific field \(name)")
                }
                if field.nameEquals("te") { Invariant.check(field.value == "trailers", h, "te: \(field.value)") }
                Invariant.check(field.nameBytes.allSatisfy { !($0 >= 0x41 && $0 <= 0x5A) }, h, "upper-case name \(field.name)")
            }
            Invariant.check(head.headers.count <= countLimit + 2, h, "\(head.headers.count) fields over the limit \(countLimit)")
            declared[streamID] = head.contentLength ?? (head.framing == .none ? 0 : nil)
            if answerEarly { answer(streamID, status: 200) }
        }

        func http2StreamRefused(_ streamID: Int32, error: HTTPError, method: HTTPMethod?, target: [UInt8]?) {
            Invariant.check(!closed.contains(streamID), h, "refused after close")
            if state[streamID] == nil { state[streamID] = .refused }
            answer(streamID, status: error.status)
        }

        func http2StreamMalformed(_ streamID: Int32, method: HTTPMethod?, target: [UInt8]?) {
            Invariant.check(!closed.contains(streamID), h, "malformed after close")
            if state[streamID] == nil { state[streamID] = .malformed }
        }

        func http2StreamData(_ streamID: Int32, _ bytes: UnsafeRawBufferPointer) {
            Invariant.check(state[streamID] != nil && !closed.contains(streamID) && !ended.contains(streamID), h,
                            "DATA for stream \(streamID) outside its life")
            received[streamID, default: 0] += bytes.count
            if let limit = declared[streamID] {
                Invariant.check(received[streamID]! <= limit, h, "\(received[streamID]!) bytes over content-length \(limit)")
            }
        }

        func http2StreamEnded(_ streamID: Int32, trailers: HTTPHeaders) {
            Invariant.check(state[streamID] != nil && !closed.contains(streamID), h, "end of stream \(streamID) outside its life")
            Invariant.check(!ended.contains(streamID), h, "stream \(streamID) ended twice")
            ended.insert(streamID)
            if state[streamID] == .opened, let limit = declared[streamID] {
                Invariant.check(received[streamID, default: 0] == limit, h, "\(received[streamID, default: 0]) bytes for content-length \(limit)")
            }
            for field in trailers { Invariant.check(field.nameBytes.first != 0x3A, h, "pseudo-header in trailers") }
            if state[streamID] == .opened { answer(streamID, status: 200) }
        }

        func http2StreamReset(_ streamID: Int32, error: HTTP2ErrorCode) {}

        func http2StreamClosed(_ streamID: Int32, error: HTTP2ErrorCode) {
            Invariant.check(!closed.contains(streamID), h, "stream \(streamID) closed twice")
            closed.insert(streamID)
        }

        func http2ReadResponseBody(_ streamID: Int32, into buffer: UnsafeMutableRawBufferPointer) -> HTTP2Session.BodyRead {
            Invariant.check(answered.contains(streamID), h, "body read for a stream never answered")
            let n = min(buffer.count, pending[streamID] ?? 0)
            for i in 0..<n { buffer[i] = 0x6F }
            pending[streamID] = (pending[streamID] ?? 0) - n
            return .bytes(n, end: pending[streamID] == 0)
        }
    }

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let options = input.u8()
        let splitSeed = input.u8()
        let stream = (options & 8 == 0 ? preface : []) + input.rest()
        let limits = options & 1 == 1 ? small : HTTP1ParserLimits()
        let delegate = Delegate(answerEarly: options & 2 != 0, countLimit: limits.maxHeaderCount)
        guard let session = HTTP2Session(settings: options & 1 == 1 ? smallSettings : HTTP2Settings(), limits: limits,
                                         policy: RequestTargetPolicy(), delegate: delegate) else {
            Invariant.fail("h2-session", "nghttp2 session could not be created")
        }
        delegate.session = session
        var plan = SplitPlan(seed: UInt64(splitSeed))
        var offset = 0
        var ended = false
        var now: UInt64 = 1_000_000_000
        var out = OutputBuffer()
        while offset < stream.count {
            let n = options & 4 != 0 ? plan.next(max: stream.count - offset) : stream.count - offset
            let alive = stream[offset..<(offset + n)].withUnsafeBytes { session.receive($0, now: now) }
            offset += n
            now += 1_000_000
            if ended {
                Invariant.check(!alive, "h2-session", "input accepted after the connection ended")
            } else if !alive {
                ended = true
                Invariant.check(session.terminatedWith != nil, "h2-session", "ended without a GOAWAY code")
            }
            Invariant.check(session.produceOutput(into: &out, limit: 1 << 20), "h2-session", "producing output failed")
            out = OutputBuffer()
            if Verbose.enabled { printError("h2-session: \(offset)/\(stream.count) alive=\(alive) \(delegate.state.count) streams\n") }
        }
    }
}
