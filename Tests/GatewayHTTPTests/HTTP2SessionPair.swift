import CNghttp2
@testable import GatewayHTTP
import GatewayIO
import GatewayRules
import XCTest

/// A server session, its recording delegate and a client session, connected in memory.
final class HTTP2SessionPair {
    let delegate = RecordingSessionDelegate()
    let server: HTTP2Session
    let client: HTTP2TestClient
    var now: UInt64 = 1_000_000_000
    var serverAlive = true

    init(settings: HTTP2Settings = HTTP2Settings(), limits: HTTP1ParserLimits = HTTP1ParserLimits(),
         clientSettings: [(Int32, UInt32)] = []) throws {
        server = try XCTUnwrap(HTTP2Session(settings: settings, limits: limits, policy: RequestTargetPolicy(), delegate: delegate))
        delegate.session = server
        client = HTTP2TestClient(settings: clientSettings)
    }

    /// Moves bytes both ways until neither side has anything to say.
    func pump() {
        for _ in 0..<100 {
            let up = client.output()
            if !up.isEmpty { send(up) }
            var out = OutputBuffer()
            _ = server.produceOutput(into: &out, limit: 1 << 30)
            let down = out.withBytes { $0 }
            client.input(down)
            if up.isEmpty && down.isEmpty { return }
        }
    }

    /// Raw client bytes into the server (no client session involved).
    func send(_ bytes: [UInt8]) {
        serverAlive = bytes.withUnsafeBytes { server.receive($0, now: now) } && serverAlive
    }

    /// Server output as raw frames (for crafted scenarios the client session does not know about).
    func serverFrames() -> [HTTP2TestClient.RawFrame] {
        var out = OutputBuffer()
        _ = server.produceOutput(into: &out, limit: 1 << 30)
        return HTTP2TestClient.frames(out.withBytes { $0 })
    }

    /// Server output decoded by the client session.
    func deliverServerOutput() {
        var out = OutputBuffer()
        _ = server.produceOutput(into: &out, limit: 1 << 30)
        client.input(out.withBytes { $0 })
    }
}
