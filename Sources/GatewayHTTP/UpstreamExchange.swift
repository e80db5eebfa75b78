// One request/response exchange with an upstream, including the single retry on a stale connection.

import GatewayIO

/// Receives the upstream response of an exchange (implemented by downstream connections).
protocol UpstreamResponseSink: AnyObject {
    /// The final response head arrived.
    func upstreamHead(_ head: consuming HTTPResponseHead)
    /// Decoded response body bytes (valid only during the call). Return false to pause the upstream
    /// until `UpstreamExchange.resume()`.
    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Every event of one upstream read was delivered (write what was queued).
    func upstreamReadDone()
    /// The response is complete.
    func upstreamEnd()
    /// The exchange failed (see `UpstreamPool` for the errors).
    func upstreamFailed(_ error: HTTPError)
    /// The whole request was written to the upstream socket (the kernel has it): the downstream
    /// side may stop counting its body as held (`HTTP2Session.releaseRequestBody(_:)`). Called once
    /// per attempt, before or after the response head.
    func upstreamRequestSent()
    /// Whether `upstreamRequestSent` does anything (asked once per exchange: the call is skipped
    /// otherwise).
    var hearsRequestSent: Bool { get }
}

extension UpstreamResponseSink {
    /// Nothing to do by default (an HTTP/1.1 connection holds one request at a time).
    func upstreamRequestSent() {}
    var hearsRequestSent: Bool { false }
}

/// Drives one exchange on the loop: picks an endpoint and a connection, sends the request, relays
/// events, retries a failed connect on another endpoint and once on a stale pooled connection (rules
/// documented on `UpstreamPool`). Counts itself in its endpoint's exchanges in progress while it
/// holds a connection there.
///
/// The serialized request is kept for that retry only when it is small (`retryBufferBytes`, Envoy's
/// rule: a request larger than the retry buffer is not retried): once a larger request, or one that
/// may not be re-sent once written (not idempotent), is written whole, its bytes are let go and the
/// exchange is no longer retryable. So an exchange waiting for a slow response holds at most
/// `retryBufferBytes` of request, not the whole body.
final class UpstreamExchange {  // confined to the loop of `pool`
    /// Largest serialized request (head and body, bytes) kept after it was written, for the one
    /// retry on a stale pooled connection: 64 KiB (Config/REFERENCE.md "HTTP/2 limits").
    static let retryBufferBytes = 64 << 10

    let pool: UpstreamLoopPool
    let method: HTTPMethod
    /// The serialized request (head and body); empty once it was written and could not be retried
    /// (over `retryBufferBytes`, or not idempotent), and once the exchange finished.
    private(set) var request: [UInt8]
    /// The request was written whole and let go: it cannot be sent again.
    private var requestReleased = false
    /// Connect timeout of this exchange's connections, nanoseconds (the route's or the upstream's).
    let connectTimeout: UInt64
    /// Response timeout of this exchange, nanoseconds (the route's or the upstream's).
    let responseTimeout: UInt64
    /// Who hears the response: held strongly until the exchange finishes (`finish` lets go of it,
    /// which ends the cycle with the downstream side that holds this exchange). Not `weak`: a weak
    /// reference gives its object a side table for the rest of its life, and every retain and
    /// release of a downstream connection then takes the runtime's slow path (about 300
    /// instructions per proxied request, `bench/instructions`).
    private var sink: (any UpstreamResponseSink)?
    /// `sink.hearsRequestSent`, read once.
    private let sinkHearsRequestSent: Bool
    private var connection: UpstreamConnection?
    /// The endpoint counted as busy with this exchange.
    private var busy: UpstreamEndpointState?
    /// Endpoints tried so far.
    private var tried = UpstreamLoopPool.Tried()
    private var attempts = 0
    private(set) var isFinished = false
    /// Monotonic start, set by `start()` (only read when the pool has an observer).
    private var started: UInt64 = 0
    /// Nanoseconds to the response head, 0 before it; status of that head.
    private var headNanoseconds: UInt64 = 0
    private var status = 0
    /// Why the response was malformed (`UpstreamExchangeReport.detail`).
    private var failureDetail: HTTPError?

    /// The one endpoint this exchange may use (health checks), nil: any, by the balancing policy.
    let pinned: Int?

    /// An exchange; `connectTimeout` and `responseTimeout` (seconds) override the upstream's;
    /// `endpoint` pins it to one endpoint on a fresh connection, without retries elsewhere and
    /// without counting in the endpoint's load (health checks).
    init(pool: UpstreamLoopPool, method: HTTPMethod, request: [UInt8], sink: any UpstreamResponseSink,
         connectTimeout: Double? = nil, responseTimeout: Double? = nil, endpoint: Int? = nil) {
        pinned = endpoint
        self.pool = pool
        self.method = method
        self.request = request
        self.sink = sink
        sinkHearsRequestSent = sink.hearsRequestSent
        self.connectTimeout = connectTimeout.map(UpstreamLoopPool.nanoseconds) ?? pool.settings.connectTimeout
        self.responseTimeout = responseTimeout.map(UpstreamLoopPool.nanoseconds) ?? pool.settings.responseTimeout
    }

    /// Sends the request (the clock is read once here: the start of the exchange and of its first
    /// response timeout).
    func start() {
        let now = EventLoop.now()
        started = now
        attempt(allowIdle: true, now: now)
    }

    /// Whether an observer hears of this exchange (health checks, pinned, report to none).
    private var isObserved: Bool { pinned == nil && pool.settings.observer != nil }

    private func attempt(allowIdle: Bool, now: UInt64) {
        attempts += 1
        let result = pinned.map { pool.acquire(endpoint: $0, connectTimeout: connectTimeout) }
            ?? pool.acquire(allowIdle: allowIdle, tried: &tried, connectTimeout: connectTimeout)
        switch result {
        case .failure(let e):
            let sink = finish(.failed(e))
            sink?.upstreamFailed(e)
        case .success(let c):
            connection = c
            if pinned == nil { setBusy(c.endpoint) }
            c.begin(self, now: now)
        }
    }

    private func setBusy(_ endpoint: UpstreamEndpointState?) {
        if busy === endpoint { return }
        busy?.active.subtract(1, ordering: .relaxed)
        endpoint?.active.add(1, ordering: .relaxed)
        busy = endpoint
    }

    /// Ends the exchange, reports it to the pool's observer (not for health checks) and lets go of
    /// the sink, which it returns for the last event.
    @discardableResult
    private func finish(_ outcome: UpstreamExchangeReport.Outcome) -> (any UpstreamResponseSink)? {
        isFinished = true
        connection = nil
        request = []
        setBusy(nil)
        let last = sink
        sink = nil
        if pinned == nil, let observer = pool.settings.observer {
            observer(UpstreamExchangeReport(
                upstream: pool.settings.name, loopIndex: pool.loop.index, outcome: outcome, status: status,
                nanoseconds: headNanoseconds != 0 ? headNanoseconds : max(1, EventLoop.now() &- started), retried: attempts > 1,
                detail: failureDetail))
        }
        return last
    }

    // MARK: from the connection

    /// Whether the request may be sent again once some of it was written (the retry on a stale
    /// pooled connection): idempotent (RFC 9110 section 9.2.2), at most `retryBufferBytes`, and
    /// still held.
    var mayResend: Bool { method.isIdempotent && !requestReleased && request.count <= UpstreamExchange.retryBufferBytes }

    /// The connection wrote the whole request: a request the retry rule would never re-send, or
    /// one over `retryBufferBytes`, is let go now (the exchange is then not retried); the sink hears
    /// that the upstream side no longer needs the downstream's copy.
    func requestWritten() {
        guard !isFinished else { return }
        if request.count > UpstreamExchange.retryBufferBytes || !method.isIdempotent {
            request = []
            requestReleased = true
        }
        if sinkHearsRequestSent { sink?.upstreamRequestSent() }
    }

    /// The response head, read at `now` (monotonic nanoseconds).
    func receivedHead(_ head: consuming HTTPResponseHead, now: UInt64) {
        guard !isFinished else { return }
        if isObserved {
            status = head.status
            headNanoseconds = max(1, now &- started)
        }
        sink?.upstreamHead(head)
    }

    func receivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isFinished, let sink else { return true }
        return sink.upstreamBody(bytes)
    }

    func receivedReadDone() {
        guard !isFinished else { return }
        sink?.upstreamReadDone()
    }

    func receivedEnd() {
        guard !isFinished else { return }
        let sink = finish(.completed)
        sink?.upstreamEnd()
    }

    /// The connection failed with `error`; `detail` is the response parser's reason behind an
    /// `.upstreamBadResponse` (reported, not answered).
    func failed(_ error: HTTPError, retryable: Bool, connectFailed: Bool, detail: HTTPError? = nil) {
        guard !isFinished else { return }
        connection = nil
        failureDetail = detail
        if connectFailed && pinned == nil && tried.count < pool.endpoints.count {
            pool.counters.connectRetries.add(1, ordering: .relaxed)
            attempt(allowIdle: true, now: EventLoop.now())  // another endpoint: nothing was sent
            return
        }
        if retryable && attempts == 1 && pinned == nil && !requestReleased {
            pool.counters.retries.add(1, ordering: .relaxed)
            tried.removeAll()
            attempt(allowIdle: false, now: EventLoop.now())
            return
        }
        let sink = finish(.failed(error))
        sink?.upstreamFailed(error)
    }

    // MARK: from the downstream side

    /// The downstream drained: read the upstream again.
    func resume() { connection?.resumeReading() }

    /// The downstream's buffers are full (another stream of its HTTP/2 connection filled them): stop
    /// reading the upstream until `resume()`.
    func pause() { connection?.pauseReading() }

    /// The downstream went away: drop the exchange and close its connection (it cannot be reused mid-response).
    func cancel() {
        guard !isFinished else { return }
        let c = connection
        finish(.cancelled)
        c?.abandon()
    }
}
