// One downstream HTTP/1.1 connection: parsing, handler calls, responses, proxying, timeouts.

import GatewayIO

/// Drives one accepted connection on its event loop.
///
/// Requests are handled strictly one at a time and answered in order (RFC 9112 section 9.3.2):
/// while a request is being handled, further pipelined bytes are kept (bounded, reading pauses
/// beyond) and parsed only after the response. Every error the parser reports is answered through
/// the handler's error renderer and closes the connection after a bounded lingering close
/// (RFC 9112 section 9.6), so a client's unread bytes never turn the answer into a TCP reset.
///
/// h2c with prior knowledge (RFC 9113 section 3.3): until the first bytes decide, they are compared
/// with the HTTP/2 client preface (waiting for more while they are a prefix of it); on a match the
/// socket and the bytes read so far go to an `HTTP2ServerConnection`, otherwise the bytes are parsed
/// as HTTP/1.1. `Upgrade: h2c` is never performed: such a request is served as HTTP/1.1.
final class HTTP1ServerConnection: DownstreamConnection, HTTPResponseSink, UpstreamResponseSink,
    @unchecked Sendable  // all state confined to `loop.queue`; `deliver` hops onto it
{
    private enum Phase { case idle, head, body, handling, forwarding, closing, lingering, closed }
    private enum Deadline { case none, silentClose, header, body, linger }

    let loop: EventLoop
    let context: HTTPServerContext
    let info: HTTPConnectionInfo
    /// The connection's bytes (plain or TLS) and, through `stream.channel`, its readiness interest.
    private let stream: ByteStream
    private var channel: SocketChannel { stream.channel }
    private var phase = Phase.idle
    private var parser: HTTP1RequestParser
    private var pending: [UInt8] = []
    private var out = OutputBuffer()
    private var deadline: UInt64 = 0
    private var deadlineKind = Deadline.none
    private var lastWriteProgress: UInt64 = 0
    private var peerClosed = false
    private var inFeed = false
    private var awaitingDrain = false
    private var requestsDone = 0
    private var lingerBytes = 0
    /// Whether input may still be unread when we close (error, early answer): then close lingering.
    private var lingerOnClose = false
    /// True while `handler.handle` runs: an answer given synchronously is applied right after it
    /// returns instead of taking another trip through the queue.
    private var inHandlerCall = false
    private var synchronousAnswer: (HTTPResponder.Answer, (any Sendable)?, UInt64)?
    /// True until the first bytes decided between HTTP/1.1 and the HTTP/2 preface.
    private var sniffing = true
    /// First bytes kept while they are a proper prefix of the HTTP/2 preface.
    private var sniffed: [UInt8] = []

    // The request in progress.
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var requestBodyBytes = 0
    private var earlyResponse: HTTPResponse?
    private var sequence: UInt64 = 0
    private var keepAlive = true
    private var requestStart: UInt64 = 0
    private var exchange: UpstreamExchange?
    private var upstreamName: String?
    /// What the handler attached to its answer, reported in the access record.
    private var annotation: (any Sendable)?
    private var responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?
    private var proxiedBody = DownstreamBody.none(passLength: false)
    private var responseStarted = false
    private var responseStatus = 0
    private var responseBodyBytes = 0

    private var pendingLimit: Int { context.configuration.limits.clamped.maxHeaderBytes + 65536 }

    /// A connection over `stream` (accepted, and past its TLS handshake when it has one); it takes
    /// over the stream's readiness handlers.
    init(stream: ByteStream, loop: EventLoop, context: HTTPServerContext, info: HTTPConnectionInfo) {
        self.loop = loop
        self.context = context
        self.info = info
        self.stream = stream
        parser = HTTP1RequestParser(limits: context.configuration.limits, targetPolicy: context.configuration.targetPolicy)
        stream.setHandlers(onReadable: { [unowned self] in self.readable() },
                           onWritable: { [unowned self] in self.flush() })
    }

    func start() {
        loop.register(self)
        channel.startReading()
        setDeadline(.silentClose, context.headerTimeout)
        if context.isDraining { drain() }
    }

    private func setDeadline(_ kind: Deadline, _ duration: UInt64) {
        deadlineKind = duration == 0 ? .none : kind
        deadline = EventLoop.now() &+ duration
    }

    // MARK: reading

    private func readable() {
        var reads = 0
        while reads < 4 && phase != .closed && channel.isReading {
            reads += 1
            let buffer = loop.readBuffer
            switch stream.read(into: buffer) {
            case .bytes(let n):
                received(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                if n < buffer.count { return }
            case .endOfFile:
                endOfFile()
                return
            case .wouldBlock:
                return
            case .failed:
                abort()
                return
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        if sniffing {
            sniff(bytes)
            return
        }
        switch phase {
        case .closed, .closing:
            return
        case .lingering:
            lingerBytes += bytes.count
            if lingerBytes > 1 << 20 { close() }
        case .handling, .forwarding:
            stash(bytes)
        case .idle where awaitingDrain || !pending.isEmpty:
            stash(bytes)
        case .idle, .head, .body:
            feed(bytes)
        }
    }

    /// Decides the protocol from the first bytes (RFC 9113 section 3.3).
    private func sniff(_ bytes: UnsafeRawBufferPointer) {
        let match: HTTP2Preface.Match
        if sniffed.isEmpty {
            match = HTTP2Preface.match(bytes)
            if match != .mismatch { sniffed = Array(bytes) }
        } else {
            sniffed.append(contentsOf: bytes)
            match = sniffed.withUnsafeBytes { HTTP2Preface.match($0) }
        }
        switch match {
        case .partial:
            break  // wait for more (the header timeout still runs)
        case .complete:
            handOverToHTTP2()
        case .mismatch:
            sniffing = false
            if sniffed.isEmpty {
                received(bytes)
            } else {
                let first = sniffed
                sniffed = []
                first.withUnsafeBytes { received($0) }
            }
        }
    }

    /// Gives the socket and the bytes read so far to an HTTP/2 connection; this one is done without
    /// closing anything (the connection stays counted once, by its new owner).
    private func handOverToHTTP2() {
        sniffing = false
        let initial = sniffed
        sniffed = []
        phase = .closed
        deadlineKind = .none
        loop.unregister(self)
        HTTP2ServerConnection(stream: stream, loop: loop, context: context, info: info.speaking("h2"),
                              initialBytes: initial).start()
    }

    private func stash(_ bytes: UnsafeRawBufferPointer) {
        pending.append(contentsOf: bytes)
        if pending.count > pendingLimit { channel.pauseReading() }
    }

    /// Parses `input` for as long as the connection is reading requests.
    private func feed(_ input: UnsafeRawBufferPointer) {
        inFeed = true
        defer { inFeed = false }
        var offset = 0
        parsing: while true {
            if phase == .idle {
                if offset >= input.count || awaitingDrain { break parsing }
                beginRequest()
            }
            guard phase == .head || phase == .body else { break parsing }
            let step = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let base = offset
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                break parsing
            case .head(let h):
                headReceived(h)
            case .body(let r):
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[(base + r.lowerBound)..<(base + r.upperBound)]))
            case .end(let trailers):
                requestReceived(trailers)
            case .error(let e):
                failRequest(e)
                return
            }
        }
        if offset < input.count && (phase == .idle || phase == .handling || phase == .forwarding) {
            stash(UnsafeRawBufferPointer(rebasing: input[offset...]))
        }
    }

    private func processPending() {
        guard !pending.isEmpty, !inFeed, phase == .idle, !awaitingDrain else { return }
        let data = pending
        pending = []
        data.withUnsafeBytes { feed($0) }
    }

    private func endOfFile() {
        peerClosed = true
        channel.stopReading()
        switch phase {
        case .idle:
            if pending.isEmpty && !awaitingDrain { closeAfterFlush() }
        case .head, .body:
            abort()  // the client gave up on an incomplete request
        case .lingering:
            close()
        case .handling, .forwarding, .closing, .closed:
            break  // half-close: answer what was asked, then close
        }
    }

    // MARK: request lifecycle

    private func beginRequest() {
        phase = .head
        requestStart = EventLoop.now()
        setDeadline(.header, context.headerTimeout)
    }

    private func headReceived(_ h: HTTPRequestHead) {
        sequence &+= 1
        head = h
        let maxRequests = context.configuration.maxRequestsPerConnection
        keepAlive = h.keepAlive && !context.isDraining && (maxRequests <= 0 || requestsDone + 1 < maxRequests)
        var decision = context.handler.headDecision(for: h, connection: info)
        if case .respondAnnotated(let response, let note) = decision {
            annotation = note
            decision = .respond(response)
        }
        switch decision {
        case .respond(let response), .respondAnnotated(let response, _):
            phase = .body
            if h.framing.hasBody {
                keepAlive = false
                lingerOnClose = true
                sendResponse(response, error: nil)
            } else {
                earlyResponse = response  // sent when the (empty) request completes, in order
            }
        case .accept(let limit):
            if let length = h.contentLength, length > limit {
                failRequest(.bodyTooLarge)
                return
            }
            parser.setBodyLimit(limit)
            phase = .body
            if h.framing.hasBody {
                // One deadline for the whole body, from the end of the head (never restarted by a read).
                setDeadline(.body, context.bodyTimeout)
                if let length = h.contentLength { body.reserveCapacity(min(length, 1 << 20)) }
                if h.expectsContinue {
                    out.append("HTTP/1.1 100 Continue\r\n\r\n")
                    flush()
                }
            }
        }
    }

    private func requestReceived(_ trailers: HTTPHeaders) {
        guard let h = head else { return }
        phase = .handling
        deadlineKind = .none
        requestBodyBytes = body.count
        if let response = earlyResponse {
            earlyResponse = nil
            sendResponse(response, error: nil)
            return
        }
        let request = HTTPRequest(head: h, body: body, trailers: trailers, connection: info)
        body = []
        inHandlerCall = true
        context.handler.handle(request, responder: HTTPResponder(sink: self, sequence: sequence))
        inHandlerCall = false
        if let (answer, annotation, answeredSequence) = synchronousAnswer {
            synchronousAnswer = nil
            apply(answer, annotation: annotation, sequence: answeredSequence)
        }
    }

    /// From `HTTPResponder`, any thread. On the loop's own queue the answer is applied at once (after
    /// `handle` returns when given inside it); from another thread it hops onto the loop.
    func deliver(_ answer: HTTPResponder.Answer, annotation: (any Sendable)?, sequence: UInt64) {
        // `inHandlerCall` is only read on the loop's own queue.
        if loop.inEventLoop {
            if inHandlerCall {
                synchronousAnswer = (answer, annotation, sequence)
            } else {
                // E.g. a store completion on this loop (Redis connections run on the loops): no hop.
                apply(answer, annotation: annotation, sequence: sequence)
            }
            return
        }
        loop.execute { [self] in apply(answer, annotation: annotation, sequence: sequence) }
    }

    private func apply(_ answer: HTTPResponder.Answer, annotation: (any Sendable)?, sequence: UInt64) {
        guard sequence == self.sequence, phase == .handling else { return }
        self.annotation = annotation
        switch answer {
        case .response(let r): sendResponse(r, error: nil)
        case .error(let e): sendResponse(context.handler.errorResponse(for: e, head: head), error: e)
        case .forward(let f): startForward(f)
        }
    }

    private func failRequest(_ error: HTTPError) {
        guard phase != .closed && phase != .closing && phase != .lingering else { return }
        keepAlive = false
        lingerOnClose = true
        if responseStarted {
            abort()
            return
        }
        sendResponse(context.handler.errorResponse(for: error, head: head), error: error)
    }

    private func sendResponse(_ response: HTTPResponse, error: HTTPError?) {
        let isHEAD = head?.method == .head
        let http10 = head?.version.minor == 0
        let keep = keepAlive
        let date = loop.dateHeaderLine()
        let askedClose = out.withBytes {
            HTTP1Serializer.appendResponse(response, requestMethod: head?.method, keepAlive: keep,
                                           clientIsHTTP10: http10, dateLine: date, into: &$0)
        }
        if askedClose { keepAlive = false }
        responseStatus = (200...999).contains(response.status) ? response.status : 500
        responseBodyBytes = isHEAD || responseStatus == 204 || responseStatus == 304 ? 0 : response.body.count
        finishRequest(error: error, aborted: false)
    }

    /// Reports the request and moves on: next request, or close.
    private func finishRequest(error: HTTPError?, aborted: Bool) {
        let now = EventLoop.now()
        let record = HTTPAccessRecord(
            connection: info, method: head?.method, target: head?.target,
            status: responseStarted || responseStatus != 0 ? responseStatus : 499, error: error,
            requestBodyBytes: head == nil ? 0 : max(requestBodyBytes, body.count), responseBodyBytes: responseBodyBytes,
            latencyNanoseconds: now &- requestStart, upstream: upstreamName, aborted: aborted, annotation: annotation)
        annotation = nil
        head = nil
        body = []
        requestBodyBytes = 0
        earlyResponse = nil
        exchange = nil
        upstreamName = nil
        responseHeadFilter = nil
        responseStarted = false
        responseStatus = 0
        responseBodyBytes = 0
        requestsDone += 1
        context.handler.requestCompleted(record)
        if aborted { return }

        if !keepAlive {
            closeAfterFlush()
            return
        }
        phase = .idle
        setDeadline(.silentClose, context.idleTimeout)
        flush()
        if phase == .idle && out.count > context.configuration.writeHighWatermark {
            awaitingDrain = true
            deadlineKind = .none
        }
        continueAfterResponse()
    }

    private func continueAfterResponse() {
        guard phase == .idle, !awaitingDrain, !inFeed else { return }
        if !pending.isEmpty {
            processPending()
        } else if peerClosed {
            closeAfterFlush()
            return
        }
        if phase != .closed && !peerClosed && pending.count <= pendingLimit { stream.resumeReading() }
    }

    // MARK: proxying

    private func startForward(_ forward: HTTPForward) {
        guard forward.upstream.groupID == loop.groupID, loop.index < forward.upstream.loopPools.count else {
            sendResponse(context.handler.errorResponse(for: .upstreamUnavailable, head: head), error: .upstreamUnavailable)
            return
        }
        let pool = forward.upstream.loopPools[loop.index]
        var request: [UInt8] = []
        request.reserveCapacity(512 + forward.headers.storage.count + forward.body.count)
        HTTP1Serializer.appendUpstreamRequest(forward, original: head?.headers, hostHeader: pool.settings.hostHeader,
                                              into: &request)
        phase = .forwarding
        upstreamName = pool.settings.name
        responseHeadFilter = forward.responseHeadFilter
        let ex = UpstreamExchange(pool: pool, method: forward.method, request: request, sink: self)
        exchange = ex
        ex.start()
    }

    func upstreamHead(_ upstreamHead: HTTPResponseHead) {
        guard phase == .forwarding else { return }
        var h = upstreamHead
        responseHeadFilter?(&h)
        let http10 = head?.version.minor == 0
        let mode: DownstreamBody
        if head?.method == .head || h.status == 304 {
            mode = .none(passLength: true)
        } else if h.status == 204 {
            mode = .none(passLength: false)
        } else {
            switch h.framing {
            case .none: mode = .length(0)
            case .contentLength(let n): mode = .length(n)
            case .chunked, .untilClose: mode = http10 ? .untilClose : .chunked
            }
        }
        if mode == .untilClose { keepAlive = false }
        proxiedBody = mode
        responseStarted = true
        responseStatus = h.status
        let keep = keepAlive
        // Queued, not written: the body bytes of the same upstream read join it in one send
        // (`upstreamReadDone` or the end of the response writes it).
        out.withBytes { HTTP1Serializer.appendProxiedHead(h, body: mode, keepAlive: keep, clientIsHTTP10: http10, into: &$0) }
    }

    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard phase == .forwarding, !bytes.isEmpty else { return phase == .forwarding }
        responseBodyBytes += bytes.count
        switch proxiedBody {
        case .chunked:
            out.withBytes { HTTP1Serializer.appendChunkHeader(bytes.count, into: &$0) }
            out.append(bytes)
            out.append("\r\n")
            if out.count >= HTTP1ServerConnection.coalesceLimit { flush() }
        case .length, .untilClose:
            if out.isEmpty && bytes.count >= HTTP1ServerConnection.coalesceLimit {
                let (result, written) = out.writeOrQueue(bytes, to: stream)  // large: no copy when possible
                wrote(result, written)
            } else {
                out.append(bytes)
                if out.count >= HTTP1ServerConnection.coalesceLimit { flush() }
            }
        case .none:
            break
        }
        return phase == .forwarding && out.count < context.configuration.writeHighWatermark
    }

    /// Response bytes queued while relaying one upstream read are written together up to this size.
    static let coalesceLimit = 64 * 1024

    func upstreamReadDone() {
        guard phase == .forwarding, !out.isEmpty else { return }
        flush()
    }

    func upstreamEnd() {
        guard phase == .forwarding else { return }
        exchange = nil
        if proxiedBody == .chunked { out.append("0\r\n\r\n") }
        finishRequest(error: nil, aborted: false)
    }

    func upstreamFailed(_ error: HTTPError) {
        guard phase == .forwarding else { return }
        exchange = nil
        if responseStarted {
            flush()  // what was relayed so far (the head at least), then:
            abort()  // the head is out: closing is the only way to signal the truncation
            return
        }
        sendResponse(context.handler.errorResponse(for: error, head: head), error: error)
    }

    // MARK: writing

    private func flush() {
        guard phase != .closed else { return }
        let (result, written) = out.flush(to: stream)
        wrote(result, written)
    }

    private func wrote(_ result: OutputBuffer.Flush, _ written: Int) {
        if written > 0 { lastWriteProgress = EventLoop.now() }
        switch result {
        case .done:
            channel.disarmWrite()
            drained()
        case .wouldBlock:
            if !channel.isWriteArmed {
                if written == 0 { lastWriteProgress = EventLoop.now() }
                channel.armWrite()
            }
        case .failed:
            abort()
        }
    }

    private func drained() {
        switch phase {
        case .closing:
            startLinger()
        case .idle where awaitingDrain:
            awaitingDrain = false
            setDeadline(.silentClose, context.idleTimeout)
            continueAfterResponse()
        case .forwarding:
            exchange?.resume()
        default:
            break
        }
    }

    // MARK: closing

    private func closeAfterFlush() {
        guard phase != .closed && phase != .lingering else { return }
        phase = .closing
        deadlineKind = .none
        exchange?.cancel()
        exchange = nil
        if !pending.isEmpty { lingerOnClose = true }
        if out.isEmpty { startLinger() } else { flush() }
    }

    /// Closes; when input may be unread, first half-closes and drains input for a while so that our
    /// last response is not destroyed by a TCP reset (RFC 9112 section 9.6).
    private func startLinger() {
        if peerClosed || context.lingerTimeout == 0 || !lingerOnClose {
            close()
            return
        }
        stream.shutdownWrite()
        phase = .lingering
        pending = []
        stream.resumeReading()
        setDeadline(.linger, context.lingerTimeout)
    }

    /// Closes at once; reports the request in progress as aborted.
    private func abort() {
        guard phase != .closed else { return }
        let inProgress = head != nil && (phase == .body || phase == .handling || phase == .forwarding || phase == .head)
        if inProgress {
            exchange?.cancel()
            exchange = nil
            finishRequest(error: nil, aborted: true)
        }
        close()
    }

    private func close() {
        guard phase != .closed else { return }
        phase = .closed
        deadlineKind = .none
        exchange?.cancel()
        exchange = nil
        stream.close()
        loop.unregister(self)
        context.connectionClosed()
    }

    /// Graceful shutdown: close when idle, else answer the request in progress with `Connection: close`.
    func drain() {
        switch phase {
        case .idle:
            if pending.isEmpty && !awaitingDrain { closeAfterFlush() } else { keepAlive = false }
        case .head, .body, .handling, .forwarding:
            keepAlive = false
        case .closing, .lingering, .closed:
            break
        }
    }

    /// Shutdown deadline passed: close now.
    func forceClose() { abort() }

    // MARK: timers

    func tick(now: UInt64) {
        guard phase != .closed else { return }
        if channel.isWriteArmed && context.writeTimeout > 0 && now &- lastWriteProgress > context.writeTimeout {
            abort()
            return
        }
        guard deadlineKind != .none, now >= deadline else { return }
        switch deadlineKind {
        case .silentClose:
            // Never cut a response still being written: the write timeout governs a slow reader.
            if phase == .idle && out.isEmpty && pending.isEmpty {
                close()
            } else {
                setDeadline(.silentClose, context.idleTimeout)
            }
        case .header:
            if phase == .head { failRequest(.headerTimeout) }
        case .body:
            if phase == .body { failRequest(.bodyTimeout) }
        case .linger:
            close()
        case .none:
            break
        }
    }
}
