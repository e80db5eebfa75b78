import AttestClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// `URLSessionTransport` over real sockets (a small Python server on two ports in 19450-19499, the
/// second playing another origin): redirects are never followed, so evidence headers and
/// `Authorization` never reach another origin, and the `3xx` is the answer.
final class URLSessionTransportTests: XCTestCase {
    /// Serves `/redirect<code>` (a redirect to the other port) and `/ok` on two ports; `/seen` on
    /// either answers how many requests the other-origin port received. Prints the ports when listening.
    static let server = #"""
    import http.server, threading, sys
    seen = []
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'
        def log_message(self, *a): pass
        def answer(self):
            n = int(self.headers.get('Content-Length') or 0)
            if n: self.rfile.read(n)
            port = self.server.server_address[1]
            if self.path == '/seen':
                body = str(len(seen)).encode()
            else:
                if port == other: seen.append(self.path)
                if self.path.startswith('/redirect'):
                    self.send_response(int(self.path[9:12]))
                    self.send_header('Location', 'http://127.0.0.1:%d/steal' % other)
                    self.send_header('Content-Length', '0')
                    self.end_headers(); return
                body = b'{"kid":"x","tier":"attested","platformAttested":true}'
            self.send_response(201 if self.path == '/ok' else 200)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers(); self.wfile.write(body)
        do_GET = do_POST = do_PUT = answer
    servers = None
    for first in range(19450, 19498, 2):
        try:
            servers = [http.server.ThreadingHTTPServer(('127.0.0.1', p), Handler) for p in (first, first + 1)]
            break
        except OSError:
            continue
    other = servers[1].server_address[1]
    for s in servers: threading.Thread(target=s.serve_forever, daemon=True).start()
    print(servers[0].server_address[1], other, flush=True)
    sys.stdin.read()
    """#

    func testRedirectsAreNeverFollowed() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.server]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        defer {
            try? input.fileHandleForWriting.close()  // the server exits when its standard input closes
            process.waitUntilExit()
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {  // the whole line, however the pipe splits it
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the server ended
            line.append(chunk)
        }
        let ports = String(decoding: line, as: UTF8.self).split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        XCTAssertEqual(ports.count, 2, "the server listens")
        guard ports.count == 2 else { return }
        let gateway = "http://127.0.0.1:\(ports[0])"
        let transport = URLSessionTransport()
        for code in [301, 302, 303, 307, 308] {
            let answer = try transport.send(TransportRequest(method: "POST", url: URL(string: "\(gateway)/redirect\(code)/v1/orders")!,
                                                             headers: [("Authorization", "Bearer app-token"), ("App-Attest-Key-Id", "kid")],
                                                             body: Data("{\"n\":1}".utf8), timeout: 10))
            XCTAssertEqual(answer.status, code, "the redirect itself is the answer")
            XCTAssertEqual(answer.header("Location"), "http://127.0.0.1:\(ports[1])/steal")
        }
        let seen = try transport.send(TransportRequest(method: "GET", url: URL(string: "\(gateway)/seen")!, timeout: 10))
        XCTAssertEqual(String(decoding: seen.body, as: UTF8.self), "0", "the other origin received nothing")

        // The SDK: a /register answered with a 308 to another origin is a failed registration.
        let h = SDKHarness(appAttest: false)
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/register") { request, _ in
            var redirected = request
            redirected.url = URL(string: "\(gateway)/redirect308")!
            return try? transport.send(redirected)
        })
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .failed, "\(result)")
        XCTAssertTrue(result.detail?.contains("HTTP 308") == true, "\(result)")
        XCTAssertEqual(String(decoding: try transport.send(TransportRequest(method: "GET", url: URL(string: "\(gateway)/seen")!, timeout: 10)).body,
                              as: UTF8.self), "0")

        // A session the app gives (here one that follows redirects): an answer from another origin is thrown away.
        let followed = URLSessionTransport(session: URLSession(configuration: .ephemeral))
        XCTAssertThrowsError(try followed.send(TransportRequest(method: "GET", url: URL(string: "\(gateway)/redirect302")!, timeout: 10))) { error in
            XCTAssertEqual((error as? URLError)?.code, .badServerResponse)
        }
        XCTAssertEqual(try followed.send(TransportRequest(method: "GET", url: URL(string: "\(gateway)/ok")!, timeout: 10)).status, 201)
    }
}
