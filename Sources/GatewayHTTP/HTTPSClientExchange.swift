// One HTTPS request to a named host, off the request path (e.g. Apple's App Attest data server).

import Dispatch
import GatewayIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One request over a fresh TLS connection (`TLSClientContext`: peer verification, SNI and host name
/// check as for `https://` upstreams), its response parsed by `HTTP1ResponseParser`, then closed.
///
/// The name is resolved on a global queue (getaddrinfo blocks: never on an event loop); its
/// addresses are tried in turn until one connects (a refusal, or no answer within 5 s while others
/// remain, moves on: Apple's data server has several); connect, handshake, write and read run on
/// `loop` like an upstream connection, bounded by one deadline (`timeout`, resolution excluded)
/// checked by the loop's timer. The completion runs once, on `loop`.
package final class HTTPSClientExchange: EventLoopResident {  // confined to `loop.queue` after `start`
    /// A complete response.
    package struct Response: Sendable {
        /// Status code.
        package var status: Int
        /// Header fields.
        package var headers: HTTPHeaders
        /// The de-chunked body (at most `maxBody` bytes).
        package var body: [UInt8]
    }

    /// Why no response came.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// The host did not resolve.
        case resolve(String)
        /// TCP connect refused or failed.
        case connect(String)
        /// The TLS handshake failed (e.g. the certificate did not verify).
        case tls(String)
        /// No complete response within the deadline.
        case timeout
        /// The connection broke before the response was complete.
        case reset
        /// The response was not valid HTTP/1.1.
        case malformed(String)
        /// The body was longer than allowed.
        case bodyTooLarge

        /// For logs.
        package var description: String {
            switch self {
            case .resolve(let d): return "resolve: \(d)"
            case .connect(let d): return "connect: \(d)"
            case .tls(let d): return "TLS: \(d)"
            case .timeout: return "timeout"
            case .reset: return "connection reset"
            case .malformed(let d): return "malformed response: \(d)"
            case .bodyTooLarge: return "response body too large"
            }
        }
    }

    private enum State { case connecting, handshaking, sending, receiving, done }

    private let loop: EventLoop
    private let request: [UInt8]
    private let serverName: String
    private let context: TLSClientContext
    private let maxBody: Int
    private let deadline: UInt64
    private var completion: ((Result<Response, Failure>) -> Void)?
    private var stream: ByteStream?
    private var state = State.connecting
    private var written = 0
    private var parser = HTTP1ResponseParser()
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    /// The host's other addresses, tried in turn when connecting to one fails (refused, unreachable,
    /// or no answer within `connectAttemptNanoseconds`), as curl and nginx do; the deadline covers all.
    private var fallbacks: ArraySlice<SocketAddress> = []
    /// When the current connect started, monotonic nanoseconds.
    private var connectStarted: UInt64 = 0
    /// How long one address may take to connect while others remain (5 s).
    static let connectAttemptNanoseconds: UInt64 = 5_000_000_000

    private init(loop: EventLoop, request: [UInt8], serverName: String, context: TLSClientContext, maxBody: Int,
                 timeout: Double, completion: @escaping (Result<Response, Failure>) -> Void) {
        self.loop = loop
        self.request = request
        self.serverName = serverName
        self.context = context
        self.maxBody = maxBody
        self.deadline = EventLoop.now() &+ UInt64(max(0.001, timeout) * 1e9)
        self.completion = completion
        parser.expectResponse(to: .post)
    }

    /// Sends `request` (a complete HTTP/1.1 request, `Connection: close`) to `host`:`port` over TLS
    /// with SNI and certificate name `serverName`, and reports the response.
    /// - Parameters:
    ///   - timeout: seconds for everything (resolution excluded).
    ///   - maxBody: longest body accepted, bytes.
    package static func send(_ request: [UInt8], host: String, port: UInt16, serverName: String, context: TLSClientContext,
                             loop: EventLoop, timeout: Double, maxBody: Int,
                             completion: @escaping @Sendable (Result<Response, Failure>) -> Void) {
        DispatchQueue.global(qos: .utility).async {
            let addresses: [SocketAddress]
            do { addresses = try SocketAddress.resolveAll(host: host, port: port) } catch {
                loop.execute { completion(.failure(.resolve("\(error)"))) }
                return
            }
            loop.execute {
                send(request, addresses: addresses, serverName: serverName, context: context, loop: loop, timeout: timeout,
                     maxBody: maxBody, completion: completion)
            }
        }
    }

    /// `send` to resolved `addresses` (tried in order, each until it connects; at least one), on
    /// `loop` (call it there).
    package static func send(_ request: [UInt8], addresses: [SocketAddress], serverName: String, context: TLSClientContext,
                             loop: EventLoop, timeout: Double, maxBody: Int,
                             completion: @escaping @Sendable (Result<Response, Failure>) -> Void) {
        let exchange = HTTPSClientExchange(loop: loop, request: request, serverName: serverName, context: context,
                                           maxBody: maxBody, timeout: timeout, completion: completion)
        guard let first = addresses.first else { return exchange.finish(.failure(.resolve("no address"))) }
        exchange.fallbacks = addresses.dropFirst()
        exchange.start(first)
    }

    private func start(_ address: SocketAddress) {
        state = .connecting
        connectStarted = EventLoop.now()
        let fd: Int32
        do { fd = try Socket.makeStream(family: address.family) } catch {
            connectFailed("\(error)")
            return
        }
        let stream = ByteStream(fd: fd, loop: loop)
        self.stream = stream
        stream.setHandlers(onReadable: { [unowned self] in self.readable() },
                           onWritable: { [unowned self] in self.writable() })
        loop.register(self)
        switch Socket.connect(fd, to: address) {
        case .failure(let error):
            connectFailed("\(error)")
        case .success(true):
            startTLS()
        case .success(false):
            stream.channel.armWrite()
        }
    }

    private func startTLS() {
        guard let stream else { return }
        state = .handshaking
        do {
            stream.attachTLS(try TLSConnection(client: context, fd: stream.channel.fd, serverName: serverName))
        } catch {
            finish(.failure(.tls("\(error)")))
            return
        }
        advanceHandshake()
    }

    private func advanceHandshake() {
        guard let stream else { return }
        switch stream.continueHandshake() {
        case .inProgress:
            break
        case .done:
            state = .sending
            stream.channel.startReading()
            flush()
        case .closed:
            finish(.failure(.tls("closed by the peer during the handshake")))
        case .failed(let reason):
            finish(.failure(.tls(reason)))
        }
    }

    private func flush() {
        guard let stream else { return }
        while written < request.count {
            let offset = written
            let r = request.withUnsafeBytes { stream.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch r {
            case .success(0):
                stream.channel.armWrite()
                return
            case .success(let n):
                written += n
            case .failure:
                finish(.failure(.reset))
                return
            }
        }
        stream.channel.disarmWrite()
        state = .receiving
    }

    private func writable() {
        guard let stream else { return }
        switch state {
        case .connecting:
            let error = Socket.pendingError(stream.channel.fd)
            guard error == 0 else {
                connectFailed(String(cString: strerror(error)))
                return
            }
            startTLS()
        case .handshaking:
            advanceHandshake()
        case .sending:
            flush()
        case .receiving, .done:
            stream.channel.disarmWrite()
        }
    }

    private func readable() {
        guard let stream else { return }
        switch state {
        case .handshaking:
            advanceHandshake()
        case .sending, .receiving:
            switch stream.read(into: loop.readBuffer) {
            case .bytes(let n):
                process(UnsafeRawBufferPointer(start: loop.readBuffer.baseAddress, count: n))
            case .endOfFile:
                switch parser.finish() {
                case .end: complete()
                case .error(let e): finish(.failure(.malformed("\(e)")))
                default: finish(.failure(.reset))
                }
            case .wouldBlock:
                break
            case .failed:
                finish(.failure(.reset))
            }
        case .connecting, .done:
            break
        }
    }

    private func process(_ input: UnsafeRawBufferPointer) {
        var offset = 0
        while state != .done {
            let step = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let base = offset
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                return
            case .head(let h):
                head = h
            case .body(let r):
                guard body.count + r.count <= maxBody else {
                    finish(.failure(.bodyTooLarge))
                    return
                }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[(base + r.lowerBound)..<(base + r.upperBound)]))
            case .end:
                complete()
                return
            case .error(let e):
                finish(.failure(.malformed("\(e)")))
                return
            }
        }
    }

    private func complete() {
        guard let head else {
            finish(.failure(.malformed("no response head")))
            return
        }
        finish(.success(Response(status: head.status, headers: head.headers, body: body)))
    }

    /// Connecting to the current address failed: the next one, while any remains before the deadline.
    private func connectFailed(_ detail: String) {
        guard let next = fallbacks.first, EventLoop.now() < deadline else { return finish(.failure(.connect(detail))) }
        fallbacks = fallbacks.dropFirst()
        stream?.close()
        stream = nil
        loop.unregister(self)
        start(next)
    }

    private func finish(_ result: Result<Response, Failure>) {
        guard state != .done || completion != nil else { return }
        state = .done
        stream?.close()
        stream = nil
        loop.unregister(self)
        let done = completion
        completion = nil
        done?(result)
    }

    package func tick(now: UInt64) {
        guard state != .done else { return }
        if now >= deadline { return finish(.failure(.timeout)) }
        if state == .connecting && !fallbacks.isEmpty && now &- connectStarted > Self.connectAttemptNanoseconds {
            connectFailed("no answer within \(Self.connectAttemptNanoseconds / 1_000_000_000) s")
        }
    }
}
