// One downstream HTTP/1.1 connection: the I/O around its HTTP1ConnectionMachine.

import GatewayIO

/// Drives one accepted connection on its event loop: reads and writes its `ByteStream`, calls the
/// handler, runs the upstream exchange, and performs what its `HTTP1ConnectionMachine` decides.
///
/// Every protocol rule (pipelining, persistence, 100-continue, errors, proxied framing,
/// backpressure, lingering close, timeouts) lives in the machine; this class only turns I/O and
/// handler results into machine events and the machine's actions into I/O and handler calls. It
/// reads the clock once per entry (readiness, answer, upstream event, timer tick) and passes it on.
///
/// h2c with prior knowledge (RFC 9113 section 3.3): until the first bytes decide, they are compared
/// with the HTTP/2 client preface (waiting for more while they are a prefix of it); on a match the
/// socket and the bytes read so far go to an `HTTP2ServerConnection`, otherwise the bytes are parsed
/// as HTTP/1.1. `Upgrade: h2c` is never performed: such a request is served as HTTP/1.1.
///
/// The handler's `RequestContext` of the request in progress is kept here (`requestContext`, boxed
/// by the handler's typed calls, `HTTPHandlerCalls`), from the head decision to the access-log
/// report (the machine keeps none, see `HTTP1ConnectionMachine`). Not generic: compiled once,
/// specialized, whatever the handler.
final class HTTP1ServerConnection: DownstreamConnection, HTTPResponseSink, UpstreamResponseSink,
    @unchecked Sendable  // all state confined to `loop.queue`; `deliver` hops onto it
{
    let loop: EventLoop
    let context: HTTPServerContext
    var server: HTTPServerContext { context }
    let info: HTTPConnectionInfo
    /// The connection's bytes (plain or TLS) and, through `stream.channel`, its readiness interest.
    private let stream: ByteStream
    private var channel: SocketChannel { stream.channel }
    /// The connection's state machine.
    ///
    /// Release builds drop the run-time exclusivity check of this and the next three properties
    /// (`@exclusivity(unchecked)`; debug builds, and so the test suite, keep it): they are touched
    /// only on `loop.queue` and no access can overlap another (the machine is a value that returns
    /// actions, applied by `perform` after its call ended, and the one closure it runs, `writeOutput`'s,
    /// only writes to the stream; the others are read, assigned or `take()`n). The checks were about
    /// 14 accesses per request, 8% of a `mode: off` request's instructions (bench/PERFORMANCE.md "Seventh pass").
    #if DEBUG
    private var machine: HTTP1ConnectionMachine
    #else
    @exclusivity(unchecked) private var machine: HTTP1ConnectionMachine
    #endif
    #if DEBUG
    private var exchange: UpstreamExchange?
    #else
    @exclusivity(unchecked) private var exchange: UpstreamExchange?
    #endif
    /// True while `handler.handle` runs: an answer given synchronously is applied right after it
    /// returns (not inside the handler's call, not through another trip through the queue).
    private var inHandlerCall = false
    #if DEBUG
    private var synchronousAnswer: (HTTPAnswer, HTTPContextBox?, UInt64)?
    #else
    @exclusivity(unchecked) private var synchronousAnswer: (HTTPAnswer, HTTPContextBox?, UInt64)?
    #endif
    /// The handler's context for the request in progress: set by its head decision, replaced by an
    /// answer the machine takes, handed to `requestCompleted` with its record (then nil again).
    #if DEBUG
    private var requestContext: HTTPContextBox?
    #else
    @exclusivity(unchecked) private var requestContext: HTTPContextBox?
    #endif
    /// True until the first bytes decided between HTTP/1.1 and the HTTP/2 preface (plain connections
    /// only: over TLS, ALPN decided).
    private var sniffing = true
    /// First bytes kept while they are a proper prefix of the HTTP/2 preface.
    private var sniffed: [UInt8] = []
    /// `handler.connectionStarted` was called (so `connectionEnded` is due at close).
    private var reportedStart = false

    /// A connection over `stream` (accepted, and past its TLS handshake when it has one); it takes
    /// over the stream's readiness handlers.
    init(stream: ByteStream, loop: EventLoop, context: HTTPServerContext, info: HTTPConnectionInfo) {
        self.loop = loop
        self.context = context
        self.info = info
        self.stream = stream
        machine = HTTP1ConnectionMachine(settings: context.connectionSettings, connection: info,
                                         loopGroupID: loop.groupID, loopIndex: loop.index,
                                         dateLine: { [unowned loop] in loop.dateHeaderLine() })
        stream.setHandlers(onReadable: { [unowned self] in self.readable() },
                           onWritable: { [unowned self] in self.writable() })
        #if DEBUG
        context.liveSinks.increment()
        #endif
    }

    #if DEBUG
    deinit { context.liveSinks.decrement() }
    #endif

    /// Where the connection's machine is (diagnostics and tests; on the loop's queue).
    var phase: HTTP1ConnectionMachine.Phase { machine.phase }
    /// Whether a write is blocked waiting for writability (diagnostics and tests; on the loop's queue).
    var isWriteBlocked: Bool { machine.writeArmed }

    /// Registers on the loop and starts reading; the first request's head is due within the header timeout.
    func start() {
        loop.register(self)
        if info.isSecure {
            // Over TLS the protocol was chosen by ALPN (h2 never gets here): HTTP/2 without ALPN
            // `h2` is not served (RFC 9113 section 3.2); its preface reads as a bad request line.
            sniffing = false
            reportStart()
        }
        channel.startReading()
        let now = loop.turnTime
        perform(machine.start(now: now), now: now)
        // Accepted while the listeners stay open for a handover: serve one request, then close.
        if context.isDraining { machine.acceptedWhileDraining() }
    }

    // MARK: events in

    private func readable() {
        let now = loop.turnTime
        var reads = 0
        while reads < 4 && !machine.isClosed && channel.isReading {
            reads += 1
            let buffer = loop.readBuffer
            switch stream.read(into: buffer) {
            case .bytes(let n):
                let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: n)
                if sniffing { sniff(bytes, now: now) } else { received(bytes, now: now) }
                if n < buffer.count { return }
            case .endOfFile:
                perform(machine.endOfFile(now: now), now: now)
                return
            case .wouldBlock:
                return
            case .failed:
                perform(machine.readFailed(now: now), now: now)
                return
            }
        }
    }

    /// Decides the protocol from the first bytes (RFC 9113 section 3.3); the machine sees them only
    /// when they are not the HTTP/2 preface.
    private func sniff(_ bytes: UnsafeRawBufferPointer, now: UInt64) {
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
            break  // wait for more (the machine's first deadline still runs)
        case .complete:
            handOverToHTTP2()
        case .mismatch:
            sniffing = false
            reportStart()
            if sniffed.isEmpty {
                received(bytes, now: now)
            } else {
                let first = sniffed
                sniffed = []
                first.withUnsafeBytes { received($0, now: now) }
            }
        }
    }

    /// Reports the connection as speaking HTTP/1.1 (once).
    private func reportStart() {
        guard !reportedStart else { return }
        reportedStart = true
        context.handler.connectionStarted(info)
    }

    /// Gives the socket and the bytes read so far to an HTTP/2 connection; this one is done without
    /// closing anything (the connection stays counted once, by its new owner).
    private func handOverToHTTP2() {
        sniffing = false
        let initial = sniffed
        sniffed = []
        machine.handedOver()
        loop.unregister(self)
        HTTP2ServerConnection(stream: stream, loop: loop, context: context, info: info.speaking("h2"),
                              initialBytes: initial).start()
    }

    /// Feeds `input` to the machine, again with the rest each time it stopped (at a head, at the end
    /// of a request) once its actions are performed.
    private func received(_ input: UnsafeRawBufferPointer, now: UInt64) {
        var offset = 0
        var now = now
        while true {
            let (consumed, actions) = machine.received(UnsafeRawBufferPointer(rebasing: input[offset...]), now: now)
            offset += consumed
            perform(actions, now: now)
            guard offset < input.count, consumed > 0 else { return }
            now = loop.turnTime  // the handler may have run
        }
    }

    private func writable() {
        guard !machine.isClosed else { return }
        let (result, written) = machine.writeOutput { stream.write($0) }
        let now = loop.turnTime
        perform(machine.flushed(result, written: written, now: now), now: now)
    }

    /// From `HTTPResponder`, any thread. On the loop's own queue the answer is applied at once (after
    /// `handle` returns when given inside it); from another thread it hops onto the loop.
    func deliver(_ answer: consuming HTTPAnswer, context: HTTPContextBox?, sequence: UInt64) {
        // `inHandlerCall` is only read on the loop's own queue.
        if loop.inEventLoop {
            if inHandlerCall {
                synchronousAnswer = (answer, context, sequence)
            } else {
                // E.g. a store completion on this loop (Redis connections run on the loops): no hop.
                let now = loop.turnTime
                perform(answered(answer, context: context, sequence: sequence, now: now), now: now)
            }
            return
        }
        loop.execute { [self, answer] in
            let now = loop.turnTime
            perform(answered(answer, context: context, sequence: sequence, now: now), now: now)
        }
    }

    /// Gives an answer to the machine; its context replaces the request's when the machine takes it.
    private func answered(_ answer: consuming HTTPAnswer, context: HTTPContextBox?, sequence: UInt64, now: UInt64)
        -> HTTP1ConnectionMachine.Actions {
        if let context, machine.acceptsAnswer(for: sequence) { requestContext = context }
        return machine.answered(answer, sequence: sequence, now: now)
    }

    /// From the exchange: the upstream response head.
    func upstreamHead(_ head: consuming HTTPResponseHead) {
        perform(machine.upstreamHead(head), now: nil)
    }

    /// From the exchange: body bytes; false pauses it until the output drained (backpressure).
    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        perform(machine.upstreamBody(bytes), now: nil, direct: bytes)
        return machine.upstreamMayContinue
    }

    /// From the exchange: one upstream read was relayed.
    func upstreamReadDone() {
        perform(machine.upstreamReadDone(), now: nil)
    }

    /// From the exchange: the response is complete.
    func upstreamEnd() {
        exchange = nil
        let now = loop.turnTime
        perform(machine.upstreamEnd(now: now), now: now)
    }

    /// From the exchange: it failed.
    func upstreamFailed(_ error: HTTPError) {
        exchange = nil
        let now = loop.turnTime
        perform(machine.upstreamFailed(error, now: now), now: now)
    }

    /// Graceful shutdown: close when idle, else answer the request in progress with `Connection: close`.
    func drain() {
        let now = loop.turnTime
        perform(machine.drain(now: now), now: now)
    }

    /// Shutdown deadline passed: close now.
    func forceClose() {
        let now = loop.turnTime
        perform(machine.forceClose(now: now), now: now)
    }

    /// The loop's timer: hands the time to the machine, which applies the deadline due.
    func tick(now: UInt64) {
        perform(machine.tick(now: now), now: now)
    }

    // MARK: actions out

    /// Performs `actions` and, when the last one is answered at once (a write, a head decision, an
    /// error rendering, a synchronous handler answer), the actions of that answer, and so on: a loop,
    /// whatever the length of a pipeline. `now` is read when first needed when nil; `direct` holds
    /// the bytes of the `upstreamBody` event for a `writeDirect`.
    private func perform(_ first: HTTP1ConnectionMachine.Actions, now: UInt64?, direct: UnsafeRawBufferPointer? = nil) {
        var actions = first
        var known = now
        func clock() -> UInt64 {
            if let known { return known }
            let t = loop.turnTime
            known = t
            return t
        }
        while !actions.isEmpty {
            var next = HTTP1ConnectionMachine.Actions()
            for action in actions {
                switch action {
                case .decideHead:
                    guard let head = machine.requestHead else { break }
                    if context.isDraining { _ = machine.drain(now: clock()) }  // no action while deciding
                    let (decision, decided) = context.handler.headDecision(head, info)
                    requestContext = decided
                    next = machine.headDecided(HTTP1ConnectionMachine.HeadDecision(decision), now: clock())
                case .handleRequest:
                    guard let request = machine.takeRequest(), let requestContext else { break }
                    inHandlerCall = true
                    context.handler.handle(consume request, requestContext,
                                           HTTPAnswerChannel(sink: self, sequence: machine.sequence))
                    inHandlerCall = false
                    if let (answer, context, sequence) = synchronousAnswer.take() {
                        known = loop.turnTime  // after the handler's work
                        next = answered(answer, context: context, sequence: sequence, now: clock())
                    }
                case .renderError:
                    guard let error = machine.errorToRender else { break }
                    let response = context.handler.errorResponse(error, machine.requestHead, requestContext)
                    next = machine.errorRendered(response, now: clock())
                case .flush:
                    let (result, written) = machine.writeOutput { stream.write($0) }
                    next = machine.flushed(result, written: written, now: clock())
                case .writeDirect:
                    guard let direct else { break }
                    let (result, written) = machine.writeDirect(direct) { stream.write($0) }
                    next = machine.flushed(result, written: written, now: clock())
                case .startForward:
                    guard let upstream = machine.takeUpstreamRequest() else { break }
                    let ex = UpstreamExchange(pool: upstream.pool, method: upstream.method, request: upstream.bytes, sink: self,
                                              connectTimeout: upstream.connectTimeout, responseTimeout: upstream.responseTimeout)
                    exchange = ex
                    ex.start()  // may fail at once: `upstreamFailed` runs its own actions
                case .answerUpstreamFailure:
                    guard let (error, answer) = machine.takeUpstreamFailure() else { break }
                    let channel = HTTPAnswerChannel(sink: self, sequence: machine.sequence)
                    inHandlerCall = true
                    answer(error) { _ = channel.answer(.response($0), context: nil) }
                    inHandlerCall = false
                    if let (answer, context, sequence) = synchronousAnswer.take() {
                        known = loop.turnTime
                        next = answered(answer, context: context, sequence: sequence, now: clock())
                    }
                case .report:
                    if let record = machine.takeAccessRecord() {
                        let decided = requestContext
                        requestContext = nil
                        context.handler.requestCompleted(record, decided)
                    }
                case .armWrite:
                    channel.armWrite()
                case .disarmWrite:
                    channel.disarmWrite()
                case .pauseReading:
                    channel.pauseReading()
                case .resumeReading:
                    stream.resumeReading()  // also hands over input TLS already holds
                case .stopReading:
                    channel.stopReading()
                case .resumeUpstream:
                    exchange?.resume()
                case .cancelUpstream:
                    exchange?.cancel()
                    exchange = nil
                case .shutdownWrite:
                    stream.shutdownWrite()
                case .close:
                    exchange?.cancel()
                    exchange = nil
                    requestContext = nil
                    stream.close()
                    loop.unregister(self)
                    if reportedStart { context.handler.connectionEnded(info) }
                    context.connectionClosed(loop: loop.index)
                }
            }
            actions = next
        }
    }
}
