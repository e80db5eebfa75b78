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
    /// Accepts everything queued now (set by `start`, typed for the server's handler).
    private var acceptAll: (() -> Void)?
    private var nextLoop = 0
    private var suspended = false
    private var closed = false
    /// Device and inode of the Unix socket file this listener created (removed on close only if the
    /// path still names that file).
    private var unixFile: (device: UInt64, inode: UInt64)?

    /// Binds and listens: TCP with `SO_REUSEADDR` and `SO_REUSEPORT` (`Socket.listen`; any steering
    /// program a previous process left on the address's group is removed); a Unix socket file is
    /// replaced only when nothing answers on it (a stale file), never when another process listens.
    /// - Throws: `Socket.Failure` when the address cannot be bound, a Unix path exists and is not a
    ///   socket, or another process listens on it (`EADDRINUSE`).
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
                    throw Socket.Failure(call: "listen unix:\(path): exists and is not a socket", errno: EEXIST)
                }
                if try Socket.isListening(unix: address) {
                    throw Socket.Failure(call: "listen unix:\(path): another process is listening on it (a live socket is "
                                         + "never replaced: stop that process or choose another path)", errno: EADDRINUSE)
                }
                unlink(path)  // stale: left by a process that is gone
            }
            unixPath = path
        }
        fd = try Socket.listen(on: address, backlog: Int32(clamping: max(1, backlog)))
        if let unixPath {
            if let mode = unixPermissions { chmod(unixPath, mode_t(mode)) }
            var st = stat()
            if lstat(unixPath, &st) == 0 { unixFile = (UInt64(st.st_dev), UInt64(st.st_ino)) }
        } else {
            Socket.detachReusePortProgram(fd)
        }
        bound = address.isUnix ? address : Socket.localAddress(fd)
        localDescription = bound.description
    }

    var boundListener: HTTPBoundListener {
        HTTPBoundListener(requested: requested, address: localDescription, port: bound.port)
    }

    /// Starts accepting on `queue`; the connections call `context.handler`.
    func start(queue: DispatchQueue, context: HTTPServerContext, group: EventLoopGroup) {
        acceptAll = { [unowned self] in self.acceptBatch(context: context, group: group, queue: queue, limit: Int.max) }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let fd = self.fd
        source.setEventHandler { [unowned self] in self.acceptBatch(context: context, group: group, queue: queue) }
        source.setCancelHandler { _ = Glibc.close(fd) }
        self.source = source
        source.activate()
    }

    /// Handover, step 1 (accept queue): new connections of this TCP address go to the process that
    /// bound it after this one (the second socket of its `SO_REUSEPORT` group: this process bound
    /// first, the successor joined next); while there is none the kernel keeps choosing this one.
    func steerToSuccessor() {
        guard unixPath == nil, !closed else { return }
        Socket.steerReusePortGroup(fd, toIndex: 1)
    }

    /// Handover, step 2 (accept queue): accepts every connection already queued, so that closing the
    /// socket resets none of them.
    func acceptRemaining() {
        guard !closed else { return }
        acceptAll?()
    }

    private func acceptBatch(context: HTTPServerContext, group: EventLoopGroup, queue: DispatchQueue,
                              limit: Int? = nil) {
        let isUnix = unixPath != nil
        for _ in 0..<(limit ?? max(1, context.configuration.acceptBatch)) {
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
    private func pauseAccepting(queue: DispatchQueue, context: HTTPServerContext) {
        guard let source, !suspended else { return }
        suspended = true
        source.suspend()
        resumeWhenCapacity(queue: queue, context: context)
    }

    private func resumeWhenCapacity(queue: DispatchQueue, context: HTTPServerContext) {
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
        acceptAll = nil
        if let source {
            self.source = nil
            source.cancel()
            if suspended { suspended = false; source.resume() }
        } else {
            _ = Glibc.close(fd)
        }
        if let unixPath, let unixFile {
            // Only the file this listener created: another process may have bound the path since.
            var st = stat()
            if lstat(unixPath, &st) == 0 && UInt64(st.st_dev) == unixFile.device && UInt64(st.st_ino) == unixFile.inode {
                unlink(unixPath)
            }
        }
    }
}
