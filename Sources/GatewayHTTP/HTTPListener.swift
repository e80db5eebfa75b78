// A listening socket that accepts in batches and hands connections to event loops round-robin.

import GatewayIO
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One bound listening socket of a server.
final class HTTPListener: @unchecked Sendable {  // mutable state confined to the server's accept queue
    let fd: Int32
    let requested: SocketEndpoint
    let bound: SocketAddress
    let unixPath: String?
    /// The TLS context of a TLS listener (nil: plain).
    let tls: TLSServerContext?
    /// Connections start with a PROXY protocol header.
    let proxyProtocol: Bool
    private let localDescription: String
    private var source: DispatchSourceRead?
    private var nextLoop = 0
    private var suspended = false
    private var closed = false

    /// Binds and listens (SO_REUSEADDR for TCP; a stale Unix socket file is replaced).
    init(_ requested: SocketEndpoint, tls: TLSServerContext?, backlog: Int, unixPermissions: UInt16?,
         proxyProtocol: Bool = false) throws {
        self.requested = requested
        self.tls = tls
        self.proxyProtocol = proxyProtocol
        let address: SocketAddress
        switch requested {
        case .tcp(let host, let port):
            address = try SocketAddress.resolve(host: host, port: port, passive: true)
            unixPath = nil
        case .unix(let path):
            address = try SocketAddress.unix(path: path)
            var st = stat()
            if lstat(path, &st) == 0 {
                guard (st.st_mode & S_IFMT) == S_IFSOCK else {
                    throw Socket.Failure(call: "listen \(path): exists and is not a socket", errno: EEXIST)
                }
                unlink(path)
            }
            unixPath = path
        }
        fd = try Socket.listen(on: address, backlog: Int32(clamping: max(1, backlog)))
        if let unixPath, let mode = unixPermissions { chmod(unixPath, mode_t(mode)) }
        bound = address.isUnix ? address : Socket.localAddress(fd)
        localDescription = bound.description
    }

    var boundListener: HTTPBoundListener {
        HTTPBoundListener(requested: requested, address: localDescription, port: bound.port)
    }

    /// Starts accepting on `queue`; the connections call `context.handler`.
    func start<Handler: HTTPHandler>(queue: DispatchQueue, context: HTTPServerContext<Handler>, group: EventLoopGroup) {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let fd = self.fd
        source.setEventHandler { [unowned self] in self.acceptBatch(context: context, group: group, queue: queue) }
        source.setCancelHandler { _ = Glibc.close(fd) }
        self.source = source
        source.activate()
    }

    private func acceptBatch<Handler: HTTPHandler>(context: HTTPServerContext<Handler>, group: EventLoopGroup, queue: DispatchQueue) {
        let isUnix = unixPath != nil
        for _ in 0..<max(1, context.configuration.acceptBatch) {
            guard context.hasCapacity else {
                // At maxConnections: leave new connections in the backlog until some close.
                pauseAccepting(queue: queue, context: context)
                return
            }
            switch Socket.accept(fd) {
            case .success(nil):
                return
            case .success(let (connectionFD, peer)?):
                if !isUnix { Socket.setNoDelay(connectionFD) }
                let loop = group.loops[nextLoop % group.loops.count]
                nextLoop = (nextLoop + 1) % group.loops.count
                context.connectionOpened()
                let id = context.makeConnectionID()
                let remote = isUnix ? "unix:" : peer.description
                let local = localDescription
                if proxyProtocol {
                    let tls = self.tls
                    loop.execute {
                        ProxyProtocolConnection(fd: connectionFD, tls: tls, loop: loop, context: context, id: id,
                                                remoteAddress: remote, localAddress: local).start()
                    }
                } else if let tls {
                    loop.execute {
                        TLSHandshakeConnection(fd: connectionFD, tls: tls, loop: loop, context: context, id: id,
                                               remoteAddress: remote, localAddress: local).start()
                    }
                } else {
                    let info = HTTPConnectionInfo(id: id, remoteAddress: remote, localAddress: local, loopIndex: loop.index)
                    loop.execute {
                        HTTP1ServerConnection(stream: ByteStream(fd: connectionFD, loop: loop), loop: loop, context: context,
                                              info: info).start()
                    }
                }
            case .failure(let f):
                // Out of descriptors or memory: stop accepting briefly instead of spinning.
                if f.errno == EMFILE || f.errno == ENFILE || f.errno == ENOBUFS || f.errno == ENOMEM, let source,
                   !suspended {
                    suspended = true
                    source.suspend()
                    queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [weak self] in
                        guard let self, self.suspended, let s = self.source else { return }
                        self.suspended = false
                        s.resume()
                    }
                }
                return
            }
        }
    }

    /// Suspends the accept source and re-checks capacity every 50 ms (accept queue only).
    private func pauseAccepting(queue: DispatchQueue, context: HTTPServerShared) {
        guard let source, !suspended else { return }
        suspended = true
        source.suspend()
        resumeWhenCapacity(queue: queue, context: context)
    }

    private func resumeWhenCapacity(queue: DispatchQueue, context: HTTPServerShared) {
        queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in
            guard let self, self.suspended, let s = self.source else { return }
            if context.hasCapacity {
                self.suspended = false
                s.resume()
            } else {
                self.resumeWhenCapacity(queue: queue, context: context)
            }
        }
    }

    /// Stops accepting, closes the socket, removes a Unix socket file.
    func close() {
        guard !closed else { return }
        closed = true
        if let source {
            self.source = nil
            source.cancel()
            if suspended { suspended = false; source.resume() }
        } else {
            _ = Glibc.close(fd)
        }
        if let unixPath { unlink(unixPath) }
    }
}
