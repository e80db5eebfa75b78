// One HTTP/1.1 connection to an upstream, on one event loop.

#if canImport(Glibc)
import GatewayIO
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A non-blocking connection to the upstream: connects, writes a request, parses the response with
/// `HTTP1ResponseParser` and relays it to its `UpstreamExchange`; between exchanges it waits idle in
/// its `UpstreamLoopPool`.
final class UpstreamConnection: EventLoopResident {  // confined to `pool.loop.queue`
    private enum State { case connecting, handshaking, active, idle, closed }
    private enum Deadline { case none, connect, response, idle }

    private let pool: UpstreamLoopPool
    /// The endpoint it is connected (or connecting) to.
    let endpoint: UpstreamEndpointState
    /// The connection's bytes (plain, or TLS for `https://` upstreams) and its readiness interest.
    private let stream: ByteStream
    private var channel: SocketChannel { stream.channel }
    /// Release builds drop the run-time exclusivity check of both (`@exclusivity(unchecked)`; debug
    /// builds keep it): touched only on `loop.queue` by this connection's own methods, whose accesses
    /// never nest (the parser is a value that returns steps; the connection acts on them after the
    /// call). bench/PERFORMANCE.md "Seventh pass".
    #if DEBUG
    private var state: State
    #else
    @exclusivity(unchecked) private var state: State
    #endif
    #if DEBUG
    private var parser: HTTP1ResponseParser
    #else
    @exclusivity(unchecked) private var parser: HTTP1ResponseParser
    #endif
    /// The request being sent (shares the exchange's storage: no copy) and how much of it is written.
    private var request: [UInt8] = []
    private var exchange: UpstreamExchange?
    private var exchangesServed = 0
    private var requestBytesWritten = 0
    private var requestComplete = false
    private var responseKeepAlive = false
    private var paused = false
    private var deadline: UInt64 = 0
    private var deadlineKind = Deadline.none

    private init(pool: UpstreamLoopPool, endpoint: UpstreamEndpointState, fd: Int32, connected: Bool) {
        self.pool = pool
        self.endpoint = endpoint
        state = connected ? .active : .connecting
        parser = HTTP1ResponseParser(limits: pool.settings.limits)
        stream = ByteStream(fd: fd, loop: pool.loop)
        stream.setHandlers(onReadable: { [unowned self] in self.readable() },
                           onWritable: { [unowned self] in self.writable() })
        pool.loop.register(self)
    }

    /// Opens a connection to `address` of `endpoint` (connect in progress or done), bounded by
    /// `connectTimeout` nanoseconds (TLS handshake included).
    static func open(pool: UpstreamLoopPool, endpoint: UpstreamEndpointState, address: SocketAddress,
                     connectTimeout: UInt64) -> Result<UpstreamConnection, HTTPError> {
        let fd: Int32
        do { fd = try Socket.makeStream(family: address.family) } catch { return .failure(.upstreamUnavailable) }
        switch Socket.connect(fd, to: address) {
        case .failure:
            _ = Glibc.close(fd)
            return .failure(.upstreamUnavailable)
        case .success(let connected):
            if !address.isUnix { Socket.setNoDelay(fd) }
            let c = UpstreamConnection(pool: pool, endpoint: endpoint, fd: fd, connected: connected)
            if connected { endpoint.connected() }
            if connected && pool.settings.tlsContext != nil {
                c.setDeadline(.connect, connectTimeout)
                c.startTLS()
            } else if connected {
                c.channel.startReading()
            } else {
                c.setDeadline(.connect, connectTimeout)
                c.channel.armWrite()
            }
            return .success(c)
        }
    }

    /// Arms the deadline `kind` at `duration` nanoseconds after `now` (read from the clock when nil);
    /// 0 disarms.
    private func setDeadline(_ kind: Deadline, _ duration: UInt64, now: UInt64? = nil) {
        deadlineKind = duration == 0 ? .none : kind
        deadline = duration == 0 ? 0 : (now ?? EventLoop.now()) &+ duration
    }

    // MARK: exchange

    /// Starts sending `exchange.request` at `now` (monotonic nanoseconds: the response timeout starts).
    func begin(_ exchange: UpstreamExchange, now: UInt64) {
        self.exchange = exchange
        parser.expectResponse(to: exchange.method)
        requestBytesWritten = 0
        requestComplete = false
        responseKeepAlive = false
        paused = false
        request = exchange.request
        if state == .idle { state = .active }
        if state == .active {
            setDeadline(.response, responseTimeout, now: now)
            flush(now: now)
        }
    }

    /// The response timeout of the current exchange (the route's, else the upstream's), nanoseconds.
    private var responseTimeout: UInt64 { exchange?.responseTimeout ?? pool.settings.responseTimeout }

    /// Back in the pool at `now` (monotonic nanoseconds: the idle timeout starts).
    func becameIdle(now: UInt64) {
        state = .idle
        exchange = nil
        setDeadline(.idle, pool.settings.idleTimeout, now: now)
    }

    /// Stops reading the response until `resumeReading()` (the downstream's buffers are full); the
    /// response timeout stops meanwhile, as when `receivedBody` asks for the pause.
    func pauseReading() {
        guard !paused, state == .active else { return }
        pause()
    }

    func resumeReading() {
        guard paused, state == .active else { return }
        paused = false
        stream.resumeReading()
        setDeadline(.response, responseTimeout)
    }

    /// The downstream gave up: close without telling the exchange.
    func abandon() {
        exchange = nil
        close()
    }

    func close() {
        guard state != .closed else { return }
        let wasIdle = state == .idle
        state = .closed
        deadlineKind = .none
        stream.close()
        pool.loop.unregister(self)
        if wasIdle { pool.remove(self) }
    }

    // MARK: I/O

    /// Writes what is left of the request; `now` is the time of the call when the caller knows it.
    private func flush(now: UInt64? = nil) {
        while requestBytesWritten < request.count {
            let offset = requestBytesWritten
            let r = request.withUnsafeBytes { stream.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch r {
            case .success(0):
                channel.armWrite()
                return
            case .success(let n):
                requestBytesWritten += n
                // Sending a large body is progress too: the response timeout counts from the last progress.
                if deadlineKind == .response { setDeadline(.response, responseTimeout, now: now) }
            case .failure:
                fail(.upstreamReset)
                return
            }
        }
        request = []
        channel.disarmWrite()
        if !requestComplete {
            requestComplete = true
            exchange?.requestWritten()  // the exchange may let go of its copy now
        }
    }

    private func writable() {
        switch state {
        case .connecting:
            let error = Socket.pendingError(channel.fd)
            guard error == 0 else {
                fail(.upstreamUnavailable)
                return
            }
            endpoint.connected()
            if pool.settings.tlsContext != nil {
                startTLS()
                return
            }
            state = .active
            channel.disarmWrite()
            channel.startReading()
            setDeadline(.response, responseTimeout)
            flush()
        case .handshaking:
            advanceHandshake()
        case .active:
            flush()
        case .idle, .closed:
            channel.disarmWrite()
        }
    }

    /// TCP is up: the TLS client handshake comes next (bounded by the connect timeout).
    private func startTLS() {
        guard let context = pool.settings.tlsContext else { return }
        state = .handshaking
        do {
            stream.attachTLS(try TLSConnection(client: context, fd: channel.fd, serverName: endpoint.serverName ?? ""))
        } catch {
            fail(.upstreamTLSFailed)
            return
        }
        advanceHandshake()
    }

    private func advanceHandshake() {
        switch stream.continueHandshake() {
        case .inProgress:
            break
        case .done:
            state = .active
            channel.startReading()
            if exchange != nil {
                setDeadline(.response, responseTimeout)
                flush()
            } else {
                deadlineKind = .none
            }
        case .closed, .failed:
            fail(.upstreamTLSFailed)
        }
    }

    private func readable() {
        switch state {
        case .handshaking:
            advanceHandshake()
        case .idle:
            // An idle connection has nothing to read: data or end of file means it is unusable.
            close()
        case .active:
            let buffer = pool.loop.readBuffer
            switch stream.read(into: buffer) {
            case .bytes(let n):
                let now = EventLoop.now()  // once per read: the response timeout, the head's time, the idle timeout
                // Between reads of the body, each read is progress; before the head it is not: an
                // upstream dripping its head a byte at a time, or sending 1xx after 1xx, gets the
                // response timeout from the end of the request to the head, as documented.
                if deadlineKind == .response && parser.isReadingBody { setDeadline(.response, responseTimeout, now: now) }
                process(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n), now: now)
                exchange?.receivedReadDone()
            case .endOfFile:
                endOfFile()
            case .wouldBlock:
                break
            case .failed:
                fail(.upstreamReset)
            }
        case .connecting, .closed:
            break
        }
    }

    private func process(_ input: UnsafeRawBufferPointer, now: UInt64) {
        var offset = 0
        var wantsPause = false
        while state == .active, let ex = exchange {
            let step = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let base = offset
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                if wantsPause && state == .active && exchange === ex { pause() }
                return
            case .head(let head):
                // A response that has no body by rule (to HEAD; 204, 304) ends the connection's use:
                // an upstream that sends a body anyway (`do_HEAD = do_GET`) often sends it in a later
                // write, which arrives after the next client's request went out on the pooled
                // connection and would be taken as that client's response (probe: 13-18 of 20).
                responseKeepAlive = head.keepAlive && ex.method != .head && head.status != 204 && head.status != 304
                ex.receivedHead(head, now: now)
            case .body(let r):
                let bytes = UnsafeRawBufferPointer(rebasing: input[(base + r.lowerBound)..<(base + r.upperBound)])
                if !ex.receivedBody(bytes) { wantsPause = true }
            case .end:
                complete(leftover: offset < input.count, now: now)
                return
            case .error(let e):
                fail(e)
                return
            }
        }
    }

    private func pause() {
        paused = true
        channel.pauseReading()
        deadlineKind = .none
    }

    private func endOfFile() {
        // Over TLS, only a close_notify ends a body delimited by the close (RFC 8446 section 6.1):
        // a bare TCP close may be a truncation an attacker on the path made, so the response is cut
        // short (the client sees an aborted body, never a final chunk).
        if parser.isCloseDelimited, let tls = stream.tls, !tls.receivedCloseNotify {
            fail(.upstreamReset)
            return
        }
        switch parser.finish() {
        case .end:
            responseKeepAlive = false
            complete(leftover: false, now: EventLoop.now())
        case .error(let e):
            fail(e)
        default:
            close()
        }
    }

    /// The response is complete at `now`: back to the pool when reusable, then tell the exchange.
    private func complete(leftover: Bool, now: UInt64) {
        let ex = exchange
        exchange = nil
        exchangesServed += 1
        let reusable = responseKeepAlive && requestComplete && !leftover && state == .active
        if reusable {
            pool.release(self, now: now)
        } else {
            close()
        }
        ex?.receivedEnd()
    }

    private func fail(_ error: HTTPError) {
        let ex = exchange
        exchange = nil
        let reused = exchangesServed > 0
        let nothingSent = requestBytesWritten == 0
        let connecting = state == .connecting || state == .handshaking
        let retryable = error == .upstreamReset && reused && !parser.receivedAnyByte
            && (nothingSent || (ex?.mayResend ?? false))
        close()
        if connecting { pool.connectFailed(endpoint) }
        ex?.failed(error, retryable: retryable, connectFailed: connecting,
                   detail: error == .upstreamBadResponse ? parser.failureDetail : nil)
    }

    func tick(now: UInt64) {
        guard deadlineKind != .none, now >= deadline else { return }
        switch deadlineKind {
        case .connect: fail(.upstreamConnectTimeout)
        case .response: fail(.upstreamTimeout)
        case .idle: close()
        case .none: break
        }
    }
}
