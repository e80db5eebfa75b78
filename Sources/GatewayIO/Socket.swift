// Thin, non-blocking POSIX socket calls used by listeners, downstream and upstream connections.

import CEpoll
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Non-blocking socket system calls (Linux). Internal; every function returns errno-style results
/// instead of throwing on the hot path.
package enum Socket {
    /// Result of a read.
    package enum ReadResult {
        case bytes(Int)
        case wouldBlock
        case endOfFile
        case failed(Int32)
    }

    /// A system call failed while setting up a socket.
    package struct Failure: Error, CustomStringConvertible {
        package let call: String
        package let errno: Int32
        package var description: String { "\(call): \(String(cString: strerror(errno)))" }
        /// The failed call (with context) and its errno.
        package init(call: String, errno: Int32) {
            self.call = call
            self.errno = errno
        }
    }

    /// A new non-blocking, close-on-exec stream socket.
    package static func makeStream(family: Int32) throws -> Int32 {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(call: "socket", errno: errno) }
        return fd
    }

    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Disables Nagle (TCP_NODELAY).
    package static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Creates, binds and listens; returns the descriptor. TCP listeners set `SO_REUSEADDR` and
    /// `SO_REUSEPORT` (socket(7)): a second process of the same user can bind the same address while
    /// the first drains (the handover); the kernel spreads new connections across the group (see
    /// `steerReusePortGroup`).
    package static func listen(on address: SocketAddress, backlog: Int32) throws -> Int32 {
        let fd = try makeStream(family: address.family)
        if !address.isUnix {
            setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1)
            if address.family == AF_INET6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
        }
        let bound = address.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw Failure(call: "bind \(address.description)", errno: e)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            close(fd)
            throw Failure(call: "listen", errno: e)
        }
        return fd
    }

    /// Steers every new connection of `fd`'s `SO_REUSEPORT` group to the socket that joined it at
    /// `index` (0: the first); when the group has no such socket the kernel keeps hashing across all.
    /// The program stays on the group until `detachReusePortProgram`. Returns false when the kernel
    /// refused (no group: a Unix socket; an old kernel).
    @discardableResult
    package static func steerReusePortGroup(_ fd: Int32, toIndex index: UInt32) -> Bool {
        var code = sock_filter(code: UInt16(ATTEST_BPF_RET_K), jt: 0, jf: 0, k: index)
        return withUnsafeMutablePointer(to: &code) { instruction in
            var program = sock_fprog(len: 1, filter: instruction)
            return setsockopt(fd, SOL_SOCKET, ATTEST_SO_ATTACH_REUSEPORT_CBPF, &program,
                              socklen_t(MemoryLayout<sock_fprog>.size)) == 0
        }
    }

    /// Removes a steering program a previous process left on `fd`'s `SO_REUSEPORT` group (the kernel
    /// hashes new connections across the group again).
    package static func detachReusePortProgram(_ fd: Int32) {
        var unused: Int32 = 0
        _ = setsockopt(fd, SOL_SOCKET, ATTEST_SO_DETACH_REUSEPORT_BPF, &unused, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Whether something listens on the Unix socket at `address`: true when a connection is
    /// accepted (or the backlog is full), false when nobody does (`ECONNREFUSED`: a stale socket file
    /// left by a process that died).
    /// - Throws: when it cannot tell (e.g. `EACCES`).
    package static func isListening(unix address: SocketAddress) throws -> Bool {
        let fd = try makeStream(family: address.family)
        defer { close(fd) }
        while true {
            let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
            if rc == 0 { return true }
            let e = errno
            switch e {
            case EINTR: continue
            case EAGAIN, EINPROGRESS: return true
            case ECONNREFUSED: return false
            default: throw Failure(call: "connect \(address.description)", errno: e)
            }
        }
    }

    /// The local address a descriptor is bound to.
    package static func localAddress(_ fd: Int32) -> SocketAddress {
        var address = SocketAddress()
        address.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutableBytes(of: &address.storage) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &address.length)
        }
        return address
    }

    /// Accepts one connection: (fd, peer address), nil when none is pending, or an errno. The
    /// descriptor is non-blocking and close-on-exec from the start (accept4(2) with `SOCK_NONBLOCK |
    /// SOCK_CLOEXEC`: no `fcntl` calls per connection, and no window in which a fork could inherit it).
    package static func accept(_ listener: Int32) -> Result<(Int32, SocketAddress)?, Failure> {
        var peer = SocketAddress()
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        while true {
            peer.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutableBytes(of: &peer.storage) { raw in
                CEpoll.accept4(listener, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &peer.length, flags)
            }
            if fd >= 0 { return .success((fd, peer)) }
            let e = errno
            switch e {
            case EAGAIN, EWOULDBLOCK: return .success(nil)
            case EINTR, ECONNABORTED, EPROTO: continue
            default: return .failure(Failure(call: "accept", errno: e))
            }
        }
    }

    /// Starts a non-blocking connect: true when connected at once, false when in progress.
    package static func connect(_ fd: Int32, to address: SocketAddress) -> Result<Bool, Failure> {
        while true {
            let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
            if rc == 0 { return .success(true) }
            let e = errno
            if e == EINTR { continue }
            if e == EINPROGRESS { return .success(false) }
            return .failure(Failure(call: "connect", errno: e))
        }
    }

    /// The pending error of a socket (SO_ERROR), 0 when none.
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) == 0 else { return errno }
        return value
    }

    /// Reads into `buffer`.
    @inline(__always)
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfFile }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            return .failed(e)
        }
    }

    /// Writes from `bytes` (never raises SIGPIPE): bytes written (0 when it would block) or an errno.
    @inline(__always)
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Failure> {
        while true {
            let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .success(n) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .success(0) }
            return .failure(Failure(call: "send", errno: e))
        }
    }
}
