import AttestCrypto
import Dispatch
import GatewayHTTP
import GatewayRules
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One JSON line per request on standard output (DESIGN.md section 5 / issue 3 "Operations", issue 9
/// "Observability"): `ts`, `type` (`access`), `route`, `method`, `path` (never the query), `status`,
/// `verdict`, `reason`, `latency_ms`, `upstream`, `bytes_in`, `bytes_out`, `client`, `proto` (`h1` or
/// `h2`), `tls` (the TLS version, only on TLS connections), `aborted` (only when true), `cut:
/// "drain_deadline"` when the gateway closed the request because the shutdown's grace period ran out
/// (status 503 when no response had started; a 499 is a client that went away), and from the
/// request's `RequestIdentity` and verdict: `request_id`, `trace_id` (a valid `traceparent`'s),
/// `user_agent` (at most 256 bytes) and `key_id` (base64url, the form `attestctl keys` takes; the
/// assertion's keyId, or the endpoint request's, once it decoded, whatever the verdict), `tier` (the
/// key's trust tier with a `valid` verdict, DESIGN.md section 8). Strings are
/// JSON-escaped (control characters, quotes, invalid UTF-8 replaced). Challenges, assertions, queries
/// and bodies are never written.
///
/// Never writes on an event loop: each loop appends its lines to its own buffer (`PerLoop`, a lock
/// no other loop takes on the request path) and one writer queue writes them out with `write(2)`
/// within 200 ms of the first line since the last write (a one-shot timer, so an idle log never
/// wakes), or sooner when a buffer passes 32 KiB (the loop only signals the writer). When the
/// output is slower than the traffic (a blocked pipe), a loop's buffer stops growing at 4 MiB and
/// further lines are dropped and counted (`droppedLines`) rather than stalling requests.
final class AccessLog: @unchecked Sendable {  // `shards` is per-loop locked; `flushRequested`/`flushArmed`/`dropped` atomic; `timer` is set once in init and only scheduled or cancelled after (DispatchSource is thread-safe)
    private let shards: PerLoop<[UInt8]>
    private let fd: Int32
    private let clock: GatewayClock
    private let writer = DispatchQueue(label: "attest-gateway.access-log")
    private let timer: DispatchSourceTimer
    private let flushRequested = Atomic<Bool>(false)
    /// Whether the one-shot flush timer is scheduled (set by the line that finds it idle).
    private let flushArmed = Atomic<Bool>(false)
    private let dropped = Atomic<UInt64>(0)
    private static let flushThreshold = 32 * 1024
    private static let shardLimit = 4 << 20

    /// A log writing to file descriptor `fd` (default standard output), buffered per event loop.
    init(fd: Int32 = 1, clock: GatewayClock, loops: Int = 1) {
        self.fd = fd
        self.clock = clock
        shards = PerLoop(count: loops) { [] }
        timer = DispatchSource.makeTimerSource(queue: writer)
        // One-shot, armed by the first line after a flush: a gateway with nothing to log never
        // wakes for it (a repeating timer woke a Dispatch thread five times a second).
        timer.schedule(deadline: .distantFuture, leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            flushArmed.store(false, ordering: .releasing)  // a line after this arms the next flush
            writeBuffered()
        }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Lines dropped because a loop's buffer was full (the output could not keep up).
    var droppedLines: UInt64 { dropped.load(ordering: .relaxed) }

    /// Appends the line for `record`.
    func write(_ record: HTTPAccessRecord, context: RequestLogContext?, identity: RequestIdentity? = nil) {
        var json = JSONWriter(capacity: 320)
        json.beginObject()
        json.field("ts", AccessLog.timestamp(clock.now()))
        json.field("type", "access")
        // `none` when no route took the request (no route matched, or its head never parsed), the
        // word the metrics' `route` label uses.
        json.field("route", context?.route ?? "none")
        if let method = record.method { json.field("method", method.description) } else { json.nullField("method") }
        if let target = record.target {
            let pathEnd = target.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex
            json.field("path", String(decoding: target[..<pathEnd], as: UTF8.self))
        } else {
            json.nullField("path")
        }
        json.field("status", record.status)
        if let verdict = context?.verdict { json.field("verdict", verdict.rawValue) } else { json.nullField("verdict") }
        if let reason = context?.reason ?? record.error?.code { json.field("reason", reason) } else { json.nullField("reason") }
        json.field("latency_ms", Double(record.latencyNanoseconds) / 1_000_000, decimals: 3)
        if let upstream = record.upstream { json.field("upstream", upstream) }
        json.field("bytes_in", record.requestBodyBytes)
        json.field("bytes_out", record.responseBodyBytes)
        // Behind a trusted proxy the client it named, and the proxy as `peer` (`RequestIdentity`).
        if let client = identity?.forwardedClient {
            json.field("client", client)
            json.field("peer", record.connection.remoteAddress)
        } else {
            json.field("client", record.connection.remoteAddress)
        }
        json.field("proto", record.connection.protocolName)
        if let tls = record.connection.tlsVersion { json.field("tls", tls) }
        if record.aborted { json.field("aborted", true) }
        if let identity {
            json.field("request_id", identity.requestID)
            if let trace = identity.traceID { json.field("trace_id", String(decoding: trace, as: UTF8.self)) }
            if let agent = identity.userAgent { json.field("user_agent", String(decoding: agent, as: UTF8.self)) }
        }
        if let keyId = context?.keyId { json.field("key_id", String(decoding: keyId.base64URL, as: UTF8.self)) }
        if let tier = context?.tier { json.field("tier", tier) }
        // Cut by the gateway (the drain deadline, a client that took no bytes for the write timeout),
        // not by the client (499): its own field.
        if record.error == .drainDeadline || record.error == .clientStalled { json.field("cut", record.error!.code) }
        json.endObject()
        let line = json.bytes
        let full: Bool? = shards.withShard(record.connection.loopIndex) { buffered in
            guard buffered.count + line.count < AccessLog.shardLimit else { return nil }
            buffered.append(contentsOf: line)
            buffered.append(0x0A)
            return buffered.count >= AccessLog.flushThreshold
        }
        guard let full else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        if !flushArmed.load(ordering: .relaxed) && !flushArmed.exchange(true, ordering: .acquiringAndReleasing) {
            timer.schedule(deadline: .now() + 0.2, leeway: .milliseconds(50))
        }
        if full && !flushRequested.exchange(true, ordering: .acquiringAndReleasing) {
            writer.async { [self] in
                flushRequested.store(false, ordering: .releasing)
                writeBuffered()
            }
        }
    }

    /// Writes whatever is buffered and waits at most `timeout` for it to be written (shutdown, tests;
    /// never call it on an event loop).
    /// - Returns: true when everything buffered was written in time; false when the output did not
    ///   take it (a reader that stopped reading: a stalled journald, container log driver or pipe).
    ///   The write goes on in the background meanwhile; the caller is never held longer than
    ///   `timeout` (a probe's SIGTERM never finished, waiting on a pipe nobody read).
    @discardableResult
    func flush(waitingAtMost timeout: DispatchTimeInterval) -> Bool {
        let written = DispatchSemaphore(value: 0)
        writer.async { [self] in
            writeBuffered()
            written.signal()
        }
        return written.wait(timeout: .now() + timeout) == .success
    }

    /// Asks the writer to write whatever is buffered, without waiting (SIGUSR1: the signal handlers
    /// share the main queue, so a wait there would hold up SIGHUP and SIGTERM behind a stalled output).
    func flushSoon() {
        writer.async { [self] in writeBuffered() }
    }

    /// Takes every loop's buffer and writes it (on the writer queue). A loop's lock is held only for
    /// the swap of its buffer (never for a copy or a write), so a slow output never holds up a loop.
    private func writeBuffered() {
        var pending: [[UInt8]] = []
        shards.forEach { buffered in
            guard !buffered.isEmpty else { return }
            var taken: [UInt8] = []
            swap(&taken, &buffered)
            pending.append(taken)
        }
        for bytes in pending { AccessLog.writeAll(fd, bytes) }
    }

    /// Writes all of `bytes` to the blocking descriptor `fd` (retrying on EINTR; gives up on any other
    /// error, which a log cannot report anywhere): the access log's writer queue and `LifecycleOutput`'s.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }

    /// `2026-11-29T13:50:00.123Z` from unix milliseconds.
    static func timestamp(_ millis: Int64) -> String {
        let seconds = millis / 1000
        let ms = Int(millis % 1000)
        let base = CivilTime.iso8601(seconds)  // YYYY-MM-DDTHH:MM:SSZ
        let stem = base.hasSuffix("Z") ? String(base.dropLast()) : base
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(stem).\(msText)Z"
    }
}
