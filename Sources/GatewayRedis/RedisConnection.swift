import Dispatch
import GatewayRules
import GatewayStore
#if canImport(Glibc)
import Glibc
#endif

/// Completion of one Redis command: its reply (error replies included) or why there is none.
typealias RedisCompletion = @Sendable (Result<RedisReply, StoreUnavailable>) -> Void

/// One pipelined Redis connection on a serial DispatchQueue: the I/O half of `RedisConnectionMachine`.
///
/// Why our own non-blocking socket with hiredis' `redisReader` (replies) and `redisFormatCommandArgv`
/// (requests) rather than `redisAsyncContext`: hiredis 0.14.1 (Debian 12) has no async command timeout
/// (`redisAsyncSetTimeout` arrived in 1.0) and no way to bound its reply-callback queue, and its adapter
/// callbacks (add/del read/write, cleanup) re-enter the context while it frees itself, which is hard to
/// make safe under Swift 6 concurrency checking. Owning the socket lets a value-type state machine decide
/// timeouts, fail-fast, the bounded queue and reconnection (unit-tested without sockets), while hiredis
/// still does all RESP framing and parsing. No thread per request: one DispatchSourceRead, one
/// DispatchSourceWrite (only resumed while output is pending) and one timer per connection - or, in
/// an event loop (`RedisEventLoopHost`), the loop's readiness set instead of the two sources.
///
/// Completions run on `queue`, never synchronously inside `submit`. The queue may be shared with the
/// callers (an event loop, see `RedisStore.Configuration.queues`): then `submit(_:onQueue: true)` from
/// that queue skips the hop and its write is coalesced with the other commands of the same queue turn.
final class RedisConnection: @unchecked Sendable {  // every mutable field is touched only on `queue`
    let queue: DispatchQueue
    /// The event loop the connection lives in, if any (then its socket is watched by the loop and
    /// its output flushed at the loop's end of turn); nil: own Dispatch sources on `queue`.
    private let host: (any RedisEventLoopHost)?
    private let endpoint: RedisURL.Endpoint
    private var machine: RedisConnectionMachine<RedisCompletion>
    private var socket: Socket?
    private var generation: UInt64 = 0
    private let timer: DispatchSourceTimer
    private var armedDeadline: UInt64?
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    /// A flush of coalesced writes is queued on `queue`.
    private var flushScheduled = false

    init(endpoint: RedisURL.Endpoint, machine: RedisConnectionMachine<RedisCompletion>, queue: DispatchQueue,
         host: (any RedisEventLoopHost)? = nil) {
        self.endpoint = endpoint
        self.machine = machine
        self.queue = host?.queue ?? queue
        self.host = host
        self.timer = DispatchSource.makeTimerSource(queue: self.queue)
        timer.setEventHandler { [unowned self] in
            self.armedDeadline = nil
            self.perform(self.machine.tick(now: RedisConnection.now()))
        }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    /// Monotonic nanoseconds (the machine's clock).
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Starts connecting.
    func start() { queue.async { self.perform(self.machine.start(now: RedisConnection.now())) } }

    /// Sends a RESP-encoded command; `completion` runs on `queue` exactly once, never inside this call.
    /// - Parameter onQueue: the caller runs on `queue` (then no hop: the command is queued at once and
    ///   written with the others of this queue turn).
    func submit(_ bytes: [UInt8], onQueue: Bool = false, completion: @escaping RedisCompletion) {
        guard onQueue else {
            queue.async { self.perform(self.machine.submit(completion, bytes: bytes, now: RedisConnection.now())) }
            return
        }
        let actions = machine.submit(completion, bytes: bytes, now: RedisConnection.now())
        if actions.count == 1, case .write(let command) = actions[0] {
            if let socket {
                socket.enqueue(command)
                scheduleFlush()
            }
            rearmTimer()
        } else if !actions.isEmpty {
            // Fail-fast answers: never complete on the caller's stack.
            queue.async { self.perform(actions) }
        } else {
            rearmTimer()
        }
    }

    /// Writes the commands coalesced during this queue turn once the turn is over.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        let flush: @Sendable () -> Void = { [self] in
            flushScheduled = false
            guard let socket, let failure = socket.flush() else { return }
            closeSocket()
            perform(machine.connectionLost(now: RedisConnection.now(), detail: failure))
        }
        if let host { host.atEndOfTurn(flush) } else { queue.async(execute: flush) }
    }

    /// Closes for good: pending commands fail as `.closed`, the socket and timer are released.
    func close() {
        queue.async {
            self.perform(self.machine.close())
            self.timer.cancel()
        }
    }

    /// Current state (for tests and diagnostics), read on `queue`.
    func state(_ body: @escaping @Sendable (RedisConnectionMachine<RedisCompletion>.State, Int) -> Void) {
        queue.async { body(self.machine.state, self.machine.pendingCount) }
    }

    // MARK: Actions

    private func perform(_ actions: [RedisConnectionMachine<RedisCompletion>.Action]) {
        var writeFailure: String?
        for action in actions {
            switch action {
            case .connect: openSocket()
            case .write(let bytes):
                guard let socket, writeFailure == nil else { continue }
                socket.enqueue(bytes)
                if let failure = socket.flush() { writeFailure = failure }
            case .deliver(let completion, let reply): completion(.success(reply))
            case .fail(let completion, let error): completion(.failure(error))
            case .closeSocket: closeSocket()
            }
        }
        if let writeFailure {
            closeSocket()
            perform(machine.connectionLost(now: RedisConnection.now(), detail: writeFailure))
            return
        }
        rearmTimer()
    }

    private func rearmTimer() {
        guard let deadline = machine.nextDeadline else { return }
        if let armed = armedDeadline, armed <= deadline { return }
        armedDeadline = deadline
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: max(deadline, 1)), leeway: .milliseconds(1))
    }

    private func closeSocket() {
        generation &+= 1
        socket?.cancel()
        socket = nil
    }

    // MARK: Connecting

    private func openSocket() {
        closeSocket()
        let attempt = generation
        switch endpoint {
        case .unix(let path):
            guard let address = SocketAddress(unixPath: path) else {
                return perform(machine.connectFailed(now: RedisConnection.now(), detail: "socket path too long"))
            }
            connect(to: [address], index: 0, attempt: attempt)
        case .tcp(let host, let port):
            if let literal = SocketAddress(literal: host, port: port) {
                connect(to: [literal], index: 0, attempt: attempt)
                return
            }
            DispatchQueue.global().async {
                let resolved = SocketAddress.resolve(host: host, port: port)
                self.queue.async {
                    guard attempt == self.generation else { return }
                    switch resolved {
                    case .success(let addresses): self.connect(to: addresses, index: 0, attempt: attempt)
                    case .failure(let error): self.perform(self.machine.connectFailed(now: RedisConnection.now(), detail: error.detail))
                    }
                }
            }
        }
    }

    /// Tries `addresses[index...]` in order until one connects.
    private func connect(to addresses: [SocketAddress], index: Int, attempt: UInt64, lastError: String = "no address") {
        guard attempt == generation else { return }
        guard index < addresses.count else {
            return perform(machine.connectFailed(now: RedisConnection.now(), detail: lastError))
        }
        let address = addresses[index]
        let fd = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            return connect(to: addresses, index: index + 1, attempt: attempt, lastError: "socket: \(errnoText())")
        }
        let socket = Socket(fd: fd, queue: queue, host: host)
        self.socket = socket
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 {
            connected(socket, tcp: address.family != AF_UNIX)
            return
        }
        let error = errno
        guard error == EINPROGRESS || error == EAGAIN else {
            closeSocket()
            return connect(to: addresses, index: index + 1, attempt: generation, lastError: "\(address): \(errnoText(error))")
        }
        // Wait for writability, then read the connect result.
        socket.onWritable = { [unowned self, unowned socket] in
            socket.suspendWrites()
            var status: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &length)
            if status == 0 {
                self.connected(socket, tcp: address.family != AF_UNIX)
            } else {
                self.closeSocket()
                self.connect(to: addresses, index: index + 1, attempt: self.generation,
                             lastError: "\(address): \(errnoText(status))")
            }
        }
        socket.resumeWrites()
    }

    private func connected(_ socket: Socket, tcp: Bool) {
        if tcp {
            var one: Int32 = 1
            setsockopt(socket.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(socket.fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let attempt = generation
        socket.onWritable = { [unowned self, unowned socket] in
            guard attempt == self.generation else { return }
            if let failure = socket.flush() {
                self.closeSocket()
                self.perform(self.machine.connectionLost(now: RedisConnection.now(), detail: failure))
            }
        }
        socket.onReadable = { [unowned self] in
            guard attempt == self.generation else { return }
            self.readAvailable()
        }
        socket.resumeReads()
        perform(machine.connected(now: RedisConnection.now()))
    }

    private func readAvailable() {
        guard let socket else { return }
        let count = readBuffer.withUnsafeMutableBytes { Glibc.read(socket.fd, $0.baseAddress, $0.count) }
        if count == 0 {
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), detail: "connection closed by server"))
        }
        if count < 0 {
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK || error == EINTR { return }
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), detail: "read: \(errnoText(error))"))
        }
        var actions = [RedisConnectionMachine<RedisCompletion>.Action]()
        do {
            try readBuffer.withUnsafeBytes { try socket.parser.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            let now = RedisConnection.now()
            while self.socket === socket, let reply = try socket.parser.next() {
                actions.append(contentsOf: machine.received(reply, now: now))
                if case .backoff = machine.state { break }
            }
        } catch {
            perform(actions)
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), protocolError: true,
                                                  detail: (error as? RedisReplyParser.ProtocolError)?.detail ?? "protocol error"))
        }
        perform(actions)
    }
}

/// A connected (or connecting) non-blocking socket, its readiness (the host loop's watch, or a pair
/// of Dispatch sources) and its output buffer. Used only on the owning connection's queue.
private final class Socket {
    /// How readiness is delivered.
    private enum Readiness {
        /// Watched by the connection's event loop (`RedisEventLoopHost`).
        case hosted(any RedisWatchedSocket)
        /// Own Dispatch sources on the connection's queue (the write source resumed only while output is pending).
        case sources(read: DispatchSourceRead, write: DispatchSourceWrite)
        /// Only while `init` runs (the hosted watch's callbacks need `self`).
        case unset
    }

    let fd: Int32
    let parser: RedisReplyParser
    private var readiness: Readiness
    private var readsResumed = false
    private var writesResumed = false
    private var cancelled = false
    private var output: [UInt8] = []
    private var outputOffset = 0
    var onReadable: () -> Void = {}
    var onWritable: () -> Void = {}

    init(fd: Int32, queue: DispatchQueue, host: (any RedisEventLoopHost)?) {
        self.fd = fd
        // redisReaderCreate only fails when malloc fails; then the process is going down anyway.
        self.parser = RedisReplyParser() ?? { fatalError("hiredis: out of memory creating a reply reader") }()
        readiness = .unset
        if let host {
            readiness = .hosted(host.watch(fd: fd, onReadable: { [unowned self] in self.onReadable() },
                                           onWritable: { [unowned self] in self.onWritable() }))
            return
        }
        let readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let writeSource = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        // The descriptor is closed once both sources are cancelled (Dispatch requires it stay open until then).
        let closer = DescriptorCloser(fd: fd, users: 2)
        readSource.setCancelHandler { closer.release() }
        writeSource.setCancelHandler { closer.release() }
        readSource.setEventHandler { [unowned self] in self.onReadable() }
        writeSource.setEventHandler { [unowned self] in self.onWritable() }
        readiness = .sources(read: readSource, write: writeSource)
    }

    func resumeReads() {
        guard !readsResumed, !cancelled else { return }
        readsResumed = true
        switch readiness {
        case .hosted(let watch): watch.setReadInterest(true)
        case .sources(let read, _): read.resume()
        case .unset: break
        }
    }

    func resumeWrites() {
        guard !writesResumed, !cancelled else { return }
        writesResumed = true
        switch readiness {
        case .hosted(let watch): watch.setWriteInterest(true)
        case .sources(_, let write): write.resume()
        case .unset: break
        }
    }

    func suspendWrites() {
        guard writesResumed, !cancelled else { return }
        writesResumed = false
        switch readiness {
        case .hosted(let watch): watch.setWriteInterest(false)
        case .sources(_, let write): write.suspend()
        case .unset: break
        }
    }

    func enqueue(_ bytes: [UInt8]) {
        if outputOffset == output.count { output.removeAll(keepingCapacity: true); outputOffset = 0 }
        output.append(contentsOf: bytes)
    }

    /// Writes as much pending output as the socket takes. - Returns: an error description on failure.
    func flush() -> String? {
        while outputOffset < output.count {
            let written = output.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + outputOffset, raw.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 { outputOffset += written; continue }
            let error = errno
            if written < 0 && error == EINTR { continue }
            if written < 0 && (error == EAGAIN || error == EWOULDBLOCK) { resumeWrites(); return nil }
            return "write: \(errnoText(error))"
        }
        output.removeAll(keepingCapacity: output.capacity <= 65_536)
        outputOffset = 0
        suspendWrites()
        return nil
    }

    /// Stops readiness and closes the descriptor (at once when hosted; once both Dispatch sources
    /// are cancelled otherwise).
    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        onReadable = {}
        onWritable = {}
        switch readiness {
        case .hosted(let watch):
            watch.close()
        case .sources(let read, let write):
            if !readsResumed { read.resume() }
            if !writesResumed { write.resume() }
            read.cancel()
            write.cancel()
        case .unset:
            _ = Glibc.close(fd)
        }
    }
}

/// Closes a descriptor after its last user released it (cancel handlers run on one serial queue).
private final class DescriptorCloser: @unchecked Sendable {  // `users` only changes on the owning connection's queue
    private let fd: Int32
    private var users: Int
    init(fd: Int32, users: Int) { self.fd = fd; self.users = users }
    func release() {
        users -= 1
        if users == 0 { Glibc.close(fd) }
    }
}

/// Text of an errno value.
func errnoText(_ code: Int32 = errno) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}
