import Dispatch
import GatewayIO
import GatewayRules
import GatewayStore
#if canImport(Glibc)
import Glibc
#endif

/// Completion of one Redis command: its reply (error replies included) or why there is none.
typealias RedisCompletion = @Sendable (Result<RedisReply, StoreUnavailable>) -> Void

/// One pipelined Redis connection living in an event loop: the I/O half of `RedisConnectionMachine`.
///
/// Why our own non-blocking socket with hiredis' `redisReader` (replies) and `redisFormatCommandArgv`
/// (requests) rather than `redisAsyncContext`: hiredis 0.14.1 (Debian 12) has no async command timeout
/// (`redisAsyncSetTimeout` arrived in 1.0) and no way to bound its reply-callback queue, and its adapter
/// callbacks (add/del read/write, cleanup) re-enter the context while it frees itself, which is hard to
/// make safe under Swift 6 concurrency checking. Owning the socket lets a value-type state machine decide
/// timeouts, fail-fast, the bounded queue and reconnection (unit-tested without sockets), while hiredis
/// still does all RESP framing and parsing.
///
/// The socket sits in the loop's poller (`SocketChannel`) next to the loop's client and upstream
/// sockets, and the commands submitted during one loop turn are written together at the loop's end
/// of turn (`EventLoop.atEndOfTurn`). No thread per request, no Dispatch source per connection.
///
/// TLS (`rediss://`, `rediss+cluster://`): with a `tls` context, each TCP connection runs the TLS
/// client handshake (`TLSConnection(client:)`, the transport `https://` upstreams use) before the
/// Redis handshake, inside the connect timeout; the certificate is checked against the endpoint's host
/// (SNI for DNS names, RFC 6125 name check, IP SAN for addresses) unless the context does not verify.
/// A refused certificate is a failed connect (the store answers unavailable), never a plain fallback.
///
/// Sentinel (`redis+sentinel://`): with a `resolver`, every connection attempt first asks the
/// Sentinels for the current primary (off the loop) and connects there; a lost connection or a
/// `READONLY` reply (the server was demoted) drops the connection, so the next attempt asks again.
///
/// Completions run on the loop's queue, never synchronously inside `submit`. A caller on that queue
/// (`submit(_:onQueue: true)`) skips the hop and its write is coalesced with the turn's other commands.
final class RedisConnection: EndOfTurnWorker, @unchecked Sendable {  // every mutable field is touched only on `loop.queue`
    /// The loop the connection lives in.
    let loop: EventLoop
    /// `loop.queue`.
    var queue: DispatchQueue { loop.queue }
    private let endpoint: RedisURL.Endpoint
    /// TLS client context (`rediss://`); nil speaks plain TCP.
    private let tls: TLSClientContext?
    /// Asks Sentinels for the primary before each attempt (`redis+sentinel://`); nil connects to `endpoint`.
    private let resolver: RedisSentinelResolver?
    /// Where the current (or last) attempt connects: `endpoint`, or the primary a Sentinel named.
    private var target: RedisURL.Endpoint
    private var machine: RedisConnectionMachine<RedisCompletion>
    private var socket: Socket?
    private var generation: UInt64 = 0
    private let timer: DispatchSourceTimer
    private var armedDeadline: UInt64?
    /// A flush of coalesced writes is scheduled for the loop's end of turn.
    private var flushScheduled = false
    /// Health last reported to `onHealthChange`.
    private var health = RedisConnectionHealth.connecting
    /// Told (on `queue`) each time the connection's health changes, with the last error's detail.
    private let onHealthChange: (@Sendable (RedisConnectionHealth, String) -> Void)?

    init(endpoint: RedisURL.Endpoint, machine: RedisConnectionMachine<RedisCompletion>, loop: EventLoop,
         tls: TLSClientContext? = nil, resolver: RedisSentinelResolver? = nil,
         onHealthChange: (@Sendable (RedisConnectionHealth, String) -> Void)? = nil) {
        self.endpoint = endpoint
        self.target = endpoint
        self.tls = tls
        self.resolver = resolver
        self.machine = machine
        self.loop = loop
        self.onHealthChange = onHealthChange
        self.timer = DispatchSource.makeTimerSource(queue: loop.queue)
        timer.setEventHandler { [unowned self] in
            self.armedDeadline = nil
            self.perform(self.machine.tick(now: RedisConnection.now()))
        }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    /// Monotonic nanoseconds (the machine's clock).
    static func now() -> UInt64 { EventLoop.now() }

    /// Starts connecting.
    func start() { queue.async { self.perform(self.machine.start(now: RedisConnection.now())) } }

    /// Sends a RESP-encoded command; `completion` runs on `queue` exactly once, never inside this call.
    /// - Parameter onQueue: the caller runs on `queue` (then no hop: the command is queued at once and
    ///   written with the others of this loop turn).
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

    /// Writes the commands coalesced during this loop turn once the turn is over.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.atEndOfTurn(self)  // held until then; no closure per turn
    }

    /// `EndOfTurnWorker`: writes what `scheduleFlush()` coalesced.
    func endOfTurn() {
        flushScheduled = false
        guard let socket, let failure = socket.flush() else { return }
        closeSocket()
        perform(machine.connectionLost(now: RedisConnection.now(), detail: failure))
    }

    /// Closes for good: pending commands fail as `.closed`, the socket and timer are released.
    func close() {
        queue.async {
            self.perform(self.machine.close())
            self.timer.cancel()
        }
    }

    /// Commands waiting or in flight; read only on `queue`.
    var pendingOnQueue: Int { machine.pendingCount }

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
        reportHealth()
    }

    /// Tells `onHealthChange` when the machine's state moved to another `RedisConnectionHealth`
    /// (every state change goes through `perform`).
    private func reportHealth() {
        let now = RedisConnectionHealth(machine.state, previous: health)
        guard now != health else { return }
        health = now
        onHealthChange?(now, machine.lastError)
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
        guard let resolver else { return open(endpoint, attempt: attempt) }
        // Blocking Sentinel queries: off the loop, connect back on it.
        DispatchQueue.global().async {
            let resolved = resolver.resolve()
            self.queue.async {
                guard attempt == self.generation else { return }
                switch resolved {
                case .success(let primary):
                    self.target = primary
                    self.open(primary, attempt: attempt)
                case .failure(let failure):
                    self.perform(self.machine.connectFailed(now: RedisConnection.now(), detail: failure.description))
                }
            }
        }
    }

    /// Connects to `endpoint` (resolving a DNS name off the loop).
    private func open(_ endpoint: RedisURL.Endpoint, attempt: UInt64) {
        switch endpoint {
        case .unix(let path):
            guard let address = try? SocketAddress.unix(path: path) else {
                return perform(machine.connectFailed(now: RedisConnection.now(), detail: "socket path too long"))
            }
            connect(to: [address], index: 0, attempt: attempt)
        case .tcp(let host, let port):
            if let literal = SocketAddress.literal(host: host, port: port) {
                connect(to: [literal], index: 0, attempt: attempt)
                return
            }
            // getaddrinfo blocks: resolve off the loop, connect back on it.
            DispatchQueue.global().async {
                let resolved = Result { try SocketAddress.resolveAll(host: host, port: port) }
                self.queue.async {
                    guard attempt == self.generation else { return }
                    switch resolved {
                    case .success(let addresses): self.connect(to: addresses, index: 0, attempt: attempt)
                    case .failure(let error):
                        self.perform(self.machine.connectFailed(now: RedisConnection.now(), detail: "\(error)"))
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
        let fd: Int32
        do {
            fd = try GatewayIO.Socket.makeStream(family: address.family)
        } catch {
            return connect(to: addresses, index: index + 1, attempt: attempt, lastError: "\(error)")
        }
        let socket = Socket(fd: fd, loop: loop)
        self.socket = socket
        switch GatewayIO.Socket.connect(fd, to: address) {
        case .success(true):
            connected(socket, tcp: !address.isUnix)
        case .failure(let failure):
            closeSocket()
            connect(to: addresses, index: index + 1, attempt: generation, lastError: "\(address): \(failure)")
        case .success(false):
            // In progress: wait for writability, then read the connect result.
            socket.onWritable = { [unowned self, unowned socket] in
                socket.channel.disarmWrite()
                let status = GatewayIO.Socket.pendingError(fd)
                if status == 0 {
                    self.connected(socket, tcp: !address.isUnix)
                } else {
                    self.closeSocket()
                    self.connect(to: addresses, index: index + 1, attempt: self.generation,
                                 lastError: "\(address): \(errnoText(status))")
                }
            }
            socket.channel.armWrite()
        }
    }

    private func connected(_ socket: Socket, tcp: Bool) {
        if tcp {
            GatewayIO.Socket.setNoDelay(socket.channel.fd)
            GatewayIO.Socket.setOption(socket.channel.fd, SOL_SOCKET, SO_KEEPALIVE, 1)
        }
        if let tls, tcp, socket.tls == nil {
            return startTLS(socket, context: tls)
        }
        let attempt = generation
        socket.onWritable = { [unowned self, unowned socket] in
            guard attempt == self.generation else { return }
            if let failure = socket.flush() {
                self.closeSocket()
                self.perform(self.machine.connectionLost(now: RedisConnection.now(), detail: failure))
            } else if socket.tls != nil {
                self.readAvailable()  // a TLS read may have waited for writability
            }
        }
        socket.onReadable = { [unowned self] in
            guard attempt == self.generation else { return }
            self.readAvailable()
        }
        socket.channel.startReading()
        perform(machine.connected(now: RedisConnection.now()))
    }

    /// TCP is up: runs the TLS client handshake (readiness-driven), then continues as `connected`.
    private func startTLS(_ socket: Socket, context: TLSClientContext) {
        guard case .tcp(let host, _) = target else { return }
        do {
            socket.tls = try TLSConnection(client: context, fd: socket.channel.fd, serverName: host)
        } catch {
            closeSocket()
            return perform(machine.connectFailed(now: RedisConnection.now(), detail: "TLS: \(error)"))
        }
        let attempt = generation
        let step = { [unowned self, unowned socket] in
            guard attempt == self.generation, let connection = socket.tls else { return }
            switch connection.handshake() {
            case .done:
                socket.channel.disarmWrite()
                self.connected(socket, tcp: true)
            case .wantRead:
                socket.channel.disarmWrite()
            case .wantWrite:
                socket.channel.armWrite()
            case .closed:
                self.closeSocket()
                self.perform(self.machine.connectFailed(now: RedisConnection.now(),
                                                        detail: "TLS handshake with \(RedisURL.hostPort(self.target)): closed by the server"))
            case .failed(let reason):
                self.closeSocket()
                self.perform(self.machine.connectFailed(now: RedisConnection.now(),
                                                        detail: "TLS handshake with \(RedisURL.hostPort(self.target)): \(reason)"))
            }
        }
        socket.onReadable = step
        socket.onWritable = step
        socket.channel.startReading()
        step()
    }

    private func readAvailable() {
        guard let socket else { return }
        if socket.tls != nil { return readAvailableTLS(socket) }
        let buffer = loop.readBuffer
        let count: Int
        switch GatewayIO.Socket.read(socket.channel.fd, into: buffer) {
        case .bytes(let n):
            count = n
        case .wouldBlock:
            return
        case .endOfFile:
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), detail: "connection closed by server"))
        case .failed(let error):
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), detail: "read: \(errnoText(error))"))
        }
        consume(socket, count: count)
    }

    /// TLS: decrypts until OpenSSL wants more bytes (one call yields one record, and read-ahead may
    /// hold more than the socket shows), feeding each piece to the parser.
    private func readAvailableTLS(_ socket: Socket) {
        let buffer = loop.readBuffer
        while self.socket === socket, let connection = socket.tls {
            switch connection.read(into: buffer) {
            case .bytes(let count):
                consume(socket, count: count)
            case .wantRead:
                guard socket.flushWaitsForRead else { return }
                // A TLS write waited for bytes from the server: retry it now that they were read.
                socket.flushWaitsForRead = false
                if let failure = socket.flush() {
                    closeSocket()
                    perform(machine.connectionLost(now: RedisConnection.now(), detail: failure))
                }
                return
            case .wantWrite:
                return socket.channel.armWrite()
            case .closed:
                closeSocket()
                return perform(machine.connectionLost(now: RedisConnection.now(), detail: "connection closed by server"))
            case .failed(let reason):
                closeSocket()
                return perform(machine.connectionLost(now: RedisConnection.now(), detail: "TLS read: \(reason)"))
            }
        }
    }

    /// Feeds `count` bytes of `loop.readBuffer` to the parser and hands the replies to the machine.
    private func consume(_ socket: Socket, count: Int) {
        var actions = [RedisConnectionMachine<RedisCompletion>.Action]()
        var demoted = false
        do {
            try socket.parser.feed(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(loop.readBuffer)[0..<count]))
            let now = RedisConnection.now()
            while self.socket === socket, let reply = try socket.parser.next() {
                if resolver != nil, reply.errorCode == "READONLY" { demoted = true }
                // Usually one reply per read: take the machine's array as it is (no second array).
                let received = machine.received(reply, now: now)
                if actions.isEmpty { actions = received } else { actions.append(contentsOf: received) }
                if case .backoff = machine.state { break }
            }
        } catch {
            perform(actions)
            closeSocket()
            return perform(machine.connectionLost(now: RedisConnection.now(), protocolError: true,
                                                  detail: (error as? RedisReplyParser.ProtocolError)?.detail ?? "protocol error"))
        }
        perform(actions)
        if demoted, self.socket === socket {
            // The server is a replica now (failover): reconnect through the Sentinels.
            closeSocket()
            perform(machine.connectionLost(now: RedisConnection.now(), detail: "READONLY from \(RedisURL.hostPort(target)): the primary moved"))
        }
    }
}

/// A connected (or connecting) non-blocking socket in the connection's loop (`SocketChannel`), its
/// reply parser and its output buffer. Used only on the loop's queue.
private final class Socket {
    let channel: SocketChannel
    let parser: RedisReplyParser
    private var output = OutputBuffer()
    /// The TLS layer (`rediss://`), set once TCP is up; nil for plain TCP and Unix sockets.
    var tls: TLSConnection?
    /// The last TLS flush stopped on `.wantRead`: the next read retries it.
    var flushWaitsForRead = false
    var onReadable: () -> Void = {}
    var onWritable: () -> Void = {}

    init(fd: Int32, loop: EventLoop) {
        // redisReaderCreate only fails when malloc fails; then the process is going down anyway.
        parser = RedisReplyParser() ?? { fatalError("hiredis: out of memory creating a reply reader") }()
        var readable: () -> Void = {}
        var writable: () -> Void = {}
        channel = SocketChannel(fd: fd, loop: loop, onReadable: { readable() }, onWritable: { writable() })
        readable = { [unowned self] in self.onReadable() }
        writable = { [unowned self] in self.onWritable() }
    }

    func enqueue(_ bytes: [UInt8]) { output.append(bytes) }

    /// Writes as much pending output as the socket takes (write interest armed while some is left).
    /// - Returns: an error description on failure.
    func flush() -> String? {
        if let tls {
            switch tls.flush(&output).result {
            case .done:
                channel.disarmWrite()
                return nil
            case .wantWrite:
                channel.armWrite()
                return nil
            case .wantRead, .closed:
                flushWaitsForRead = true  // reading is always armed; the next read retries the write
                return nil
            case .failed(let reason):
                return "TLS write: \(reason)"
            }
        }
        switch output.flush(to: channel.fd).result {
        case .done:
            channel.disarmWrite()
            return nil
        case .wouldBlock:
            channel.armWrite()
            return nil
        case .failed(let error):
            return "write: \(errnoText(error))"
        }
    }

    /// Removes the socket from the poller and closes it.
    func cancel() {
        onReadable = {}
        onWritable = {}
        tls?.close()
        tls = nil
        channel.close()
    }
}

/// Text of an errno value.
func errnoText(_ code: Int32 = errno) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}
