// An accepted TLS connection until its handshake is done; then HTTP/1.1 or HTTP/2 by ALPN.

import GatewayIO

/// Drives the server side of one TLS handshake on its event loop, without blocking it: the
/// handshake advances on each readiness event of the socket (OpenSSL non-blocking, WANT_READ /
/// WANT_WRITE mapped to read and write interest by `ByteStream`), so a slow or stalled handshake
/// never delays the loop's other connections, and it is bounded by `timeouts.tlsHandshake`.
///
/// When it completes, the negotiated ALPN protocol decides (RFC 7301): `h2` hands the stream to an
/// HTTP/2 connection, anything else (`http/1.1`, or no ALPN) to an HTTP/1.1 connection; either
/// takes over the stream's readiness handlers. A failed or timed-out handshake closes the
/// connection and is reported once (`HTTPHandler.tlsHandshakeFinished`), costing a counter and at
/// most a rate-limited log line in the embedding application, never more.

final class TLSHandshakeConnection: DownstreamConnection {  // confined to `loop.queue`
    let context: HTTPServerContext
    var server: HTTPServerContext { context }
    private let loop: EventLoop
    private let stream: ByteStream
    private let id: UInt64
    private let remoteAddress: String
    private let localAddress: String
    private let deadline: UInt64
    private var finished = false
    /// Why no TLS session could be created for the socket (OpenSSL out of memory), if so.
    private var setupFailure: String?

    /// Takes over the accepted, non-blocking socket `fd` and puts a server TLS session over it (when
    /// OpenSSL cannot create one, the connection fails at `start()`).
    convenience init(fd: Int32, tls: TLSServerContext, loop: EventLoop, context: HTTPServerContext, id: UInt64,
                     remoteAddress: String, localAddress: String) {
        self.init(stream: ByteStream(fd: fd, loop: loop), tls: tls, loop: loop, context: context, id: id,
                  remoteAddress: remoteAddress, localAddress: localAddress)
    }

    /// Takes over `stream` (a socket no byte of the handshake was read from yet, e.g. after a PROXY
    /// protocol header) and puts a server TLS session over it.
    init(stream: ByteStream, tls: TLSServerContext, loop: EventLoop, context: HTTPServerContext, id: UInt64,
         remoteAddress: String, localAddress: String) {
        self.context = context
        self.loop = loop
        self.id = id
        self.remoteAddress = remoteAddress
        self.localAddress = localAddress
        self.stream = stream
        let timeout = context.tlsHandshakeTimeout
        deadline = timeout == 0 ? UInt64.max : EventLoop.now() &+ timeout
        do {
            stream.attachTLS(try TLSConnection(server: tls, fd: stream.channel.fd))
        } catch {
            setupFailure = "\(error)"
        }
        stream.setHandlers(onReadable: { [unowned self] in self.advance() },
                           onWritable: { [unowned self] in self.advance() })
    }

    /// Registers on the loop and waits for the client's first flight.
    func start() {
        loop.register(self)
        if let setupFailure {
            fail(setupFailure)
            return
        }
        // Accepted while draining (the listeners stay open briefly for a handover): the handshake
        // runs to its end or its deadline, and the connection then serves one request.
        stream.channel.startReading()
    }

    private func advance() {
        guard !finished else { return }
        switch stream.continueHandshake() {
        case .inProgress:
            break
        case .done:
            finished = true
            loop.unregister(self)
            handOver()
        case .closed:
            fail("closed")
        case .failed(let reason):
            fail(reason)
        }
    }

    /// The handshake is done: report it, then serve the protocol ALPN chose.
    private func handOver() {
        guard let session = stream.tls else { return }
        let version = session.protocolVersion
        let alpn = session.negotiatedProtocol
        context.handler.tlsHandshakeFinished(TLSHandshakeReport(
            remoteAddress: remoteAddress, localAddress: localAddress, version: version, alpn: alpn,
            resumed: session.sessionReused, failure: nil, loopIndex: loop.index))
        let info = HTTPConnectionInfo(id: id, remoteAddress: remoteAddress, localAddress: localAddress, isSecure: true,
                                      protocolName: alpn == "h2" ? "h2" : "h1", tlsVersion: version, loopIndex: loop.index)
        if alpn == "h2" {
            HTTP2ServerConnection(stream: stream, loop: loop, context: context, info: info, initialBytes: []).start()
        } else {
            HTTP1ServerConnection(stream: stream, loop: loop, context: context, info: info).start()
        }
    }

    private func fail(_ reason: String) {
        guard !finished else { return }
        finished = true
        context.handler.tlsHandshakeFinished(TLSHandshakeReport(
            remoteAddress: remoteAddress, localAddress: localAddress, version: nil, alpn: nil, resumed: false,
            failure: reason, loopIndex: loop.index))
        stream.close()
        loop.unregister(self)
        context.connectionClosed(loop: loop.index)
    }

    func tick(now: UInt64) {
        if now >= deadline { fail("timeout") }
    }

    /// A handshake in progress when the shutdown starts finishes (within its deadline, and the
    /// grace period): the client is on its way to a request, which the connection then serves with
    /// `Connection: close` (HTTP/1.1) or a GOAWAY notice (HTTP/2).
    func drain() {}

    func forceClose() { fail("draining") }
}
