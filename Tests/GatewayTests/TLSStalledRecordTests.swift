import Foundation
import GatewayTestSupport
import XCTest

/// Clients that send the start of a TLS record and then nothing (one byte of a record header, during
/// the handshake or after it) cost their own connection only: every event loop keeps serving the
/// other connections and the admin listener. Before the fix, OpenSSL's `SSL_has_pending` said
/// "buffered input" for such a partial record, the stream retried its read in a loop that never
/// returned to the poller, and one such connection per loop froze the whole gateway (found by an
/// adversarial probe: 4 one-byte connections took down every listener).
final class TLSStalledRecordTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .http1TLS(ca: TestPKI.shared.root.certificate) }

    /// Holds `count` TLS connections that finished their handshake and then sent one raw byte of an
    /// application-data record header, and `count` connections that sent one byte of a handshake
    /// record; prints READY and waits to be stopped.
    private static let holder = """
    import os, socket, ssl, sys, time
    port, count = int(sys.argv[1]), int(sys.argv[2])
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    held, handshakes = [], 0
    for _ in range(count):
        try:
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
            handshakes += 1
            held.append(s)
        except OSError as e:
            print("handshake failed:", e, flush=True)
    for s in held:
        os.write(s.fileno(), b"\\x17")       # 1 byte of a record header, under the TLS layer
    for _ in range(count):
        r = socket.create_connection(("127.0.0.1", port), timeout=5)
        r.sendall(b"\\x16")                 # 1 byte of a handshake record
        held.append(r)
    print("READY", handshakes, flush=True)
    time.sleep(120)
    """

    func testPartialRecordsDoNotStopTheLoops() throws {
        _ = try ChildProcess.require("python3")  // installed by scripts/setup --tests: missing is a failure
        // 8 of each over the gateway's 2 loops: every loop holds stalled connections of both kinds.
        let holder = try ChildProcess("python3", ["-c", TLSStalledRecordTests.holder, String(env.port), "8"])
        defer { holder.stop(signal: SIGKILL, grace: 1) }
        XCTAssertTrue(eventually(timeout: 30) { holder.output.contains("READY") || !holder.isRunning }, holder.output)
        XCTAssertTrue(holder.output.contains("READY 8"), "every handshake completed: \(holder.output)")

        // The loops still serve: new TLS requests and the admin listener, several times over.
        for i in 0..<4 {
            let reply = try env.send("GET", "/v1/open/stalled-\(i)")
            XCTAssertEqual(reply.status, 200, "\(reply)")
        }
        XCTAssertEqual(try Curl.request(port: env.adminPort, method: "GET", target: "/healthz").status, 200)
        XCTAssertTrue(holder.isRunning, "the stalled connections were still held while the others were served")
    }
}
