// One request/response exchange with an upstream, including the single retry on a stale connection.

import GatewayIO

/// Receives the upstream response of an exchange (implemented by downstream connections).
protocol UpstreamResponseSink: AnyObject {
    /// The final response head arrived.
    func upstreamHead(_ head: HTTPResponseHead)
    /// Decoded response body bytes (valid only during the call). Return false to pause the upstream
    /// until `UpstreamExchange.resume()`.
    func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Every event of one upstream read was delivered (write what was queued).
    func upstreamReadDone()
    /// The response is complete.
    func upstreamEnd()
    /// The exchange failed (see `UpstreamPool` for the errors).
    func upstreamFailed(_ error: HTTPError)
}

/// Drives one exchange on the loop: picks a connection, sends the request, relays events, retries once
/// on a stale pooled connection (rule documented on `UpstreamPool`).
final class UpstreamExchange {  // confined to the loop of `pool`
    let pool: UpstreamLoopPool
    let method: HTTPMethod
    let request: [UInt8]
    private weak var sink: (any UpstreamResponseSink)?
    private var connection: UpstreamConnection?
    private var attempts = 0
    private(set) var isFinished = false
    /// Monotonic start (only read when the pool has an observer).
    private let started: UInt64
    /// Nanoseconds to the response head, 0 before it; status of that head.
    private var headNanoseconds: UInt64 = 0
    private var status = 0

    init(pool: UpstreamLoopPool, method: HTTPMethod, request: [UInt8], sink: any UpstreamResponseSink) {
        self.pool = pool
        self.method = method
        self.request = request
        self.sink = sink
        started = pool.settings.observer == nil ? 0 : EventLoop.now()
    }

    func start() { attempt(allowIdle: true) }

    private func attempt(allowIdle: Bool) {
        attempts += 1
        switch pool.acquire(allowIdle: allowIdle) {
        case .failure(let e):
            finish(.failed(e))
            sink?.upstreamFailed(e)
        case .success(let c):
            connection = c
            c.begin(self)
        }
    }

    private func finish(_ outcome: UpstreamExchangeReport.Outcome) {
        isFinished = true
        connection = nil
        guard let observer = pool.settings.observer else { return }
        observer(UpstreamExchangeReport(
            upstream: pool.settings.name, loopIndex: pool.loop.index, outcome: outcome, status: status,
            nanoseconds: headNanoseconds != 0 ? headNanoseconds : max(1, EventLoop.now() &- started), retried: attempts > 1))
    }

    // MARK: from the connection

    func receivedHead(_ head: HTTPResponseHead) {
        guard !isFinished else { return }
        if pool.settings.observer != nil {
            status = head.status
            headNanoseconds = max(1, EventLoop.now() &- started)
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
        finish(.completed)
        sink?.upstreamEnd()
    }

    func failed(_ error: HTTPError, retryable: Bool) {
        guard !isFinished else { return }
        connection = nil
        if retryable && attempts == 1 {
            pool.counters.retries.add(1, ordering: .relaxed)
            attempt(allowIdle: false)
            return
        }
        finish(.failed(error))
        sink?.upstreamFailed(error)
    }

    // MARK: from the downstream side

    /// The downstream drained: read the upstream again.
    func resume() { connection?.resumeReading() }

    /// The downstream went away: drop the exchange and close its connection (it cannot be reused mid-response).
    func cancel() {
        guard !isFinished else { return }
        let c = connection
        finish(.cancelled)
        c?.abandon()
    }
}
