import Foundation
import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Upstream exchange reports collected by a pool's observer (read by tests from any thread).
final class ExchangeReports: Sendable {
    private let reports = Mutex<[UpstreamExchangeReport]>([])
    func append(_ report: UpstreamExchangeReport) { reports.withLock { $0.append(report) } }
    var all: [UpstreamExchangeReport] { reports.withLock { $0 } }
}

/// A listening TCP socket that never accepts, with its accept queue filled: connects to it hang
/// (the kernel drops further SYNs), which makes upstream connect timeouts happen for real.
final class BlackholeListener {
    let port: UInt16
    private var fds: [Int32] = []

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        port = UInt16(bigEndian: addr.sin_port)
        fds.append(fd)
        // Fill the accept queue (backlog 0 holds one); later SYNs are dropped.
        for _ in 0..<3 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            fds.append(c)
        }
        usleep(100_000)
    }

    deinit { for fd in fds { close(fd) } }
}

/// Server + handler + real upstream processes, on loopback port 0.
final class ProxyHarness {
    let group: EventLoopGroup
    let upstream: TestUpstream
    let unixUpstream: TestUpstream?
    let pool: UpstreamPool
    let unixPool: UpstreamPool?
    let slowPool: UpstreamPool
    let deadPool: UpstreamPool
    /// The dead pool's port: held, never listening (connections are refused).
    let deadPort: ReservedPort
    let blackholePool: UpstreamPool
    let blackhole: BlackholeListener
    let handler: ProxyTestHandler
    let server: HTTPServer
    let port: UInt16
    let tempDir: URL
    /// Whether the first listener (`port`) is TLS.
    let isTLS: Bool
    /// What the `main` and `dead` pools reported of their exchanges (`UpstreamConfiguration.observer`).
    let reports = ExchangeReports()

    static let testTimeouts = HTTPServerTimeouts(headerRead: 0.3, bodyRead: 0.3, idle: 2, write: 5, linger: 0.5)

    init(timeouts: HTTPServerTimeouts = ProxyHarness.testTimeouts, limits: HTTP1ParserLimits = HTTP1ParserLimits(),
         withUnixUpstream: Bool = false, extraListeners: [HTTPListenerConfiguration] = [], tls: TLSServerContext? = nil,
         maxRequestsPerConnection: Int = 0,
         maxConnections: Int = 0, http2: HTTP2Settings = HTTP2Settings()) throws {
        tempDir = FileManager.default.temporaryDirectory.appendingPathComponent("gwhttp-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tempDir, withIntermediateDirectories: true)
        group = EventLoopGroup(loopCount: 2, timerResolution: 0.02)
        upstream = try TestUpstream()
        let upstreamPort = upstream.port ?? 0
        let reports = self.reports
        var main = UpstreamConfiguration(name: "main", address: .tcp(host: "127.0.0.1", port: upstreamPort), responseTimeout: 10)
        main.observer = { report in reports.append(report) }
        pool = try UpstreamPool(main, group: group)
        if withUnixUpstream {
            let path = tempDir.appendingPathComponent("up.sock").path
            let u = try TestUpstream(unixPath: path)
            unixUpstream = u
            unixPool = try UpstreamPool(UpstreamConfiguration(name: "unix", address: .unix(path: path)), group: group)
        } else {
            unixUpstream = nil
            unixPool = nil
        }
        slowPool = try UpstreamPool(UpstreamConfiguration(name: "slow", address: .tcp(host: "127.0.0.1", port: upstreamPort),
                                                          responseTimeout: 0.3), group: group)
        deadPort = try ReservedPort()
        var dead = UpstreamConfiguration(name: "dead", address: .tcp(host: "127.0.0.1", port: deadPort.port))
        dead.observer = { report in reports.append(report) }
        deadPool = try UpstreamPool(dead, group: group)
        blackhole = try BlackholeListener()
        blackholePool = try UpstreamPool(UpstreamConfiguration(name: "blackhole", address: .tcp(host: "127.0.0.1", port: blackhole.port),
                                                               connectTimeout: 0.3), group: group)
        handler = ProxyTestHandler(upstream: pool, unixUpstream: unixPool, deadUpstream: deadPool, slowUpstream: slowPool,
                                   blackholeUpstream: blackholePool)
        isTLS = tls != nil
        let configuration = HTTPServerConfiguration(listeners: [HTTPListenerConfiguration(.tcp(host: "127.0.0.1", port: 0), tls: tls)]
                                                        + extraListeners,
                                                    limits: limits, timeouts: timeouts,
                                                    maxRequestsPerConnection: maxRequestsPerConnection,
                                                    maxConnections: maxConnections, http2: http2)
        server = HTTPServer(configuration: configuration, group: group, handler: handler)
        let bound = try server.start()
        guard let p = bound.first?.port, p != 0 else { throw ChildProcessError.notReady("no bound port") }
        port = p
    }

    func url(_ path: String) -> String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)\(path)" }

    /// Shuts the server down and waits for the completion.
    func stop() {
        let done = DispatchSemaphore(value: 0)
        server.shutdown(gracePeriod: 1) { done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "the server shut down within 5 s")
        for p in [pool, slowPool, deadPool, blackholePool] + (unixPool.map { [$0] } ?? []) { p.shutdown() }
        try? FileManager.default.removeItem(at: tempDir)
    }

    deinit { group.shutdown() }
}
