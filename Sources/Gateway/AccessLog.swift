import AttestCrypto
import Dispatch
import GatewayHTTP
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One JSON line per request on standard output (DESIGN.md section 5 / issue 3 "Operations"):
/// `ts`, `route`, `method`, `path` (never the query), `status`, `verdict`, `reason`, `latency_ms`,
/// `upstream`, `bytes_in`, `bytes_out`, `client`, `proto` (`h1` or `h2`), `tls` (the TLS version, only on
/// TLS connections), and `error` when the proxy core answered by itself.
/// Challenges, assertions, keyIds of failed requests and bodies are never written.
///
/// Lines are appended to an in-memory buffer under a `Mutex` and written with one `write(2)` when
/// the buffer passes 32 KiB or at the latest every 200 ms, so request handling never waits on the
/// terminal or a pipe.
final class AccessLog: @unchecked Sendable {  // `buffer` is a Mutex; `timer` is set once in init and only cancelled in deinit (DispatchSource is thread-safe)
    private let buffer = Mutex<[UInt8]>([])
    private let fd: Int32
    private let clock: GatewayClock
    private let timer: DispatchSourceTimer
    private static let flushThreshold = 32 * 1024

    /// A log writing to file descriptor `fd` (default standard output).
    init(fd: Int32 = 1, clock: GatewayClock) {
        self.fd = fd
        self.clock = clock
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "attest-gateway.access-log"))
        timer.schedule(deadline: .now() + 0.2, repeating: 0.2, leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.flush() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Appends the line for `record`.
    func write(_ record: HTTPAccessRecord, context: RequestLogContext?) {
        var json = JSONWriter(capacity: 320)
        json.beginObject()
        json.field("ts", AccessLog.timestamp(clock.now()))
        json.field("type", "access")
        if let route = context?.route { json.field("route", route) } else { json.nullField("route") }
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
        json.field("client", record.connection.remoteAddress)
        json.field("proto", record.protocolName)
        if let tls = record.tlsVersion { json.field("tls", tls) }
        if record.aborted { json.field("aborted", true) }
        json.endObject()
        var line = json.bytes
        line.append(0x0A)
        let full: [UInt8]? = buffer.withLock { buffered in
            buffered.append(contentsOf: line)
            guard buffered.count >= AccessLog.flushThreshold else { return nil }
            defer { buffered.removeAll(keepingCapacity: true) }
            return buffered
        }
        if let full { writeAll(full) }
    }

    /// Writes whatever is buffered.
    func flush() {
        let pending: [UInt8] = buffer.withLock { buffered in
            defer { buffered.removeAll(keepingCapacity: true) }
            return buffered
        }
        if !pending.isEmpty { writeAll(pending) }
    }

    private func writeAll(_ bytes: [UInt8]) {
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
