import GatewayIO
@testable import GatewayHTTP

/// Drives an `HTTP1ConnectionMachine` the way `HTTP1ServerConnection` does, without sockets, handler
/// threads or a clock: a manual `now`, a fake socket that takes `socketRoom` bytes before blocking,
/// scripted head decisions and answers, and a log of every action performed. Like the connection it
/// keeps the handler's per-request context (`Context`) from the head decision to the report.
final class HTTP1MachineDriver<Context: Sendable> {
    typealias Machine = HTTP1ConnectionMachine

    static var date: String { "Date: Thu, 01 Jan 2026 00:00:00 GMT\r\n" }

    var machine: Machine
    /// Monotonic nanoseconds passed with every event.
    var now: UInt64 = 0
    /// Every action performed, in order.
    private(set) var log: [Machine.Action] = []
    /// Bytes the fake socket took.
    private(set) var wire: [UInt8] = []
    /// Bytes the socket still takes before a write would block.
    var socketRoom = Int.max
    /// Writes fail (connection reset).
    var writesFail = false

    /// The head decision (default: accept 1 MiB with the context given to `init`).
    var decide: (HTTPRequestHead) -> HTTPHeadDecision<Context>
    /// The answer given during `handle` (nil: answered later with `answer(_:)`). Default: 200 echoing
    /// the body, with `X-Target`.
    var respond: (HTTPRequest) -> HTTPAnswer? = { request in
        var headers = HTTPHeaders()
        try? headers.add(name: "X-Target", value: request.head.targetString)
        return .response(HTTPResponse(status: 200, headers: headers, body: request.body))
    }

    /// Called with each request as `takeRequest` handed it over, before the driver keeps a copy:
    /// what a handler that owns the request (`HTTPHandler.handle` is `consuming`) can do with it.
    var takeOver: ((inout HTTPRequest) -> Void)?

    private(set) var handled: [HTTPRequest] = []
    private(set) var records: [HTTPAccessRecord] = []
    /// The context reported with each record (nil: no head decided), in order.
    private(set) var contexts: [Context?] = []
    /// The contexts `handle` was called with, in order.
    private(set) var handledContexts: [Context] = []
    /// The context kept for the request in progress (as `HTTP1ServerConnection.requestContext`).
    private(set) var requestContext: Context?
    private(set) var upstreamRequests: [Machine.UpstreamRequest] = []
    /// The upstream failures handed to a forward's `upstreamFailureAnswer` (answer with `answer(_:)`).
    private(set) var upstreamFailuresAnswered: [HTTPError] = []

    // The socket's and the exchange's state as the actions left them.
    private(set) var readingPaused = false
    private(set) var readingStopped = false
    private(set) var writeArmed = false
    private(set) var halfClosed = false
    private(set) var closed = false
    private(set) var upstreamResumes = 0
    private(set) var upstreamCancelled = false

    init(context: Context, timeouts: HTTPServerTimeouts = HTTP1MachineDriver.timeouts, maxRequests: Int = 0,
         writeHighWatermark: Int = 256 * 1024, loopGroupID: ObjectIdentifier = ObjectIdentifier(HTTP1MachineDriver.self),
         start: Bool = true) {
        decide = { _ in .accept(bodyLimit: 1 << 20, context: context) }
        var configuration = HTTPServerConfiguration(listeners: [], timeouts: timeouts,
                                                    maxRequestsPerConnection: maxRequests,
                                                    writeHighWatermark: writeHighWatermark)
        configuration.limits = HTTP1ParserLimits()
        machine = Machine(settings: Machine.Settings(configuration),
                          connection: HTTPConnectionInfo(id: 1, remoteAddress: "10.0.0.1:1234", localAddress: "10.0.0.2:80"),
                          loopGroupID: loopGroupID, loopIndex: 0, dateLine: { Array(HTTP1MachineDriver.date.utf8) })
        if start { perform(machine.start(now: now)) }
    }

    /// header 1 s, body 2 s, idle 5 s, write 3 s, linger 0.5 s.
    static var timeouts: HTTPServerTimeouts { HTTPServerTimeouts(headerRead: 1, bodyRead: 2, idle: 5, write: 3, linger: 0.5) }
    static var second: UInt64 { 1_000_000_000 }
    static var ms: UInt64 { 1_000_000 }

    // MARK: events

    /// Bytes from the client, fed like the connection does (again with the rest after each stop).
    func receive(_ text: String) { receive(Array(text.utf8)) }

    func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { input in
            var offset = 0
            while true {
                let (consumed, actions) = machine.received(UnsafeRawBufferPointer(rebasing: input[offset...]), now: now)
                offset += consumed
                perform(actions)
                guard offset < input.count, consumed > 0 else { return }
            }
        }
    }

    func endOfFile() { perform(machine.endOfFile(now: now)) }

    /// The socket became writable with `room` more bytes accepted.
    func writable(room: Int = .max) {
        socketRoom = room
        let (result, written) = machine.writeOutput(using: socketWrite)
        perform(machine.flushed(result, written: written, now: now))
    }

    /// A later answer for request `sequence` (default: the current one); `context` replaces the
    /// request's when the machine takes the answer.
    func answer(_ answer: HTTPAnswer, context: Context? = nil, sequence: UInt64? = nil) {
        perform(answered(answer, context: context, sequence: sequence ?? machine.sequence))
    }

    private func answered(_ answer: HTTPAnswer, context: Context?, sequence: UInt64) -> Machine.Actions {
        if let context, machine.acceptsAnswer(for: sequence) { requestContext = context }
        return machine.answered(answer, sequence: sequence, now: now)
    }

    /// Moves the clock to `time` and ticks.
    func tick(at time: UInt64) {
        now = time
        perform(machine.tick(now: now))
    }

    func drain() { perform(machine.drain(now: now)) }

    func upstreamHead(_ head: HTTPResponseHead) { perform(machine.upstreamHead(head)) }

    /// Upstream body bytes; returns whether the exchange may read on.
    @discardableResult
    func upstreamBody(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { b in perform(machine.upstreamBody(b), direct: b) }
        return machine.upstreamMayContinue
    }

    func upstreamReadDone() { perform(machine.upstreamReadDone()) }
    func upstreamEnd() { perform(machine.upstreamEnd(now: now)) }
    func upstreamFailed(_ error: HTTPError) { perform(machine.upstreamFailed(error, now: now)) }

    // MARK: what came out

    /// The responses written so far (`headRequests`: indexes of responses to HEAD).
    func responses(headRequests: Set<Int> = []) -> [RawResponse] { RawResponse.parseAll(wire, headRequests: headRequests) }
    var wireText: String { String(decoding: wire, as: UTF8.self) }

    /// Forgets the log and what was written.
    func clear() {
        log = []
        wire = []
    }

    // MARK: performing actions

    private func socketWrite(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Socket.Failure> {
        if writesFail { return .failure(Socket.Failure(call: "write", errno: 104)) }
        let n = min(bytes.count, socketRoom)
        socketRoom -= n
        wire.append(contentsOf: bytes.prefix(n))
        return .success(n)
    }

    /// Performs `first` and the actions of every answer given at once, like the connection does.
    func perform(_ first: Machine.Actions, direct: UnsafeRawBufferPointer? = nil) {
        var actions = first
        while !actions.isEmpty {
            var next = Machine.Actions()
            for (index, action) in actions.enumerated() {
                precondition(!action.awaitsAnswer || index == actions.count - 1, "\(action) not last in \(actions)")
                precondition(!closed, "\(action) after close")
                log.append(action)
                switch action {
                case .decideHead:
                    let head = machine.requestHead!
                    let decision = decide(head)
                    requestContext = decision.context
                    next = machine.headDecided(Machine.HeadDecision(decision), now: now)
                case .handleRequest:
                    var request = machine.takeRequest()!
                    takeOver?(&request)
                    handled.append(request)
                    handledContexts.append(requestContext!)
                    if let answer = respond(request) {
                        next = answered(answer, context: nil, sequence: machine.sequence)
                    }
                case .renderError:
                    let error = machine.errorToRender!
                    var headers = HTTPHeaders()
                    try? headers.add(name: "X-Error", value: error.code)
                    next = machine.errorRendered(HTTPResponse(status: error.status, headers: headers, body: Array(error.code.utf8)),
                                                 now: now)
                case .flush:
                    let (result, written) = machine.writeOutput(using: socketWrite)
                    next = machine.flushed(result, written: written, now: now)
                case .writeDirect:
                    let (result, written) = machine.writeDirect(direct!, using: socketWrite)
                    next = machine.flushed(result, written: written, now: now)
                case .startForward:
                    upstreamRequests.append(machine.takeUpstreamRequest()!)
                case .answerUpstreamFailure:
                    upstreamFailuresAnswered.append(machine.takeUpstreamFailure()!.0)
                case .report:
                    records.append(machine.takeAccessRecord()!)
                    contexts.append(requestContext)
                    requestContext = nil
                case .armWrite: writeArmed = true
                case .disarmWrite: writeArmed = false
                case .pauseReading: readingPaused = true
                case .resumeReading: readingPaused = false
                case .stopReading: readingStopped = true
                case .resumeUpstream: upstreamResumes += 1
                case .cancelUpstream: upstreamCancelled = true
                case .shutdownWrite:
                    halfClosed = true
                    writeArmed = false
                case .close:
                    closed = true
                    requestContext = nil
                }
            }
            actions = next
        }
    }
}

extension HTTP1MachineDriver where Context == Void {
    /// A driver whose handler keeps no per-request context.
    convenience init(timeouts: HTTPServerTimeouts = HTTP1MachineDriver.timeouts, maxRequests: Int = 0,
                     writeHighWatermark: Int = 256 * 1024,
                     loopGroupID: ObjectIdentifier = ObjectIdentifier(HTTP1MachineDriver.self), start: Bool = true) {
        self.init(context: (), timeouts: timeouts, maxRequests: maxRequests, writeHighWatermark: writeHighWatermark,
                  loopGroupID: loopGroupID, start: start)
    }
}
