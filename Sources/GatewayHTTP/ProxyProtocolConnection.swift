// An accepted connection on a PROXY protocol listener until its header is read.

import GatewayIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads the PROXY protocol header (`ProxyProtocolHeader`, v1 or v2) that a load balancer sends first
/// on a listener with `proxyProtocol`, on the connection's event loop without blocking it, then hands
/// the connection on (to the TLS handshake on a TLS listener, else to HTTP/1.1 with h2c detection)
/// with the header's source address as the connection's remote address (the TCP peer when the
/// header carries none: LOCAL, UNKNOWN).
///
/// Exactly the header's bytes are consumed: the socket is peeked (`MSG_PEEK`), the header parsed
/// from what was read plus what is peeked, and only its bytes are read, so what follows (TLS
/// ClientHello, HTTP request) stays in the socket for the next owner. A malformed header, a
/// connection that does not start with one, one that closes, or a header not complete within the
/// header timeout (`timeouts.header`) closes the connection without an answer.
final class ProxyProtocolConnection: DownstreamConnection {  // confined to `loop.queue`
    let context: HTTPServerContext
    var server: HTTPServerContext { context }
    private let loop: EventLoop
    private let stream: ByteStream
    private let tls: TLSServerContext?
    private let id: UInt64
    private let peer: String
    private let localAddress: String
    private let deadline: UInt64
    private var received: [UInt8] = []
    private var finished = false
    /// The most bytes peeked at once (a version 1 header is at most 107; a long v2 one takes rounds).
    private static var peekLimit: Int { 4096 }

    /// Takes over the accepted, non-blocking socket `fd` (call on `loop`'s queue).
    init(fd: Int32, tls: TLSServerContext?, loop: EventLoop, context: HTTPServerContext, id: UInt64,
         remoteAddress: String, localAddress: String) {
        self.context = context
        self.loop = loop
        self.tls = tls
        self.id = id
        peer = remoteAddress
        self.localAddress = localAddress
        stream = ByteStream(fd: fd, loop: loop)
        let timeout = context.headerTimeout
        deadline = timeout == 0 ? UInt64.max : EventLoop.now() &+ timeout
        stream.setHandlers(onReadable: { [unowned self] in self.readable() }, onWritable: {})
    }

    /// Registers on the loop and waits for the header.
    func start() {
        loop.register(self)
        if context.isDraining {
            fail()
            return
        }
        stream.channel.startReading()
    }

    private func readable() {
        guard !finished else { return }
        let fd = stream.channel.fd
        let buffer = loop.readBuffer
        let limit = min(buffer.count, ProxyProtocolConnection.peekLimit)
        let n = recv(fd, buffer.baseAddress, limit, Int32(MSG_PEEK))
        if n == 0 {
            fail()  // closed before a complete header
            return
        }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            fail()
            return
        }
        let peeked = UnsafeRawBufferPointer(start: buffer.baseAddress, count: n)
        var candidate = received
        candidate.append(contentsOf: peeked)
        switch ProxyProtocolHeader.parse(candidate) {
        case .invalid:
            fail()
        case .incomplete:
            // Every peeked byte belongs to the header (it is not complete within them): take them.
            guard consume(n) else { return fail() }
            received.append(contentsOf: peeked)
        case .complete(let header, let length):
            guard consume(length - received.count) else { return fail() }
            handOver(remote: header.source ?? peer)
        }
    }

    /// Reads exactly `count` bytes that were peeked (they are in the socket).
    private func consume(_ count: Int) -> Bool {
        var left = count
        var scratch = [UInt8](repeating: 0, count: min(max(count, 1), 4096))
        while left > 0 {
            let r = scratch.withUnsafeMutableBytes { read(stream.channel.fd, $0.baseAddress, min(left, $0.count)) }
            if r <= 0 {
                if r < 0 && errno == EINTR { continue }
                return false
            }
            left -= r
        }
        return true
    }

    private func handOver(remote: String) {
        finished = true
        loop.unregister(self)
        if let tls {
            TLSHandshakeConnection(stream: stream, tls: tls, loop: loop, context: context, id: id,
                                   remoteAddress: remote, localAddress: localAddress).start()
        } else {
            let info = HTTPConnectionInfo(id: id, remoteAddress: remote, localAddress: localAddress, loopIndex: loop.index)
            HTTP1ServerConnection(stream: stream, loop: loop, context: context, info: info).start()
        }
    }

    private func fail() {
        guard !finished else { return }
        finished = true
        stream.close()
        loop.unregister(self)
        context.connectionClosed(loop: loop.index)
    }

    func tick(now: UInt64) {
        if now >= deadline { fail() }
    }

    /// No request can be in flight before the header: close.
    func drain() { fail() }

    func forceClose() { fail() }
}
