import Foundation
@testable import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// `HTTPSClientExchange` (the receipt refresher's client for Apple's data server) tries a host's
/// addresses in turn: a probe read that only the first was ever tried, so one unreachable address of
/// a name with several failed every exchange. Against the Python TLS upstream of these tests.
final class HTTPSClientExchangeTests: XCTestCase {
    private let pki = TestPKI.shared

    private func exchange(_ addresses: [SocketAddress], timeout: Double = 10) throws -> Result<HTTPSClientExchange.Response, HTTPSClientExchange.Failure> {
        let group = EventLoopGroup(loopCount: 1, timerResolution: 0.01)
        defer { group.shutdown() }
        let context = try TLSClientContext(settings: TLSClientSettings(verify: true, caPath: pki.root.certificate, alpn: ["http/1.1"]))
        let request = Array("POST /p/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi".utf8)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<HTTPSClientExchange.Response, HTTPSClientExchange.Failure>?
        let loop = group.loops[0]
        loop.execute {
            HTTPSClientExchange.send(request, addresses: addresses, serverName: "127.0.0.1", context: context, loop: loop,
                                     timeout: timeout, maxBody: 1 << 20) { result = $0; done.signal() }
        }
        XCTAssertEqual(done.wait(timeout: .now() + timeout + 5), .success)
        return try XCTUnwrap(result)
    }

    func testARefusedAddressFallsBackToTheNext() throws {
        let upstream = try TestUpstream(tls: pki.address)
        let refused = try ReservedPort()  // bound, never listening: connections are refused
        let live = try XCTUnwrap(SocketAddress.literal(host: "127.0.0.1", port: try XCTUnwrap(upstream.port)))
        let dead = try XCTUnwrap(SocketAddress.literal(host: "127.0.0.1", port: refused.port))
        switch try exchange([dead, live]) {
        case .success(let response): XCTAssertEqual(response.status, 200)
        case .failure(let failure): XCTFail("the second address was not tried: \(failure)")
        }
        // Failing variant: no other address, the refusal is the answer.
        guard case .failure(.connect) = try exchange([dead]) else { return XCTFail("a refused connect must fail") }
    }
}
