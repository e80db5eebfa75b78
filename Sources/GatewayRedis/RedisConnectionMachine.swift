import GatewayStore

/// The life of one pipelined Redis connection as a value type: it consumes events (connected, reply,
/// connection lost, timer tick, command submitted) and returns the actions the I/O layer
/// (`RedisConnection`) must perform. No sockets, clocks or randomness inside: `now` (monotonic
/// nanoseconds) is passed in and jitter comes from a seeded generator, so it is unit-tested without I/O.
///
/// States: `connecting` (socket being opened) -> `handshaking` (AUTH, SELECT, SCRIPT LOAD sent; replies
/// checked) -> `ready` -> on any failure `backoff` (jittered, capped) -> `connecting` ... ; `closed` is final.
///
/// Rules:
/// - Commands are pipelined: written at once, replies matched in FIFO order.
/// - While connecting or handshaking, commands wait (bounded by `maximumPending`) and are written only
///   once the handshake succeeded, so a command never runs unauthenticated or in the wrong database.
/// - While in backoff (Redis down), commands fail fast with `.notConnected`: nothing queues up.
/// - A command without reply after `commandTimeout` fails, with every other pending command, as
///   `.timeout` (outcome unknown), and the connection is reset: later replies would be misaligned.
/// - Connection lost: pending commands fail as `.connectionLost` (outcome unknown); reconnect after backoff.
struct RedisConnectionMachine<Token> {
    /// What the I/O layer must do.
    enum Action {
        /// Open a new socket to the endpoint, then report `connected` or `connectFailed`.
        case connect
        /// Write these bytes to the socket (in order, after anything written before).
        case write([UInt8])
        /// Hand a reply to the command's owner.
        case deliver(Token, RedisReply)
        /// Fail a command.
        case fail(Token, StoreUnavailable)
        /// Close the current socket; no more events from it are expected.
        case closeSocket
    }

    /// Connection state.
    enum State: Equatable {
        case connecting(deadline: UInt64)
        case handshaking(deadline: UInt64)
        case ready
        case backoff(until: UInt64)
        case closed
    }

    private struct Handshake {
        let command: [UInt8]
        let expected: RedisReply
    }

    private enum Entry {
        case handshake(expected: RedisReply)
        case command(Token, deadline: UInt64)
    }

    private struct Waiting {
        let token: Token
        let bytes: [UInt8]
        let deadline: UInt64
    }

    private(set) var state: State
    /// Consecutive failed connection attempts (0 once ready).
    private(set) var failedAttempts = 0
    /// Why the last connection attempt or connection failed (for logs and fail-fast details).
    private(set) var lastError = "not connected yet"

    private let handshake: [Handshake]
    private let commandTimeout: UInt64
    private let connectTimeout: UInt64
    private let maximumPending: Int
    private let backoff: ReconnectBackoff
    private var random: SplitMix

    private var inFlight = FIFO<Entry>()
    private var waiting = FIFO<Waiting>()
    private var pendingCommands = 0  // commands in `inFlight` (not handshake entries)

    /// - Parameters:
    ///   - handshake: commands sent first on every connection, each with the exact reply it must get.
    ///   - commandTimeout, connectTimeout: nanoseconds.
    ///   - maximumPending: commands waiting or in flight at most; more fail as `.overloaded`.
    ///   - seed: seeds the jitter generator.
    init(handshake: [(command: [UInt8], expected: RedisReply)], commandTimeout: UInt64, connectTimeout: UInt64,
         maximumPending: Int, backoff: ReconnectBackoff, seed: UInt64) {
        self.handshake = handshake.map { Handshake(command: $0.command, expected: $0.expected) }
        self.commandTimeout = commandTimeout
        self.connectTimeout = connectTimeout
        self.maximumPending = max(maximumPending, 1)
        self.backoff = backoff
        self.random = SplitMix(seed: seed)
        self.state = .backoff(until: 0)
    }

    /// Commands waiting or in flight.
    var pendingCount: Int { pendingCommands + waiting.count }

    /// The earliest time `tick` has something to do, if any.
    var nextDeadline: UInt64? {
        switch state {
        case .connecting(let deadline), .handshaking(let deadline):
            return [deadline, waiting.first?.deadline].compactMap { $0 }.min()
        case .ready:
            for entry in inFlight.elements { if case .command(_, let deadline) = entry { return deadline } }
            return nil
        case .backoff(let until): return until
        case .closed: return nil
        }
    }

    /// Starts the first connection attempt.
    mutating func start(now: UInt64) -> [Action] {
        guard case .backoff = state else { return [] }
        state = .connecting(deadline: now &+ connectTimeout)
        return [.connect]
    }

    /// The socket connected: send the handshake (or become ready when there is none).
    mutating func connected(now: UInt64) -> [Action] {
        guard case .connecting = state else { return [] }
        if handshake.isEmpty { return becomeReady() }
        state = .handshaking(deadline: now &+ connectTimeout)
        var bytes = [UInt8]()
        for step in handshake {
            bytes.append(contentsOf: step.command)
            inFlight.append(.handshake(expected: step.expected))
        }
        return [.write(bytes)]
    }

    /// The socket could not be opened.
    mutating func connectFailed(now: UInt64, detail: String) -> [Action] {
        guard case .connecting = state else { return [] }
        return reset(now: now, reason: .notConnected, detail: "connect: \(detail)", closeSocket: false)
    }

    /// One complete reply arrived.
    mutating func received(_ reply: RedisReply, now: UInt64) -> [Action] {
        switch state {
        case .handshaking, .ready: break
        default: return []
        }
        guard let entry = inFlight.popFirst() else {
            return reset(now: now, reason: .protocolError, detail: "reply without a pending command")
        }
        switch entry {
        case .command(let token, _):
            pendingCommands -= 1
            return [.deliver(token, reply)]
        case .handshake(let expected):
            guard reply == expected else {
                let detail: String
                if case .error(let message) = reply {
                    detail = "handshake refused: " + String(decoding: message, as: UTF8.self)
                } else {
                    detail = "handshake: unexpected reply \(reply) (expected \(expected))"
                }
                return reset(now: now, reason: .notConnected, detail: detail)
            }
            if inFlight.isEmpty { return becomeReady() }
            return []
        }
    }

    /// The socket failed (EOF, read/write error, unparsable bytes).
    mutating func connectionLost(now: UInt64, protocolError: Bool = false, detail: String) -> [Action] {
        switch state {
        case .connecting:
            return connectFailed(now: now, detail: detail)
        case .handshaking, .ready:
            return reset(now: now, reason: protocolError ? .protocolError : .connectionLost, detail: detail)
        case .backoff, .closed:
            return []
        }
    }

    /// A timer fired (or any moment): handles expired deadlines.
    mutating func tick(now: UInt64) -> [Action] {
        switch state {
        case .connecting(let deadline), .handshaking(let deadline):
            if now >= deadline {
                let phase = state == .connecting(deadline: deadline) ? "connect" : "handshake"
                return reset(now: now, reason: .notConnected, detail: "\(phase) timed out",
                             closeSocket: true)
            }
            var actions = [Action]()
            while let head = waiting.first, head.deadline <= now {
                _ = waiting.popFirst()
                actions.append(.fail(head.token, StoreUnavailable(.timeout, detail: "not connected within the command timeout")))
            }
            return actions
        case .ready:
            guard let deadline = nextDeadline, now >= deadline else { return [] }
            return reset(now: now, reason: .timeout, detail: "no reply within the command timeout")
        case .backoff(let until):
            guard now >= until else { return [] }
            state = .connecting(deadline: now &+ connectTimeout)
            return [.connect]
        case .closed:
            return []
        }
    }

    /// A command to send; `bytes` is its RESP encoding.
    mutating func submit(_ token: Token, bytes: [UInt8], now: UInt64) -> [Action] {
        switch state {
        case .closed:
            return [.fail(token, StoreUnavailable(.closed, detail: "store closed"))]
        case .backoff(let until) where until == 0 && failedAttempts == 0:
            // Never tried yet (just made; its `start` may still be queued): connect now and keep the
            // command, as while connecting. Failing it "not connected yet" made a Redis Cluster's first
            // map request fail on its new connections, and the store unavailable until the next
            // refresh 5 s later (probe).
            state = .connecting(deadline: now &+ connectTimeout)
            waiting.append(Waiting(token: token, bytes: bytes, deadline: now &+ commandTimeout))
            return [.connect]
        case .backoff:
            return [.fail(token, StoreUnavailable(.notConnected, detail: lastError))]
        case .connecting, .handshaking:
            guard pendingCount < maximumPending else {
                return [.fail(token, StoreUnavailable(.overloaded, detail: "\(pendingCount) commands pending"))]
            }
            waiting.append(Waiting(token: token, bytes: bytes, deadline: now &+ commandTimeout))
            return []
        case .ready:
            guard pendingCount < maximumPending else {
                return [.fail(token, StoreUnavailable(.overloaded, detail: "\(pendingCount) commands pending"))]
            }
            inFlight.append(.command(token, deadline: now &+ commandTimeout))
            pendingCommands += 1
            return [.write(bytes)]
        }
    }

    /// Closes for good: every pending command fails as `.closed`.
    mutating func close() -> [Action] {
        let hadSocket: Bool
        switch state {
        case .closed: return []
        case .backoff: hadSocket = false
        default: hadSocket = true
        }
        state = .closed
        var actions = failAll(StoreUnavailable(.closed, detail: "store closed"), waitingReason: StoreUnavailable(.closed, detail: "store closed"))
        if hadSocket { actions.append(.closeSocket) }
        return actions
    }

    // MARK: Internals

    private mutating func becomeReady() -> [Action] {
        state = .ready
        failedAttempts = 0
        lastError = ""
        var bytes = [UInt8]()
        while let next = waiting.popFirst() {
            bytes.append(contentsOf: next.bytes)
            inFlight.append(.command(next.token, deadline: next.deadline))
            pendingCommands += 1
        }
        return bytes.isEmpty ? [] : [.write(bytes)]
    }

    private mutating func reset(now: UInt64, reason: StoreUnavailable.Reason, detail: String,
                                closeSocket: Bool = true) -> [Action] {
        lastError = detail
        failedAttempts += 1
        let delay = backoff.delay(attempt: failedAttempts, unit: random.nextUnit())
        state = .backoff(until: now &+ delay)
        var actions = failAll(StoreUnavailable(reason, detail: detail),
                              waitingReason: StoreUnavailable(.notConnected, detail: detail))
        if closeSocket { actions.insert(.closeSocket, at: 0) }
        return actions
    }

    private mutating func failAll(_ inFlightReason: StoreUnavailable, waitingReason: StoreUnavailable) -> [Action] {
        var actions = [Action]()
        while let entry = inFlight.popFirst() {
            if case .command(let token, _) = entry { actions.append(.fail(token, inFlightReason)) }
        }
        pendingCommands = 0
        while let next = waiting.popFirst() { actions.append(.fail(next.token, waitingReason)) }
        return actions
    }
}

/// A first-in first-out queue over an array with a moving head (amortised O(1), compacts itself).
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { head < storage.count ? storage[head] : nil }
    /// The queued elements, oldest first.
    var elements: ArraySlice<Element> { storage[head...] }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}

/// SplitMix64: a tiny seeded generator for reconnect jitter (not for anything secret).
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    /// Uniform in 0..<1.
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}

extension RedisConnectionMachine.Action: Sendable where Token: Sendable {}
