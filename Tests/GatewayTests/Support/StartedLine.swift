import Foundation
import GatewayTestSupport

/// The `started` lifecycle line of an `attest-gateway` child process: the addresses it bound (it may
/// bind port 0) and its pid. One home for what every test starting the binary waits for and reads.
struct StartedLine {
    /// The line's JSON members.
    let fields: [String: Any]

    /// `listen` as announced: one address per data listener, in configuration order.
    var listen: [String] { (fields["listen"] as? String)?.split(separator: ",").map(String.init) ?? [] }
    /// The TCP ports of the data listeners, in order (Unix socket listeners left out).
    var ports: [UInt16] { listen.compactMap(StartedLine.port) }
    /// The first data listener's TCP port.
    var port: UInt16? { ports.first }
    /// The admin listener's port, when there is one.
    var adminPort: UInt16? { (fields["admin"] as? String).flatMap(StartedLine.port) }
    /// The pid the line names.
    var pid: String? { (fields["pid"] as? Int).map(String.init) }

    /// The port of `address` (`host:port`, `[v6]:port`); nil for a Unix socket or no port.
    static func port(_ address: String) -> UInt16? {
        address.hasPrefix("unix:") ? nil : address.split(separator: ":").last.flatMap { UInt16($0) }
    }

    /// The JSON objects among `text`'s lines.
    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Polls `output` (standard output by default; standard error when the child keeps them apart)
    /// until `process` printed its `started` line; nil when it exited first or after `timeout`
    /// seconds.
    static func wait(for process: ChildProcess, timeout: TimeInterval = 15,
                     output: @escaping (ChildProcess) -> String = { $0.output }) -> StartedLine? {
        var started: [String: Any]?
        _ = eventually(timeout: timeout) {
            started = jsonLines(output(process)).first { $0["type"] as? String == "started" }
            return started != nil || !process.isRunning
        }
        return started.map(StartedLine.init(fields:))
    }
}
