// A listening socket whose new connections every event loop accepts (HTTPLoopAcceptor).

import GatewayIO
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One bound listening socket of a server.
final class HTTPListener: @unchecked Sendable {  // mutable state confined to the server's accept queue; `open` (any loop) reads only what `start` set before the loops began
    let fd: Int32
    let requested: SocketEndpoint
    let bound: SocketAddress
    let unixPath: String?
    /// The TLS context of a TLS listener (nil: plain).
    let tls: TLSServerContext?
    /// Connections start with a PROXY protocol header.
    let proxyProtocol: Bool
    private let localDescription: String
    /// One per loop of the group (set by `start`, on the accept queue).
    private var acceptors: [HTTPLoopAcceptor] = []
    /// The server's context and loops (set by `start` before any loop accepts; read by `open`).
    private var context: HTTPServerContext?
    private var group: EventLoopGroup?
    /// Accepts everything queued now on the accept queue (set by `start`).
    private var acceptAll: (() -> Void)?
    private var nextLoop = 0
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

    /// Starts accepting on every loop of `group` (`HTTPLoopAcceptor`: each loop watches the socket
    /// and accepts on its own thread); the connections call `context.handler`. On the accept queue
    /// `queue`, which handover's `acceptRemaining` runs on too.
    func start(queue: DispatchQueue, context: HTTPServerContext, group: EventLoopGroup) {
        guard !closed, acceptors.isEmpty else { return }
        self.context = context
        self.group = group
        acceptAll = { [unowned self] in self.acceptOnQueue(context: context, group: group) }
        for loop in group.loops {
            let acceptor = HTTPLoopAcceptor(loop: loop, listener: self, context: context, group: group)
            acceptors.append(acceptor)
            // Each loop watches its own descriptor of the socket: its registration and its close are its own.
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { continue }  // out of descriptors: the other loops accept
            loop.execute { acceptor.start(fd: copy) }
        }
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

    /// Accepts on the accept queue until none is queued (or `maxConnections` is reached), handing
    /// each connection to a loop (the least loaded, see `HTTPServerContext.reserveConnection`).
    private func acceptOnQueue(context: HTTPServerContext, group: EventLoopGroup) {
        let loops = group.loops.count
        while true {
            guard let target = context.reserveConnection(preferred: nextLoop, loops: loops) else { return }
            nextLoop = (nextLoop + 1) % loops
            switch Socket.accept(fd) {
            case .success(let (connectionFD, peer)?):
                open(connectionFD, peer: peer, on: group.loops[target], onItsQueue: false)
            case .success(nil), .failure:
                context.cancelReservation(loop: target)
                return
            }
        }
    }

    /// Starts the connection `connectionFD` (just accepted from `peer`, its place taken with
    /// `HTTPServerContext.reserveConnection`) on `loop`: right here when `onItsQueue` (the caller runs on
    /// that loop's queue), else through `loop.execute`. Any thread; reads only what `start` set.
    func open(_ connectionFD: Int32, peer: SocketAddress, on loop: EventLoop, onItsQueue: Bool) {
        guard let context else { _ = Glibc.close(connectionFD); return }
        let isUnix = unixPath != nil
        if !isUnix { Socket.setNoDelay(connectionFD) }
        let id = context.makeConnectionID()
        let remote = isUnix ? "unix:" : peer.description
        let local = localDescription
        let start: @Sendable () -> Void
        if proxyProtocol {
            let tls = self.tls
            start = {
                ProxyProtocolConnection(fd: connectionFD, tls: tls, loop: loop, context: context, id: id,
                                        remoteAddress: remote, localAddress: local).start()
            }
        } else if let tls {
            start = {
                TLSHandshakeConnection(fd: connectionFD, tls: tls, loop: loop, context: context, id: id,
                                       remoteAddress: remote, localAddress: local).start()
            }
        } else {
            let info = HTTPConnectionInfo(id: id, remoteAddress: remote, localAddress: local, loopIndex: loop.index)
            start = {
                HTTP1ServerConnection(stream: ByteStream(fd: connectionFD, loop: loop), loop: loop, context: context,
                                      info: info).start()
            }
        }
        if onItsQueue { start() } else { loop.execute(start) }
    }

    /// Stops accepting, closes the socket, removes a Unix socket file.
    func close() {
        guard !closed else { return }
        closed = true
        acceptAll = nil
        // Each loop closes its own descriptor on its queue (ahead of any drain work queued after this);
        // the socket stops listening once the last one is closed.
        for acceptor in acceptors { acceptor.loop.execute { acceptor.close() } }
        _ = Glibc.close(fd)
        if let unixPath, let unixFile {
            // Only the file this listener created: another process may have bound the path since.
            var st = stat()
            if lstat(unixPath, &st) == 0 && UInt64(st.st_dev) == unixFile.device && UInt64(st.st_ino) == unixFile.inode {
                unlink(unixPath)
            }
        }
    }
}
