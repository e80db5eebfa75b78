import Foundation
import GatewayTestSupport

/// Tests/GatewayTests/Fixtures/reply_dropping_proxy.py as a child process in front of a real
/// redis-server: everything is forwarded until a chunk from the gateway holds every byte string of
/// `loseReply(toChunkHolding:)`; that chunk reaches Redis (the write happens), then its connection is
/// cut before the reply comes back. Once.
final class ReplyDroppingProxy: @unchecked Sendable {  // immutable after init
    let process: ChildProcess
    let port: UInt16
    private let control: URL
    private let log: URL

    init(redisPort: UInt16, directory: URL) throws {
        try ChildProcess.require("python3")
        control = directory.appendingPathComponent("proxy-control")
        log = directory.appendingPathComponent("proxy.log")
        let child = try ChildProcess("python3", [E2EPaths.replyDroppingProxyScript, "--upstream-port", String(redisPort),
                                                 "--control", control.path, "--log", log.path])
        process = child
        port = try child.readyPort("reply_dropping_proxy.py")
    }

    /// The next chunk from the gateway that holds every one of `patterns` loses its reply.
    func loseReply(toChunkHolding patterns: [String]) throws {
        try patterns.joined(separator: "\n").write(to: control, atomically: true, encoding: .utf8)
    }

    /// The cuts made so far (`cut <first pattern>` lines).
    var cuts: [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func stop() { process.stop(signal: SIGKILL, grace: 1) }
}
