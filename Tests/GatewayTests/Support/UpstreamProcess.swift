import Foundation
import GatewayTestSupport
import XCTest

/// The Python test upstream (Tests/GatewayHTTPTests/Fixtures/upstream.py) as a real child process
/// on a free loopback port.
final class UpstreamProcess: @unchecked Sendable {  // `statsCalls` guarded by `statsLock`; the rest immutable after init
    let process: ChildProcess
    /// Its TCP port on 127.0.0.1.
    let port: UInt16

    /// Starts it and waits for its READY line.
    init() throws {
        try ChildProcess.require("python3")
        process = try ChildProcess("python3", [E2EPaths.upstreamScript, "--port", "0"])
        port = try process.readyPort("upstream.py")
    }

    /// Requests the upstream has received so far, not counting the `/__stats` questions themselves
    /// (upstream.py counts those too).
    func requestCount() throws -> Int {
        statsLock.lock(); defer { statsLock.unlock() }
        statsCalls += 1
        let reply = try Curl.get("http://127.0.0.1:\(port)/__stats")
        let json = try JSONSerialization.jsonObject(with: Data(reply.text.utf8)) as? [String: Int]
        guard let requests = json?["requests"] else { throw ChildProcessError.notReady("upstream stats: \(reply.text)") }
        return requests - statsCalls
    }

    private let statsLock = NSLock()
    private var statsCalls = 0  // guarded by `statsLock`

    func stop() { process.stop(signal: SIGKILL, grace: 1) }

    deinit { stop() }
}
