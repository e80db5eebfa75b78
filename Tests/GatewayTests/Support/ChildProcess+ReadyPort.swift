import Foundation
import GatewayTestSupport

extension ChildProcess {
    /// The port of the `READY <port>` line the Python fixtures print once they listen (upstream.py,
    /// fake_data_server.py, reply_dropping_proxy.py), polled every 20 ms for up to 15 s.
    /// - Throws: `ChildProcessError.notReady` naming `fixture`, with its output, when no such line
    ///   came before it exited or the time ran out (the child is killed then).
    func readyPort(_ fixture: String) throws -> UInt16 {
        let deadline = Date().addingTimeInterval(15)
        var found: UInt16?
        while found == nil {
            found = output.split(separator: "\n").first { $0.hasPrefix("READY ") }.flatMap { UInt16($0.dropFirst(6)) }
            guard found == nil, isRunning, Date() < deadline else { break }
            usleep(20_000)
        }
        guard let found else {
            stop(signal: SIGKILL, grace: 1)
            throw ChildProcessError.notReady("\(fixture): \(output)")
        }
        return found
    }
}
