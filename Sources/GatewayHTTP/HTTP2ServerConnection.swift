// One downstream HTTP/2 connection: streams, handler calls, proxying with flow control, timeouts.

import GatewayIO

/// Drives one downstream HTTP/2 connection (RFC 9113) on its event loop through an `HTTP2Session`.
///
/// Every stream is handled exactly like an HTTP/1.1 request through the server's `HTTPHandler`:
/// `headDecision` once the header block is in (the body limit counted on DATA payload as it arrives:
/// 413 `body_too_large` on that stream), `handle` once END_STREAM arrived, the responder's answer
/// (respond, forward, fail), `errorResponse` for the server's own errors, `requestCompleted` with an
/// access record (`protocolName` `"h2"`) when the stream closes. The handler's `RequestContext` is
/// kept on the stream (`HTTP2Stream.context`, boxed by the handler's typed calls, `HTTPHandlerCalls`):
/// the connection is not generic, compiled once, specialized, whatever the handler.
///
/// Forwarding: one `UpstreamExchange` per stream over the HTTP/1.1 keep-alive pool, the request
/// serialized as for HTTP/1.1 (one Content-Length). The upstream head becomes a HEADERS frame without
/// the connection-specific fields (RFC 9113 section 8.2.2), the body DATA frames. Flow control follows
/// upstream backpressure (RFC 9113 section 5.2): a stream buffers at most
/// `HTTP2Settings.streamBufferBytes` beyond what the client's window lets us send, the connection at
/// most `connectionBufferBytes` across streams; beyond, the upstream exchange pauses until nghttp2 has
/// taken enough. A client RST_STREAM cancels the stream's upstream exchange at once.
///
/// Timeouts (checked each loop tick): the write timeout when the socket accepts nothing; the same
/// timeout as a send timeout when response bytes wait on a zero flow-control window (one stream
/// stalled while others progress: RST_STREAM `CANCEL`; every waiting stream stalled: GOAWAY
/// `ENHANCE_YOUR_CALM` and close); the body timeout while a request body stalls (408 on the stream);
/// the idle timeout while no stream is open, the header timeout before the first request (GOAWAY
/// `NO_ERROR` and close).
///
/// The byte stream is read and written only through `readSome(into:)` and `writeOutput()`, so a TLS
/// transport can take the socket's place.
final class HTTP2ServerConnection: DownstreamConnection, HTTPResponseSink, HTTP2SessionDelegate, EndOfTurnWorker,
    @unchecked Sendable  // all state confined to `loop.queue`; `deliver` hops onto it
{
    typealias Stream = HTTP2Stream

    private enum State {
        case open
        /// GOAWAY sent or being sent; open streams finish.
        case draining
        /// Ending: output is flushed, then the socket closes.
        case closing
        /// GOAWAY written and the write side shut: unread input is drained for a while so that the
        /// GOAWAY is not destroyed by a TCP reset (as HTTP/1.1 does, RFC 9112 section 9.6).
        case lingering
        case closed
    }

    let loop: EventLoop
    let context: HTTPServerContext
    var server: HTTPServerContext { context }
    let info: HTTPConnectionInfo
    private let settings: HTTP2Settings
    /// The connection's bytes (plain, or TLS after ALPN `h2`) and, through `stream.channel`, its
    /// readiness interest.
    private let stream: ByteStream
    private var channel: SocketChannel { stream.channel }
    // Release builds drop the run-time exclusivity check of `session`, `streams` and
    // `synchronousAnswers` (`@exclusivity(unchecked)`; debug builds keep it): confined to the queue,
    // and each access is a leaf (the session and a stream are read out before they are called; the
    // answer list is appended to or swapped out). bench/PERFORMANCE.md "Seventh pass".
    #if DEBUG
    private var session: HTTP2Session?
    #else
    @exclusivity(unchecked) private var session: HTTP2Session?
    #endif
    private var out = OutputBuffer()
    private var state = State.open
    #if DEBUG
    private var streams: [Int32: Stream] = [:]
    #else
    @exclusivity(unchecked) private var streams: [Int32: Stream] = [:]
    #endif
    private var initialBytes: [UInt8]
    /// Response body bytes buffered across streams (sum of `pending`).
    private var bufferedBytes = 0
    private var pausedStreams = 0
    private var now: UInt64
    private var lastWriteProgress: UInt64
    /// When the last stream closed (or the connection started): the idle timeout counts from here.
    private var idleSince: UInt64
    private var drainStarted: UInt64 = 0
    private var lingerDeadline: UInt64 = 0
    private var lingerBytes = 0
    private var finalGoawaySent = false
    /// Set when the shutdown's grace period ran out: the streams still open are reported cut by the server.
    private var cutByDrain = false
    /// The connection is cut because the client took no bytes for the write timeout (its socket, or
    /// every stream's window): open streams are reported with `HTTPError.clientStalled`.
    private var cutByStall = false
    /// Whether a request arrived yet: before, the header timeout bounds the wait (as for HTTP/1.1).
    private var anyStream = false
    /// `handler.connectionStarted` was called (so `connectionEnded` is due at close).
    private var reportedStart = false
    private var readingPaused = false
    private var inHandlerCall = false
    #if DEBUG
    private var synchronousAnswers: [(HTTPAnswer, HTTPContextBox?, UInt64)] = []
    #else
    @exclusivity(unchecked) private var synchronousAnswers: [(HTTPAnswer, HTTPContextBox?, UInt64)] = []
    #endif
    /// A flush is queued for the end of the loop's turn (`flushAtEndOfTurn()`).
    private var flushScheduled = false

    /// Response body bytes held for the streams (waiting for the client's windows), for tests and
    /// metrics; read on the loop's queue.
    var bufferedResponseBytes: Int { bufferedBytes }
    /// Bytes produced by nghttp2 and not yet taken by the socket; read on the loop's queue.
    var queuedOutputBytes: Int { out.count }
    /// Request body bytes counted against `HTTP2Settings.requestBodyBufferBytes` (arriving, and
    /// complete but not yet written upstream), for tests; read on the loop's queue.
    var heldRequestBodyBytes: Int { session?.heldRequestBodyBytes ?? 0 }
    /// Serialized request bytes the streams' upstream exchanges still hold (kept for a retry, or not
    /// yet written), for tests; read on the loop's queue.
    var upstreamRequestBytes: Int { streams.values.reduce(0) { $0 + ($1.exchange?.request.count ?? 0) } }

    /// Output queued beyond this stops reading the client and producing frames.
    private var highWatermark: Int { context.configuration.writeHighWatermark }
    /// How long a draining connection keeps accepting streams before the final GOAWAY (a round trip
    /// for requests in flight, RFC 9113 section 6.8).
    static var drainNoticeNanoseconds: UInt64 { 1_000_000_000 }

    /// Takes over a byte stream that is already set up and reading (the socket of a plain connection
    /// that sent the HTTP/2 preface, or a TLS connection that negotiated ALPN `h2`), with the bytes
    /// already read from it (starting with the client preface, RFC 9113 section 3.4). Call `start()`
    /// next, on the loop's queue.
    init(stream: ByteStream, loop: EventLoop, context: HTTPServerContext, info: HTTPConnectionInfo,
         initialBytes: [UInt8]) {
        self.loop = loop
        self.context = context
        self.info = info
        self.stream = stream
        self.initialBytes = initialBytes
        settings = context.configuration.http2.clamped
        now = EventLoop.now()
        lastWriteProgress = now
        idleSince = now
        #if DEBUG
        context.liveHTTP2Connections.increment()
        #endif
    }

    #if DEBUG
    deinit { context.liveHTTP2Connections.decrement() }
    #endif

    /// Registers on the loop, takes the channel's events, sends our SETTINGS and processes the initial bytes.
    func start() {
        loop.register(self)
        stream.setHandlers(onReadable: { [unowned self] in self.readable() },
                           onWritable: { [unowned self] in self.writable() })
        session = HTTP2Session(settings: settings, limits: context.configuration.limits,
                               policy: context.configuration.targetPolicy, delegate: self)
        guard session != nil else {
            close()
            return
        }
        reportedStart = true
        context.handler.connectionStarted(info)
        channel.startReading()
        stream.resumeReading()
        if !initialBytes.isEmpty {
            let bytes = initialBytes
            initialBytes = []
            bytes.withUnsafeBytes { received($0) }
        }
        if context.isDraining { drain() }
        produceAndFlush()
    }

    // MARK: transport (the only two places that touch the byte stream)

    private func readSome(into buffer: UnsafeMutableRawBufferPointer) -> Socket.ReadResult {
        stream.read(into: buffer)
    }

    private func writeOutput() -> (result: OutputBuffer.Flush, written: Int) {
        out.flush(to: stream)
    }

    // MARK: reading

    private func readable() {
        now = EventLoop.now()
        if state == .lingering {
            linger()
            return
        }
        var reads = 0
        reading: while reads < 4 && (state == .open || state == .draining) && channel.isReading {
            reads += 1
            let buffer = loop.readBuffer
            switch readSome(into: buffer) {
            case .bytes(let n):
                received(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                if n < buffer.count { break reading }
            case .endOfFile:
                abort()  // the client is gone: nothing it asked for can reach it
                return
            case .wouldBlock:
                break reading
            case .failed:
                abort()
                return
            }
        }
        flushAtEndOfTurn()
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard let session, state == .open || state == .draining else { return }
        if !session.receive(bytes, now: now) {
            state = .closing
            channel.stopReading()
        }
    }

    // MARK: stream events (HTTP2SessionDelegate)

    func http2StreamOpened(_ streamID: Int32, head: HTTPRequestHead) {
        let stream = Stream(id: streamID, connection: self, now: now)
        anyStream = true
        stream.head = head
        streams[streamID] = stream
        let (decision, decided) = context.handler.headDecision(head, info)
        stream.context = decided
        switch decision {
        case .respond(let response, _):
            sendResponse(stream, response, error: nil)
        case .accept(let limit, _):
            if let length = head.contentLength, length > limit {
                failStream(stream, .bodyTooLarge)
                return
            }
            stream.bodyLimit = max(0, limit)
            // Until END_STREAM (cleared at once when the HEADERS frame carried it).
            stream.deadline = deadline(context.bodyTimeout)
            if head.framing.hasBody {
                if let length = head.contentLength { stream.body.reserveCapacity(min(length, 1 << 20)) }
                if head.expectsContinue { session?.submitContinue(streamID: streamID) }
                session?.grantWindow(streamID, bodyBytes: min(stream.bodyLimit, head.contentLength ?? stream.bodyLimit))
            }
        }
    }

    func http2StreamRefused(_ streamID: Int32, error: HTTPError, method: HTTPMethod?, target: [UInt8]?) {
        if let stream = streams[streamID] {
            failStream(stream, error)  // its trailer block
            return
        }
        let stream = Stream(id: streamID, connection: self, now: now)
        anyStream = true
        stream.method = method
        stream.target = target
        streams[streamID] = stream
        failStream(stream, error)
    }

    func http2StreamMalformed(_ streamID: Int32, method: HTTPMethod?, target: [UInt8]?) {
        if let stream = streams[streamID] {
            stream.malformed = true
            stream.error = stream.error ?? .badTrailer
            cancelUpstream(stream)
            return
        }
        let stream = Stream(id: streamID, connection: self, now: now)
        anyStream = true
        stream.method = method
        stream.target = target
        stream.malformed = true
        stream.error = .badHeader
        streams[streamID] = stream  // reported when nghttp2 closes it
    }

    func http2StreamData(_ streamID: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let stream = streams[streamID], stream.phase == .receiving else { return }
        if stream.body.count + bytes.count > stream.bodyLimit {
            stream.requestBodyBytes = stream.body.count + bytes.count
            failStream(stream, .bodyTooLarge)
            return
        }
        stream.body.append(contentsOf: bytes)
        // The deadline set at the HEADERS frame stands: `timeouts.body` bounds the whole body, not
        // the gap between DATA frames (a byte a second would otherwise hold the stream forever).
    }

    func http2StreamEnded(_ streamID: Int32, trailers: HTTPHeaders) {
        guard let stream = streams[streamID] else { return }
        stream.requestComplete = true
        guard stream.phase == .receiving, let head = stream.head, let requestContext = stream.context else { return }
        stream.phase = .handling
        stream.deadline = 0
        stream.requestBodyBytes = stream.body.count
        stream.head?.headers = HTTPHeaders()  // the request takes the fields over (HTTPHandler.handle)
        let request = HTTPRequest(head: head, body: stream.body, trailers: trailers, connection: info)
        stream.body = []
        inHandlerCall = true
        context.handler.handle(consume request, requestContext,
                               HTTPAnswerChannel(sink: self, sequence: UInt64(UInt32(bitPattern: streamID))))
        inHandlerCall = false
        applySynchronousAnswers()
    }

    func http2StreamReset(_ streamID: Int32, error: HTTP2ErrorCode) {
        guard let stream = streams[streamID] else { return }
        stream.peerReset = true
        cancelUpstream(stream)  // rapid reset: its upstream work stops now
    }

    func http2StreamClosed(_ streamID: Int32, error: HTTP2ErrorCode) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        finish(stream, code: error)
    }

    func http2ReadResponseBody(_ streamID: Int32, into buffer: UnsafeMutableRawBufferPointer) -> HTTP2Session.BodyRead {
        guard let stream = streams[streamID] else { return .bytes(0, end: true) }
        let n = stream.pending.take(into: buffer)
        if n > 0 {
            bufferedBytes -= n
            stream.responseBodyBytes += n
            stream.lastProgress = now
        }
        if stream.bodyComplete && stream.pending.isEmpty {
            stream.endGiven = true
            return .bytes(n, end: true)
        }
        if n == 0 {
            stream.deferred = true
            return .deferred
        }
        return .bytes(n, end: false)
    }

    // MARK: answers

    /// From `HTTPResponder`, any thread: applied on the loop (after `handle` returns when given inside it).
    func deliver(_ answer: consuming HTTPAnswer, context: HTTPContextBox?, sequence: UInt64) {
        if loop.inEventLoop {
            if inHandlerCall {
                synchronousAnswers.append((consume answer, context, sequence))
            } else {
                apply(consume answer, context: context, sequence: sequence)
                flushAtEndOfTurn()
            }
            return
        }
        loop.execute { [self, answer] in
            now = EventLoop.now()
            apply(answer, context: context, sequence: sequence)
            produceAndFlush()
        }
    }

    /// Applies the answers given inside a handler call, in the order given. They are moved out of
    /// the list (`removeFirst` copied each answer, one retain per field of a forward), and the
    /// list's storage is kept for the next call.
    private func applySynchronousAnswers() {
        while !synchronousAnswers.isEmpty {
            var batch: [(HTTPAnswer, HTTPContextBox?, UInt64)] = []
            swap(&batch, &synchronousAnswers)
            batch.reverse()
            while let (answer, context, sequence) = batch.popLast() {
                apply(consume answer, context: context, sequence: sequence)
            }
            if synchronousAnswers.isEmpty { swap(&batch, &synchronousAnswers) }  // empty, with its capacity
        }
    }

    /// Applies an answer to its stream if that stream still waits for one; its context, if any,
    /// replaces the stream's.
    private func apply(_ answer: consuming HTTPAnswer, context answerContext: HTTPContextBox?, sequence: UInt64) {
        guard state != .closed, let stream = streams[Int32(bitPattern: UInt32(truncatingIfNeeded: sequence))],
              stream.phase == .handling else { return }
        if let answerContext { stream.context = answerContext }
        switch consume answer {  // moved into the case's value, not copied out of it
        case .response(let r): sendResponse(stream, r, error: nil)
        case .error(let e): sendResponse(stream, context.handler.errorResponse(e, stream.head, stream.context), error: e)
        case .forward(let f): startForward(stream, f)
        }
    }

    /// Answers `error` on the stream with the handler's rendering, unless a response is already out
    /// (then the stream is reset).
    private func failStream(_ stream: Stream, _ error: HTTPError) {
        cancelUpstream(stream)
        if stream.responseStarted {
            stream.error = error
            session?.resetStream(stream.id, error: .internalError)
            return
        }
        sendResponse(stream, context.handler.errorResponse(error, stream.head, stream.context), error: error)
    }

    /// Submits a complete response (the body waits in `pending` for the window). Framing as for
    /// HTTP/1.1: content-length except for 204 and 304, no body for HEAD.
    private func sendResponse(_ stream: Stream, _ response: HTTPResponse, error: HTTPError?) {
        guard let session else { return }
        let status = (200...999).contains(response.status) ? response.status : 500
        let bodyAllowed = status != 204 && status != 304
        let sendBody = bodyAllowed && stream.head?.method != .head && !response.body.isEmpty
        releaseRequestBody(stream)  // answered here: nothing downstream needs the request body now
        stream.error = error ?? stream.error
        stream.phase = .responding
        stream.deadline = 0
        stream.responseStarted = true
        stream.responseStatus = status
        stream.bodyComplete = true
        if sendBody {
            stream.pending.append(response.body)
            bufferedBytes += response.body.count
            stream.lastProgress = now
        } else {
            stream.endGiven = true
        }
        let dateLine = loop.dateHeaderLine()  // "Date: <IMF-fixdate>\r\n"
        session.submitResponse(streamID: stream.id, status: status, headers: response.headers,
                               contentLength: bodyAllowed ? response.body.count : nil,
                               date: dateLine.count > 8 ? dateLine[6..<(dateLine.count - 2)] : nil, hasBody: sendBody)
    }

    // MARK: proxying

    private func startForward(_ stream: Stream, _ forward: HTTPForward) {
        guard forward.upstream.groupID == loop.groupID, loop.index < forward.upstream.loopPools.count else {
            sendResponse(stream, context.handler.errorResponse(.upstreamUnavailable, stream.head, stream.context),
                         error: .upstreamUnavailable)
            return
        }
        let pool = forward.upstream.loopPools[loop.index]
        let request = HTTP1Serializer.upstreamRequest(forward, hostHeader: pool.settings.hostHeader)
        stream.phase = .forwarding
        stream.upstreamName = pool.settings.name
        stream.responseHeadFilter = forward.responseHeadFilter
        stream.responseField = forward.responseField
        stream.upstreamFailureAnswer = forward.upstreamFailureAnswer
        let exchange = UpstreamExchange(pool: pool, method: forward.method, request: request, sink: stream,
                                        connectTimeout: forward.connectTimeout, responseTimeout: forward.responseTimeout)
        stream.exchange = exchange
        exchange.start()
    }

    func upstreamHead(_ stream: Stream, _ upstreamHead: consuming HTTPResponseHead) {
        guard stream.phase == .forwarding, let session else { return }
        var head = upstreamHead
        stream.responseHeadFilter?(&head)
        var contentLength: Int?
        var hasBody = false
        if stream.head?.method == .head || head.status == 304 {
            contentLength = head.headers.firstBytes("content-length").flatMap { v in
                v.withUnsafeBytes { HTTP1Syntax.parseDecimal($0) }
            }
        } else if head.status != 204 {
            switch head.framing {
            case .none: contentLength = 0
            case .contentLength(let n): contentLength = n; hasBody = n > 0
            case .chunked, .untilClose: hasBody = true
            }
        }
        stream.responseStarted = true
        stream.responseStatus = head.status
        if !hasBody {
            stream.bodyComplete = true
            stream.endGiven = true
        }
        // `responseField` replaces its name in the head there (sent never indexed: unique per response).
        session.submitResponse(streamID: stream.id, status: head.status, headers: head.headers,
                               contentLength: contentLength, date: nil, hasBody: hasBody, field: stream.responseField)
    }

    func upstreamBody(_ stream: Stream, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard stream.phase == .forwarding, state != .closed else { return false }
        guard !stream.bodyComplete, !bytes.isEmpty else { return true }
        if stream.pending.isEmpty {
            // The send-timeout clock starts. `now` is this connection's latest event or timer tick:
            // at most one timer tick old, the resolution the timeouts are checked at anyway.
            stream.lastProgress = now
        }
        stream.pending.append(bytes)
        bufferedBytes += bytes.count
        if stream.deferred {
            stream.deferred = false
            session?.resumeData(stream.id)
        }
        let more = stream.pending.count < settings.streamBufferBytes && bufferedBytes < settings.connectionBufferBytes
        if !more && !stream.upstreamPaused {
            stream.upstreamPaused = true
            pausedStreams += 1
        }
        if bufferedBytes >= settings.connectionBufferBytes {
            // Over the connection's bound: every stream's upstream read pauses now, not after its own
            // next read (100 streams would each add a read of up to 64 KiB first).
            for other in streams.values where other !== stream && other.phase == .forwarding && !other.upstreamPaused {
                other.upstreamPaused = true
                pausedStreams += 1
                other.exchange?.pause()
            }
        }
        return more
    }

    func upstreamReadDone(_ stream: Stream) {
        flushAtEndOfTurn()
    }

    /// The stream's request is written whole to the upstream socket: its body leaves the budget.
    func upstreamRequestSent(_ stream: Stream) {
        guard stream.phase == .forwarding else { return }
        releaseRequestBody(stream)
    }

    /// The stream's complete request body leaves the connection's `requestBodyBufferBytes` budget
    /// (`HTTP2Session.releaseRequestBody(_:)`); the WINDOW_UPDATE frames that reopens go out at the
    /// end of the turn.
    private func releaseRequestBody(_ stream: Stream) {
        // Only a complete body is counted (most requests have none): nothing to ask the session then.
        guard stream.requestComplete, stream.requestBodyBytes > 0, !stream.requestBodyReleased else { return }
        stream.requestBodyReleased = true
        if session?.releaseRequestBody(stream.id) == true { flushAtEndOfTurn() }
    }

    func upstreamEnd(_ stream: Stream) {
        guard stream.phase == .forwarding else { return }
        releaseRequestBody(stream)  // a response that came before the whole request was written
        stream.exchange = nil
        stream.phase = .responding
        stream.bodyComplete = true
        unpause(stream)
        if stream.deferred {
            stream.deferred = false
            session?.resumeData(stream.id)
        }
        flushAtEndOfTurn()
    }

    func upstreamFailed(_ stream: Stream, _ error: HTTPError) {
        guard stream.phase == .forwarding else { return }
        releaseRequestBody(stream)
        stream.exchange = nil
        unpause(stream)
        if stream.responseStarted {
            // The head is out: resetting the stream is the only honest signal of the truncation.
            stream.error = error
            session?.resetStream(stream.id, error: .internalError)
        } else if let answer = stream.upstreamFailureAnswer {
            // The forward answers its failures itself, like a handler (through `apply`).
            stream.phase = .handling
            stream.error = error
            let channel = HTTPAnswerChannel(sink: self, sequence: UInt64(UInt32(bitPattern: stream.id)))
            inHandlerCall = true
            answer(error) { _ = channel.answer(.response($0), context: nil) }
            inHandlerCall = false
            applySynchronousAnswers()
        } else {
            sendResponse(stream, context.handler.errorResponse(error, stream.head, stream.context), error: error)
        }
        flushAtEndOfTurn()
    }

    private func cancelUpstream(_ stream: Stream) {
        if stream.exchange != nil { releaseRequestBody(stream) }
        stream.exchange?.cancel()
        stream.exchange = nil
        unpause(stream)
    }

    private func unpause(_ stream: Stream) {
        if stream.upstreamPaused {
            stream.upstreamPaused = false
            pausedStreams -= 1
        }
    }

    /// Resumes paused upstream exchanges once their stream and the connection have room again
    /// (below half of each bound, so that a resume is worth a read).
    private func resumePausedStreams() {
        guard pausedStreams > 0, bufferedBytes < settings.connectionBufferBytes / 2 else { return }
        for stream in streams.values where stream.upstreamPaused && stream.pending.count < settings.streamBufferBytes / 2 {
            unpause(stream)
            stream.exchange?.resume()
        }
    }

    // MARK: writing

    /// Produces and writes once the loop's current turn is over (`EventLoop.atEndOfTurn`), so that
    /// the frames of every stream event of the turn (requests read, upstream responses relayed)
    /// leave in one write (one TLS record run, one `send`) instead of one per event. Once per turn.
    private func flushAtEndOfTurn() {
        guard !flushScheduled, state != .closed else { return }
        flushScheduled = true
        // The loop holds the connection only while the flush is queued: no closure per turn, and no
        // weak reference (a weak one gives the connection a side table for its whole life, which sends
        // every retain and release of it, and every load of its streams' `unowned` reference, down the
        // runtime's slow path; bench/PERFORMANCE.md, "Session 32"). Closed meanwhile: a no-op.
        loop.atEndOfTurn(self)
    }

    /// `EndOfTurnWorker`: the flush queued by `flushAtEndOfTurn()`.
    func endOfTurn() {
        flushScheduled = false
        now = EventLoop.now()
        produceAndFlush()
    }

    private func writable() {
        now = EventLoop.now()
        produceAndFlush()
    }

    /// Moves frames from nghttp2 to the output (up to the high watermark) and writes them, until the
    /// socket blocks or nothing is left; then resumes what waited for room and closes when finished.
    private func produceAndFlush() {
        guard state != .closed && state != .lingering, let session, !session.isBusy else { return }
        writing: while true {
            if state == .draining && !finalGoawaySent && streams.isEmpty { sendFinalGoaway() }
            guard session.produceOutput(into: &out, limit: highWatermark) else {
                abort()
                return
            }
            if out.isEmpty { break writing }
            let (result, written) = writeOutput()
            if written > 0 { lastWriteProgress = now }
            switch result {
            case .done:
                channel.disarmWrite()
            case .wouldBlock:
                if !channel.isWriteArmed {
                    if written == 0 { lastWriteProgress = now }
                    channel.armWrite()
                }
                break writing
            case .failed:
                abort()
                return
            }
        }
        resumePausedStreams()
        if out.isEmpty && session.isFinished {
            startLinger()
            return
        }
        // A client that sends faster than it reads is not read until the output drains.
        if out.count >= highWatermark {
            if !readingPaused && channel.isReading {
                readingPaused = true
                channel.pauseReading()
            }
        } else if readingPaused {
            readingPaused = false
            stream.resumeReading()
        }
    }

    // MARK: stream end

    /// Reports the stream and forgets it.
    private func finish(_ stream: Stream, code: HTTP2ErrorCode) {
        cancelUpstream(stream)
        bufferedBytes -= stream.pending.count
        stream.pending.removeAll()
        let complete = stream.responseStarted && stream.endGiven && code == .noError
        var status = stream.responseStarted ? stream.responseStatus : 499
        var error = stream.error
        if cutByDrain && !complete {
            // The shutdown's grace period ran out: the server cut it, the client did not go away.
            error = .drainDeadline
            if !stream.responseStarted { status = HTTPError.drainDeadline.status }
        } else if cutByStall && !complete {
            // The client stopped taking bytes: the server cut the connection (not a 499: the client
            // did not close or reset).
            error = error ?? .clientStalled
            if !stream.responseStarted { status = HTTPError.clientStalled.status }
        }
        let malformedReset = !stream.responseStarted && !stream.peerReset && (stream.malformed || code == .protocolError)
        if malformedReset {
            // Reset as malformed by the session or nghttp2 (e.g. content-length against DATA): a
            // refusal without a response, not an abort.
            status = 400
            if error == nil { error = stream.head?.contentLength != nil ? .badContentLength : .badHeader }
        }
        let record = HTTPAccessRecord(
            connection: info,
            method: stream.head?.method ?? stream.method, target: stream.head?.target ?? stream.target,
            status: status, error: error,
            requestBodyBytes: max(stream.requestBodyBytes, stream.body.count), responseBodyBytes: stream.responseBodyBytes,
            latencyNanoseconds: EventLoop.now() &- stream.start, upstream: stream.upstreamName,
            aborted: malformedReset ? false : !complete)
        let decided = stream.context
        stream.body = []
        stream.context = nil
        if streams.isEmpty { idleSince = now }
        context.handler.requestCompleted(record, decided)
    }

    // MARK: shutdown and closing

    private func sendFinalGoaway() {
        finalGoawaySent = true
        session?.submitGoaway(graceful: false)
    }

    /// Graceful shutdown (RFC 9113 section 6.8): the shutdown notice now, the final GOAWAY with the
    /// last stream processed once the open streams are done (or after a round-trip allowance), then
    /// close.
    func drain() {
        guard state == .open, let session else { return }
        state = .draining
        drainStarted = EventLoop.now()
        session.submitGoaway(graceful: true)
        if streams.isEmpty { sendFinalGoaway() }
        produceAndFlush()
    }

    /// Shutdown grace period over: close now (open streams are reported aborted, with
    /// `HTTPError.drainDeadline`: cut by the server).
    func forceClose() {
        cutByDrain = true
        abort()
    }

    /// Ends the connection after a GOAWAY with `code`, writing what the socket takes now.
    private func terminate(_ code: HTTP2ErrorCode) {
        guard state != .closed else { return }
        session?.terminate(code)
        state = .closing
        channel.stopReading()
        produceAndFlush()
    }

    /// Closes at once; open streams are reported aborted.
    private func abort() {
        close()
    }

    /// Everything is written (the last frame a GOAWAY): half-close and drain input briefly, then close.
    private func startLinger() {
        guard state != .closed && state != .lingering else { return }
        reportOpenStreams()
        guard context.lingerTimeout > 0 else {
            close()
            return
        }
        state = .lingering
        stream.shutdownWrite()
        channel.startReading()
        stream.resumeReading()
        lingerDeadline = now &+ context.lingerTimeout
    }

    private func linger() {
        let buffer = loop.readBuffer
        for _ in 0..<4 {
            switch readSome(into: buffer) {
            case .bytes(let n):
                lingerBytes += n
                if lingerBytes > 1 << 20 {
                    close()
                    return
                }
            case .wouldBlock:
                return
            case .endOfFile, .failed:
                close()
                return
            }
        }
    }

    /// Reports every stream still open as aborted (the connection is ending).
    private func reportOpenStreams() {
        let open = streams.values.sorted { $0.id < $1.id }
        streams = [:]
        for stream in open { finish(stream, code: .cancel) }
    }

    private func close() {
        guard state != .closed else { return }
        state = .closed
        reportOpenStreams()
        stream.close()
        loop.unregister(self)
        if reportedStart { context.handler.connectionEnded(info) }
        context.connectionClosed(loop: loop.index)
    }

    // MARK: timers

    private func deadline(_ duration: UInt64) -> UInt64 { duration == 0 ? 0 : now &+ duration }

    func tick(now: UInt64) {
        guard state != .closed else { return }
        self.now = now
        let writeTimeout = context.writeTimeout
        if channel.isWriteArmed && writeTimeout > 0 && now &- lastWriteProgress > writeTimeout {
            cutByStall = true
            abort()  // the client accepts no bytes at all
            return
        }
        if state == .lingering {
            if now >= lingerDeadline { close() }
            return
        }
        if state == .closing {
            return
        }
        // Zero-window stalls: response bytes waiting on a closed flow-control window (RFC 9113 section
        // 6.9) with nghttp2 taking none for longer than the write timeout. A stream whose window is
        // open is only waiting for its turn or for the socket (the write timeout covers that).
        if writeTimeout > 0 && bufferedBytes > 0, let session {
            var stalled: [Stream] = []
            var flowing = false
            for stream in streams.values where !stream.pending.isEmpty {
                if (session.remoteWindow(of: stream.id) ?? 0) > 0 {
                    stream.lastProgress = now
                    flowing = true
                } else if now &- stream.lastProgress > writeTimeout {
                    stalled.append(stream)
                } else {
                    flowing = true
                }
            }
            if !stalled.isEmpty && !flowing {
                cutByStall = true
                terminate(.enhanceYourCalm)  // the GOAWAY goes out (the socket is writable), then close
                if state == .closing && out.isEmpty { startLinger() }
                return
            }
            for stream in stalled {
                stream.error = stream.error ?? .clientStalled  // the client's window, not the upstream
                cancelUpstream(stream)
                bufferedBytes -= stream.pending.count
                stream.pending.removeAll()
                session.resetStream(stream.id, error: .cancel)
            }
        }
        for stream in streams.values where stream.phase == .receiving && stream.deadline != 0 && now >= stream.deadline {
            // The gateway itself holds back this stream's window (the connection's request body budget
            // is full, e.g. of bodies a slow upstream has not read): the client cannot send, so the
            // body timeout is not its fault. It starts again from now, and runs once the window opens.
            if session?.isWindowWithheld(stream.id) == true {
                stream.deadline = deadline(context.bodyTimeout)
                continue
            }
            failStream(stream, .bodyTimeout)
        }
        if state == .draining && !finalGoawaySent && now &- drainStarted > HTTP2ServerConnection.drainNoticeNanoseconds {
            sendFinalGoaway()
        }
        // A header block (HEADERS, CONTINUATION...) gets `timeouts.header` from its first frame, on
        // every stream as on the first (HTTP/1.1 bounds every request head the same way): nothing
        // else can arrive on the connection until it ends, so it is the connection that is cut.
        if let started = session?.headerBlockStarted, context.headerTimeout > 0, now &- started > context.headerTimeout {
            terminate(.noError)
            if state == .closing && out.isEmpty { startLinger() }
            return
        }
        let idleLimit = anyStream ? context.idleTimeout : context.headerTimeout
        if streams.isEmpty && out.isEmpty && idleLimit > 0 && now &- idleSince > idleLimit {
            terminate(.noError)
            if state == .closing && out.isEmpty { startLinger() }
            return
        }
        produceAndFlush()
    }
}
