// The server side of one HTTP/1.1 connection as a value type: events in, actions out.

import GatewayIO
import GatewayRules

/// Every protocol rule and decision of one downstream HTTP/1.1 connection, as a value-type state
/// machine. `HTTP1ServerConnection` owns the socket, the handler calls and the upstream exchange and
/// performs the `Actions` each event returns. Nothing in here reads a clock, calls the handler or
/// touches a socket: monotonic time (`now`, nanoseconds) comes with the events, the wall-clock `Date`
/// line from the injected `dateLine`, bytes to send accumulate in `output`. So every rule, timeouts
/// included, is unit-tested without sockets and without sleeping (`HTTP1ConnectionMachineTests`).
/// Nor does it hold the handler's per-request context (`HTTPHandler.RequestContext`): the driver
/// keeps it, typed, from `decideHead` to `report` (one request is in progress at a time, and every
/// request whose head was decided is reported exactly once, before the next head is decided), and
/// lets an answer replace it only when `acceptsAnswer(for:)`. So the machine is not generic: its
/// code is the same, fully optimized, whatever the handler.
///
/// ## Driving it
/// Perform each event's actions in order. At most one action of a list asks for an answer, and it
/// is always the last one (`Action.awaitsAnswer`): `decideHead` → `headDecided`, `handleRequest` →
/// `answered` (now or later), `renderError` → `errorRendered`, `flush` / `writeDirect` → `flushed`,
/// `startForward` → the upstream events. A driver therefore runs a loop (answer, perform, answer...),
/// never a recursion, however long a pipeline. The head decision and the error rendering must be
/// answered at once, before any other event. Every event that can move a deadline takes `now`; the
/// upstream head, body and read-done events take none (they relay bytes; the time of a write they
/// ask for comes with its `flushed`).
///
/// `received(_:now:)` consumes a prefix of its input: it stops after a request head (the handler
/// decides on the head first) and after a complete request; call it again with the rest once the
/// actions are performed. The input is only copied when it cannot be parsed now: while a request is
/// being answered further pipelined bytes are kept in `pending` (bounded: reading pauses beyond
/// `Settings.pendingLimit`) and parsed after the response (RFC 9112 section 9.3.2, answers in order).
/// The HTTP/2 preface is recognised by the driver before the first bytes reach `received`
/// (`handedOver()` when the connection goes to HTTP/2).
///
/// ## Rules
/// - Persistence (RFC 9112 section 9.3): HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
///   `Connection: keep-alive`; never past `maxRequestsPerConnection`, nor once draining, nor when the
///   handler's response asks `Connection: close`, nor after an answer given at the head of a request
///   that announced a body (its body is never read).
/// - `Expect: 100-continue` (RFC 9110 section 10.1.1): `100 Continue` is sent once the head is
///   accepted, never when it is answered at once.
/// - The client's end of file before its answer started (handled or forwarded): 499, the upstream
///   exchange cancelled (nginx's `proxy_ignore_client_abort off`); once the answer is being written
///   it goes on until the socket refuses it. Pipelined requests kept meanwhile are given up once that
///   answer is written: 499 at the head decision when complete, closed when incomplete.
/// - Reports (`report`): a finished request once the last byte of its answer was written (as nginx
///   logs after the last byte; the record's latency runs to that write), and no later request starts
///   before; `aborted` (with `clientStalled` or `drainDeadline` when the server cut it) when the
///   connection ends first, or when the request itself was cut.
/// - Errors (parser, limits, timeouts) are answered through the handler's renderer (`renderError`)
///   and close the connection; an upstream failure before the response head is answered the same
///   way and keeps the connection; after the head it closes it (the only way to signal truncation).
/// - Proxied responses: framing as `DownstreamBody` (HEAD and 304 keep the upstream's length, 204 has
///   none, unknown lengths re-chunked for HTTP/1.1 and delimited by close for HTTP/1.0); body bytes of
///   one upstream read are coalesced up to `coalesceLimit`; the upstream is paused while `output`
///   holds `writeHighWatermark` bytes or more (`upstreamMayContinue`) and resumed once it drained.
/// - Closing with input possibly unread (an error, an early answer, pipelined bytes left): half-close,
///   then read and discard for up to `lingerTimeout` (and at most 1 MiB) before closing, so the
///   response is not destroyed by a TCP reset (RFC 9112 section 9.6).
/// - Deadlines, checked by `tick(now:)`: silent close of a connection idle between requests
///   (`idleTimeout`, and `headerTimeout` before its first byte); 408 `header_timeout` when a head is
///   not complete `headerTimeout` after its first byte; 408 `body_timeout` when the whole body is not
///   in `bodyTimeout` after the end of the head (however it trickles in); close when a blocked write
///   made no progress for `writeTimeout`; close when lingering lasted `lingerTimeout`.
struct HTTP1ConnectionMachine {
    /// The fixed settings of a server's connections, in bytes and nanoseconds (0 disables a timeout).
    struct Settings: Sendable {
        /// Parser limits for request heads, chunk lines and trailers.
        var limits: HTTP1ParserLimits
        /// Normal-form rules for request-targets.
        var targetPolicy: RequestTargetPolicy
        /// Requests served on one connection before it is closed (0 = unlimited).
        var maxRequestsPerConnection: Int
        /// Queued response bytes from which the upstream is paused and pipelined requests wait.
        var writeHighWatermark: Int
        /// Pipelined bytes kept while a request is answered, beyond which reading pauses.
        var pendingLimit: Int
        /// From a request's first byte to the end of its head; also a fresh connection's silence.
        var headerTimeout: UInt64
        /// From the end of a request head to the end of its body.
        var bodyTimeout: UInt64
        /// Between requests on a kept-alive connection.
        var idleTimeout: UInt64
        /// A blocked write without progress.
        var writeTimeout: UInt64
        /// Draining unread input after the last response before closing.
        var lingerTimeout: UInt64

        /// Seconds as nanoseconds, capped at 1e9 s; 0 or less is 0 (no timeout).
        static func nanoseconds(_ seconds: Double) -> UInt64 { seconds <= 0 ? 0 : UInt64(min(seconds, 1e9) * 1e9) }

        /// The settings of `configuration` (timeouts converted from seconds, capped at 1e9 s).
        init(_ configuration: HTTPServerConfiguration) {
            let ns = Settings.nanoseconds
            limits = configuration.limits
            targetPolicy = configuration.targetPolicy
            maxRequestsPerConnection = configuration.maxRequestsPerConnection
            writeHighWatermark = configuration.writeHighWatermark
            pendingLimit = configuration.limits.clamped.maxHeaderBytes + 65536
            headerTimeout = ns(configuration.timeouts.headerRead)
            bodyTimeout = ns(configuration.timeouts.bodyRead)
            idleTimeout = ns(configuration.timeouts.idle)
            writeTimeout = ns(configuration.timeouts.write)
            lingerTimeout = ns(configuration.timeouts.linger)
        }
    }

    /// What the driver must do. The payloads stay in the machine and are taken with the matching
    /// accessor, so an action is one byte and an action list never allocates.
    enum Action: UInt8, Sendable, CustomStringConvertible {
        /// Ask the handler for the decision on `requestHead`; answer with `headDecided` at once (the
        /// driver keeps the decision's context until the request's `report`).
        case decideHead
        /// Hand `takeRequest()` to the handler with a responder for `sequence`; its answer comes as
        /// `answered` (during the call or later).
        case handleRequest
        /// Render `errorToRender` with the handler's error renderer (for `requestHead`, maybe nil);
        /// answer with `errorRendered` at once.
        case renderError
        /// Write `output` (`writeOutput(using:)`), then report with `flushed`.
        case flush
        /// Write the upstream body bytes of the current `upstreamBody` event straight to the socket,
        /// queueing what it does not take (`writeDirect(_:using:)`), then report with `flushed`.
        case writeDirect
        /// Start an upstream exchange for `takeUpstreamRequest()`; its events follow.
        case startForward
        /// Give `takeAccessRecord()` to the handler's access-log hook (with the context the driver kept
        /// since `decideHead`; none when no head was decided since the last report).
        case report
        /// Deliver writability (a write would block).
        case armWrite
        /// Stop delivering writability.
        case disarmWrite
        /// Stop delivering readability for now (pipelined input over its bound).
        case pauseReading
        /// Deliver readability again after `pauseReading`.
        case resumeReading
        /// Stop reading for good (end of file).
        case stopReading
        /// The output drained: let the paused upstream exchange read again.
        case resumeUpstream
        /// Drop the upstream exchange in progress (closes its connection).
        case cancelUpstream
        /// The exchange failed before the response head and the forward asked to answer such failures
        /// itself (`HTTPForward.upstreamFailureAnswer`): call it with `takeUpstreamFailure()` and a
        /// responder for `sequence`; its answer comes as `answered` (during the call or later).
        case answerUpstreamFailure
        /// Half-close: send FIN, keep reading (lingering close).
        case shutdownWrite
        /// Close the socket and forget the connection. Nothing follows.
        case close

        /// Whether the machine waits for the answer to this action (it is then the list's last).
        var awaitsAnswer: Bool {
            switch self {
            case .decideHead, .handleRequest, .renderError, .flush, .writeDirect, .startForward, .answerUpstreamFailure:
                return true
            default: return false
            }
        }

        /// The case name, for test failure messages.
        var description: String {
            switch self {
            case .decideHead: return "decideHead"
            case .handleRequest: return "handleRequest"
            case .renderError: return "renderError"
            case .flush: return "flush"
            case .writeDirect: return "writeDirect"
            case .startForward: return "startForward"
            case .report: return "report"
            case .armWrite: return "armWrite"
            case .disarmWrite: return "disarmWrite"
            case .pauseReading: return "pauseReading"
            case .resumeReading: return "resumeReading"
            case .stopReading: return "stopReading"
            case .resumeUpstream: return "resumeUpstream"
            case .cancelUpstream: return "cancelUpstream"
            case .answerUpstreamFailure: return "answerUpstreamFailure"
            case .shutdownWrite: return "shutdownWrite"
            case .close: return "close"
            }
        }
    }

    /// The actions of one event, in order: up to 16 one-byte actions packed in two words (no
    /// allocation, trivially copied).
    struct Actions: Sequence, Equatable, Sendable, ExpressibleByArrayLiteral, CustomStringConvertible {
        private var low: UInt64 = 0
        private var high: UInt64 = 0
        /// Number of actions.
        private(set) var count = 0
        /// Most actions one list holds (one event produces at most 6).
        static let capacity = 16

        /// No action.
        init() {}

        /// The actions listed (tests).
        init(arrayLiteral elements: Action...) {
            for a in elements { append(a) }
        }

        /// Whether there is no action.
        var isEmpty: Bool { count == 0 }

        /// Adds `action` at the end; nothing may follow an action that awaits an answer.
        mutating func append(_ action: Action) {
            precondition(count < Actions.capacity, "HTTP1ConnectionMachine.Actions overflow")
            assert(count == 0 || !self[count - 1].awaitsAnswer, "\(action) after \(self[count - 1])")
            let shift = UInt64((count & 7) * 8)
            if count < 8 { low |= UInt64(action.rawValue) << shift } else { high |= UInt64(action.rawValue) << shift }
            count += 1
        }

        /// Adds every action of `other`, in order.
        mutating func append(contentsOf other: Actions) {
            for a in other { append(a) }
        }

        /// The action at `index` (0 ..< count).
        subscript(index: Int) -> Action {
            let word = index < 8 ? low : high
            // Every stored byte is a raw value written by `append`.
            return Action(rawValue: UInt8(truncatingIfNeeded: word >> UInt64((index & 7) * 8)))!
        }

        /// Whether `action` is in the list.
        func contains(_ action: Action) -> Bool {
            for a in self where a == action { return true }
            return false
        }

        /// Iterates in order.
        struct Iterator: IteratorProtocol {
            fileprivate let actions: Actions
            fileprivate var index = 0
            /// The next action, or nil.
            mutating func next() -> Action? {
                guard index < actions.count else { return nil }
                defer { index += 1 }
                return actions[index]
            }
        }

        /// An iterator over the actions.
        func makeIterator() -> Iterator { Iterator(actions: self) }

        /// `[a, b, ...]`.
        var description: String { "[" + map(\.description).joined(separator: ", ") + "]" }
    }

    /// Where the connection is.
    enum Phase: Sendable, Equatable {
        /// Between requests (or before the first): nothing of a request received yet.
        case idle
        /// Reading a request head.
        case head
        /// A head is complete; waiting for `headDecided`.
        case decision
        /// Reading the request body (or completing a bodyless request).
        case body
        /// The whole request is with the handler (or its error is being rendered).
        case handling
        /// The request is proxied; relaying the upstream response.
        case forwarding
        /// Writing the last response before closing.
        case closing
        /// Half-closed, discarding input before closing (RFC 9112 section 9.6).
        case lingering
        /// Closed; every later event is ignored.
        case closed
    }

    private enum Deadline { case none, silentClose, header, body, linger }

    /// What to do once the result of a `flush` / `writeDirect` is in, besides the write bookkeeping.
    private enum AfterFlush { case nothing, continueAfterResponse, resumeParsing, abort }

    /// A handler's head decision as the machine needs it (the context stays with the driver).
    enum HeadDecision: Sendable {
        /// Read the body, at most `bodyLimit` decoded bytes.
        case accept(bodyLimit: Int)
        /// Answer now without reading the body.
        case respond(HTTPResponse)

        /// `decision` without its context.
        init<Context>(_ decision: HTTPHeadDecision<Context>) {
            switch decision {
            case .accept(let limit, _): self = .accept(bodyLimit: limit)
            case .respond(let response, _): self = .respond(response)
            }
        }
    }

    /// The upstream request a `startForward` asks to send.
    struct UpstreamRequest {
        /// This loop's part of the upstream pool.
        let pool: UpstreamLoopPool
        /// The request method (the exchange needs it to parse the response, RFC 9112 section 6.3).
        let method: HTTPMethod
        /// The serialized request: head and body.
        let bytes: [UInt8]
        /// The forward's connect and response timeouts in seconds (nil: the upstream's).
        var connectTimeout: Double? = nil
        var responseTimeout: Double? = nil
    }

    /// The request in progress and what its response did so far.
    private struct InProgress {
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var requestBodyBytes = 0
        var earlyResponse: HTTPResponse?
        var start: UInt64 = 0
        var upstreamName: String?
        var upstreamActive = false
        var responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?
        var responseField: (name: String, value: String)?
        var upstreamFailureAnswer: HTTPForward.UpstreamFailureAnswer?
        /// The upstream failure being answered by `upstreamFailureAnswer` (kept for the access record).
        var upstreamError: HTTPError?
        var proxiedBody = DownstreamBody.none(passLength: false)
        var responseStarted = false
        var responseStatus = 0
        var responseBodyBytes = 0
    }

    /// Response body bytes queued while relaying one upstream read are written together up to this size.
    static let coalesceLimit = 64 * 1024
    /// Input discarded while lingering before the connection is closed at once.
    static let lingerLimit = 1 << 20

    /// The fixed settings.
    let settings: Settings
    /// The connection, for requests and access records.
    let connection: HTTPConnectionInfo
    private let loopGroupID: ObjectIdentifier
    private let loopIndex: Int
    private let dateLine: () -> [UInt8]

    /// Where the connection is.
    private(set) var phase = Phase.idle
    /// Response bytes not yet written (the driver writes them on `flush`).
    private(set) var output = OutputBuffer()
    /// Pipelined input kept while it cannot be parsed.
    private(set) var pending: [UInt8] = []
    /// Reading is paused because `pending` outgrew `Settings.pendingLimit` (`stash`); it resumes as
    /// soon as parsing has taken `pending` below it again (`resumeParsing`, `continueAfterResponse`).
    private var pausedForPending = false
    /// Number of the current request on this connection (from 1), as given to its responder.
    private(set) var sequence: UInt64 = 0
    /// Requests finished (answered or aborted) on this connection.
    private(set) var requestsDone = 0
    /// Whether write interest is armed (a write would block), as asked with `armWrite`.
    private(set) var writeArmed = false

    private var parser: HTTP1RequestParser
    private var current = InProgress()
    private var keepAlive = true
    private var draining = false
    private var peerClosed = false
    private var awaitingDrain = false
    private var lingerOnClose = false
    private var lingerBytes = 0
    private var deadline: UInt64 = 0
    private var deadlineKind = Deadline.none
    private var lastWriteProgress: UInt64 = 0
    private var afterFlush = AfterFlush.nothing
    /// The finished request's access record waits for the last byte of its response to be written
    /// (`drained`), as nginx logs after the last byte: a client that stops reading, or a connection
    /// that breaks, before then is reported `aborted`. No next request starts meanwhile (`awaitingDrain`).
    private var reportOnDrain = false
    /// When the request whose record waits began (its latency runs to the last byte written).
    private var reportStart: UInt64 = 0

    // Hand-overs to the driver, taken by the accessors below.
    private var requestToHandle: HTTPRequest?
    private var accessRecord: HTTPAccessRecord?
    private var upstreamRequest: UpstreamRequest?
    private var upstreamFailure: (HTTPError, HTTPForward.UpstreamFailureAnswer)?
    /// The error a `renderError` asks to render.
    private(set) var errorToRender: HTTPError?

    /// A connection on the loop `loopIndex` of the group `loopGroupID` (a forward must name an
    /// upstream pool of that group). `dateLine` gives the `Date: <IMF-fixdate>\r\n` bytes added to
    /// responses without a `Date` (RFC 9110 section 6.6.1): the loop's per-second cache in production.
    init(settings: Settings, connection: HTTPConnectionInfo, loopGroupID: ObjectIdentifier, loopIndex: Int,
         dateLine: @escaping () -> [UInt8]) {
        self.settings = settings
        self.connection = connection
        self.loopGroupID = loopGroupID
        self.loopIndex = loopIndex
        self.dateLine = dateLine
        parser = HTTP1RequestParser(limits: settings.limits, targetPolicy: settings.targetPolicy)
    }

    // MARK: state for the driver and tests

    /// Whether the connection is closed.
    var isClosed: Bool { phase == .closed }
    /// The head of the request in progress (for `decideHead` and `renderError`); from `handleRequest`
    /// on without its fields, which went with the request.
    var requestHead: HTTPRequestHead? { current.head }
    /// Whether the upstream exchange may go on reading after an `upstreamBody` event (its actions
    /// performed): false pauses it until `resumeUpstream` (backpressure). A `mutating get` although it
    /// changes nothing: read in place, where a plain getter made the compiler copy the whole machine
    /// out of the driver (to call `OutputBuffer.count` of another module on it), once per upstream read.
    var upstreamMayContinue: Bool {
        mutating get { phase == .forwarding && output.count < settings.writeHighWatermark }
    }
    /// The time `tick` acts next, or nil (the write timeout aside).
    var nextDeadline: UInt64? { deadlineKind == .none ? nil : deadline }

    /// The request a `handleRequest` hands over (once).
    mutating func takeRequest() -> HTTPRequest? {
        requestToHandle.take()  // moved out, not copied
    }

    /// The access record a `report` hands over (once).
    mutating func takeAccessRecord() -> HTTPAccessRecord? {
        accessRecord.take()  // moved out, not copied
    }

    /// The upstream request a `startForward` hands over (once).
    mutating func takeUpstreamRequest() -> UpstreamRequest? {
        upstreamRequest.take()  // moved out, not copied
    }

    /// The failure and the forward's answerer an `answerUpstreamFailure` hands over (once).
    mutating func takeUpstreamFailure() -> (HTTPError, HTTPForward.UpstreamFailureAnswer)? {
        upstreamFailure.take()  // moved out, not copied
    }

    /// Writes `output` with `write` (the socket's write: bytes taken, 0 when it would block) for a
    /// `flush`; report the result with `flushed`.
    mutating func writeOutput(using write: (UnsafeRawBufferPointer) -> Result<Int, Socket.Failure>)
        -> (result: OutputBuffer.Flush, written: Int) {
        output.flush(using: write)
    }

    /// For a `writeDirect`: writes `bytes` (the current upstream body bytes) with `write` when
    /// nothing is queued, queueing what it does not take; report the result with `flushed`.
    mutating func writeDirect(_ bytes: UnsafeRawBufferPointer,
                              using write: (UnsafeRawBufferPointer) -> Result<Int, Socket.Failure>)
        -> (result: OutputBuffer.Flush, written: Int) {
        output.writeOrQueue(bytes, using: write)
    }

    // MARK: events: the downstream socket

    /// The connection was accepted: the first request's head must start within `headerTimeout`.
    mutating func start(now: UInt64) -> Actions {
        setDeadline(.silentClose, settings.headerTimeout, now: now)
        return Actions()
    }

    /// Bytes arrived. Consumes a prefix of `bytes` (all of them unless it stopped at a head or at
    /// the end of a request: then pass the rest once the actions are performed). Never 0 of a
    /// non-empty input.
    mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> (consumed: Int, actions: Actions) {
        var actions = Actions()
        switch phase {
        case .closed, .closing:
            break
        case .lingering:
            lingerBytes += bytes.count
            if lingerBytes > HTTP1ConnectionMachine.lingerLimit { close(&actions) }
        case .idle where !awaitingDrain && pending.isEmpty && errorToRender == nil,
             .head where pending.isEmpty && errorToRender == nil,
             .body where pending.isEmpty && errorToRender == nil:
            let consumed = parse(bytes, now: now, &actions)
            if consumed > 0 || bytes.isEmpty { return (consumed, actions) }
            stash(bytes, &actions)  // never happens: a parse consumes at least a byte
        case .idle, .head, .decision, .body, .handling, .forwarding:
            stash(bytes, &actions)
        }
        return (bytes.count, actions)
    }

    /// The client closed its side (end of file).
    mutating func endOfFile(now: UInt64) -> Actions {
        var actions = Actions()
        guard phase != .closed else { return actions }
        peerClosed = true
        actions.append(.stopReading)
        switch phase {
        case .idle:
            if pending.isEmpty && !awaitingDrain { closeAfterFlush(now: now, &actions) }
        case .head, .decision, .body:
            abort(now: now, &actions)  // the client gave up on an incomplete request
        case .lingering:
            close(&actions)
        case .handling, .forwarding:
            guard !current.responseStarted else { break }  // being written: goes on until the socket refuses it
            // The client went away before its answer started: 499, and the upstream exchange stops
            // (nginx's default, `proxy_ignore_client_abort off`; Envoy resets the stream). Waiting
            // for the upstream held both sockets until `response_timeout` for nobody (probe: 200
            // aborted curls held 400 descriptors for 30 s). An end of file cannot tell a half-close
            // from a close, and HTTP/1.1 clients do not half-close to wait for an answer.
            abort(now: now, &actions)
        case .closing, .closed:
            break  // the answer is being written: it goes on until the socket refuses it
        }
        return actions
    }

    /// Reading failed (reset): close at once.
    mutating func readFailed(now: UInt64) -> Actions {
        var actions = Actions()
        abort(now: now, &actions)
        return actions
    }

    /// The result of the write a `flush` or `writeDirect` asked for (also of a write the driver made
    /// on writability): `written` bytes went out.
    mutating func flushed(_ result: OutputBuffer.Flush, written: Int, now: UInt64) -> Actions {
        var actions = Actions()
        let next = afterFlush
        afterFlush = .nothing
        guard phase != .closed else { return actions }
        if next == .abort {
            abort(now: now, &actions)  // a truncated proxied response: closing is the only signal
            return actions
        }
        if written > 0 { lastWriteProgress = now }
        switch result {
        case .done:
            if writeArmed {
                writeArmed = false
                actions.append(.disarmWrite)
            }
            drained(now: now, &actions)
        case .wouldBlock:
            if !writeArmed {
                if written == 0 { lastWriteProgress = now }
                writeArmed = true
                actions.append(.armWrite)
            }
        case .failed:
            abort(now: now, &actions)
            return actions
        }
        guard !actions.contains(where: \.awaitsAnswer), phase != .closed else { return actions }
        switch next {
        case .continueAfterResponse:
            if phase == .idle && (output.count > settings.writeHighWatermark || reportOnDrain) {
                // Answer the next request once the client caught up (and the last one is reported).
                awaitingDrain = true
                deadlineKind = .none
            }
            continueAfterResponse(now: now, &actions)
        case .resumeParsing:
            if phase == .head || phase == .body { resumeParsing(now: now, &actions) }
        case .nothing, .abort:
            break
        }
        return actions
    }

    // MARK: events: the handler

    /// The handler's decision on `requestHead` (after `decideHead`).
    mutating func headDecided(_ decision: HeadDecision, now: UInt64) -> Actions {
        var actions = Actions()
        // The head's scalars only: binding the whole head copied it (three buffers retained and
        // released) while `current` changes below.
        guard phase == .decision, let framing = current.head?.framing, let headKeepAlive = current.head?.keepAlive,
              let expectsContinue = current.head?.expectsContinue else { return actions }
        if peerClosed {
            // A kept pipelined request parsed after the client ended its side (its end of file came
            // while the previous answer was being written): 499 before its answer started, as
            // `endOfFile` decides for a request in progress; its head was decided, so it is reported.
            abort(now: now, &actions)
            return actions
        }
        let contentLength = current.head?.contentLength
        let maxRequests = settings.maxRequestsPerConnection
        keepAlive = headKeepAlive && !draining && (maxRequests <= 0 || requestsDone + 1 < maxRequests)
        phase = .body
        switch decision {
        case .respond(let response):
            if framing.hasBody {
                keepAlive = false  // the body is not read: nothing after it could be parsed
                lingerOnClose = true
                sendResponse(response, error: nil, now: now, &actions)
                return actions
            }
            current.earlyResponse = response  // sent when the (empty) request completes, in order
        case .accept(let limit):
            if let length = contentLength, length > limit {
                failRequest(.bodyTooLarge, now: now, &actions)
                return actions
            }
            parser.setBodyLimit(limit)
            if framing.hasBody {
                setDeadline(.body, settings.bodyTimeout, now: now)  // for the whole body
                if let length = contentLength { current.body.reserveCapacity(min(length, 1 << 20)) }
                if expectsContinue {
                    output.append("HTTP/1.1 100 Continue\r\n\r\n")
                    afterFlush = .resumeParsing
                    actions.append(.flush)
                    return actions
                }
            }
        }
        resumeParsing(now: now, &actions)
        return actions
    }

    /// Whether an answer for request `sequence` would be taken now by `answered` (it is the request
    /// being handled and nothing else is awaited); a stale answer is not (the driver then keeps the
    /// context it holds).
    func acceptsAnswer(for sequence: UInt64) -> Bool {
        sequence == self.sequence && phase == .handling && errorToRender == nil && requestToHandle == nil
    }

    /// The handler's answer for request `sequence` (ignored unless `acceptsAnswer(for:)`).
    mutating func answered(_ answer: consuming HTTPAnswer, sequence: UInt64, now: UInt64) -> Actions {
        var actions = Actions()
        guard acceptsAnswer(for: sequence) else { return actions }
        switch consume answer {  // moved into the case's value, not copied out of it
        case .response(let response): sendResponse(response, error: nil, now: now, &actions)
        case .error(let error): renderError(error, &actions)
        case .forward(let forward): startForward(forward, &actions)
        }
        return actions
    }

    /// The handler's rendering of `errorToRender` (after `renderError`).
    mutating func errorRendered(_ response: HTTPResponse, now: UInt64) -> Actions {
        var actions = Actions()
        guard let error = errorToRender, phase != .closed else { return actions }
        errorToRender = nil
        sendResponse(response, error: error, now: now, &actions)
        return actions
    }

    // MARK: events: the upstream exchange

    /// The upstream response head arrived: queued with our framing (not written: the body bytes of
    /// the same upstream read join it).
    mutating func upstreamHead(_ upstreamHead: consuming HTTPResponseHead) -> Actions {
        guard phase == .forwarding else { return Actions() }
        var h = upstreamHead
        current.responseHeadFilter?(&h)
        let field = current.responseField  // set while serializing (no copy of the upstream head)
        let http10 = current.head?.version.minor == 0
        let mode: DownstreamBody
        if current.head?.method == .head || h.status == 304 {
            mode = .none(passLength: true)
        } else if h.status == 204 {
            mode = .none(passLength: false)
        } else {
            switch h.framing {
            case .none: mode = .length(0)
            case .contentLength(let n): mode = .length(n)
            case .chunked, .untilClose: mode = http10 ? .untilClose : .chunked
            }
        }
        if mode == .untilClose { keepAlive = false }
        current.proxiedBody = mode
        current.responseStarted = true
        current.responseStatus = h.status
        let keep = keepAlive
        let head = h  // a constant for the closure (a captured variable is copied to be passed)
        output.withBytes {
            HTTP1Serializer.appendProxiedHead(head, body: mode, keepAlive: keep, clientIsHTTP10: http10, replacing: field, into: &$0)
        }
        return Actions()
    }

    /// Decoded upstream body bytes (valid during the call and its actions). Afterwards
    /// `upstreamMayContinue` tells whether the exchange may read on.
    mutating func upstreamBody(_ bytes: UnsafeRawBufferPointer) -> Actions {
        var actions = Actions()
        guard phase == .forwarding, !bytes.isEmpty else { return actions }
        current.responseBodyBytes += bytes.count
        switch current.proxiedBody {
        case .chunked:
            output.withBytes { HTTP1Serializer.appendChunkHeader(bytes.count, into: &$0) }
            output.append(bytes)
            output.append("\r\n")
            if output.count >= HTTP1ConnectionMachine.coalesceLimit { actions.append(.flush) }
        case .length, .untilClose:
            if output.isEmpty && bytes.count >= HTTP1ConnectionMachine.coalesceLimit {
                actions.append(.writeDirect)  // large: written without a copy when the socket takes it
            } else {
                output.append(bytes)
                if output.count >= HTTP1ConnectionMachine.coalesceLimit { actions.append(.flush) }
            }
        case .none:
            break
        }
        return actions
    }

    /// Every event of one upstream read was delivered: write what was queued.
    mutating func upstreamReadDone() -> Actions {
        var actions = Actions()
        if phase == .forwarding && !output.isEmpty { actions.append(.flush) }
        return actions
    }

    /// The upstream response is complete.
    mutating func upstreamEnd(now: UInt64) -> Actions {
        var actions = Actions()
        guard phase == .forwarding else { return actions }
        current.upstreamActive = false
        if current.proxiedBody == .chunked { output.append("0\r\n\r\n") }
        finishRequest(error: nil, aborted: false, now: now, &actions)
        return actions
    }

    /// The exchange failed: answered with the rendered `error` before the response head, else the
    /// connection is closed once what was relayed is written.
    mutating func upstreamFailed(_ error: HTTPError, now: UInt64) -> Actions {
        var actions = Actions()
        guard phase == .forwarding else { return actions }
        current.upstreamActive = false
        if current.responseStarted {
            afterFlush = .abort  // what was relayed so far (the head at least), then close
            actions.append(.flush)
        } else if let answer = current.upstreamFailureAnswer {
            phase = .handling  // the forward's answerer responds like a handler, through `answered`
            current.upstreamError = error
            upstreamFailure = (error, answer)
            actions.append(.answerUpstreamFailure)
        } else {
            renderError(error, &actions)
        }
        return actions
    }

    // MARK: events: the server and time

    /// The connection went to another protocol (the HTTP/2 preface, RFC 9113 section 3.3) before any
    /// byte reached this machine: it stops without closing anything (the new owner has the socket).
    mutating func handedOver() {
        phase = .closed
        deadlineKind = .none
        writeArmed = false
    }

    /// Graceful shutdown: close when idle between requests, else answer the request in progress (or,
    /// on a connection that has not sent its first request yet, that request: the client is on its
    /// way, as during a handover) with `Connection: close`.
    mutating func drain(now: UInt64) -> Actions {
        var actions = Actions()
        draining = true
        switch phase {
        case .idle:
            if pending.isEmpty && !awaitingDrain && requestsDone > 0 { closeAfterFlush(now: now, &actions) } else { keepAlive = false }
        case .head, .decision, .body, .handling, .forwarding:
            keepAlive = false
        case .closing, .lingering, .closed:
            break
        }
        return actions
    }

    /// Shutdown deadline passed: close now (the request in progress is reported aborted, with
    /// `HTTPError.drainDeadline`: cut by the server).
    mutating func forceClose(now: UInt64) -> Actions {
        var actions = Actions()
        abort(now: now, error: .drainDeadline, &actions)
        return actions
    }

    /// A connection accepted while the server drains (the listeners stay open briefly for a
    /// handover, `HTTPServerConfiguration.handoverSettle`): its first request is served and answered
    /// with `Connection: close`, instead of closing it while idle as `drain` does.
    mutating func acceptedWhileDraining() {
        draining = true
    }

    /// Time passed: applies the deadline due at `now`, if any.
    mutating func tick(now: UInt64) -> Actions {
        var actions = Actions()
        guard phase != .closed else { return actions }
        if writeArmed && settings.writeTimeout > 0 && now &- lastWriteProgress > settings.writeTimeout {
            abort(now: now, error: .clientStalled, &actions)  // the client stopped reading
            return actions
        }
        guard deadlineKind != .none, now >= deadline else { return actions }
        switch deadlineKind {
        case .silentClose:
            // Never cut a response still being written: the write timeout governs a slow reader.
            if phase == .idle && output.isEmpty && pending.isEmpty {
                close(&actions)
            } else {
                setDeadline(.silentClose, settings.idleTimeout, now: now)
            }
        case .header:
            if phase == .head { failRequest(.headerTimeout, now: now, &actions) }
        case .body:
            if phase == .body { failRequest(.bodyTimeout, now: now, &actions) }
        case .linger:
            close(&actions)
        case .none:
            break
        }
        return actions
    }

    // MARK: parsing

    private mutating func setDeadline(_ kind: Deadline, _ duration: UInt64, now: UInt64) {
        deadlineKind = duration == 0 ? .none : kind
        deadline = now &+ duration
    }

    private mutating func stash(_ bytes: UnsafeRawBufferPointer, _ actions: inout Actions) {
        pending.append(contentsOf: bytes)
        if pending.count > settings.pendingLimit {
            pausedForPending = true
            actions.append(.pauseReading)
        }
    }

    /// Parses `input` until the input is used up or the machine must wait (head decision, handler
    /// answer, error rendering, write); returns the bytes consumed (all of them after an error).
    private mutating func parse(_ input: UnsafeRawBufferPointer, now: UInt64, _ actions: inout Actions) -> Int {
        var offset = 0
        while true {
            if phase == .idle {
                if offset >= input.count || awaitingDrain { return offset }
                beginRequest(now: now)
            }
            guard phase == .head || phase == .body else { return offset }
            let step = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let base = offset
            offset += step.consumed
            switch step.event {
            case .needMoreData:
                return offset
            case .head(let h):
                sequence &+= 1
                current.head = h
                phase = .decision
                actions.append(.decideHead)
                return offset
            case .body(let r):
                current.body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[(base + r.lowerBound)..<(base + r.upperBound)]))
            case .end(let trailers):
                requestReceived(trailers, now: now, &actions)
                return offset
            case .error(let e):
                failRequest(e, now: now, &actions)
                return input.count  // the rest is never parsed
            }
        }
    }

    /// Goes on parsing after a wait: the kept pipelined bytes when there are any, else no input (which
    /// completes a request without body).
    private mutating func resumeParsing(now: UInt64, _ actions: inout Actions) {
        guard !pending.isEmpty else {
            _ = parse(UnsafeRawBufferPointer(start: nil, count: 0), now: now, &actions)
            return
        }
        var data = pending
        pending = []
        var parsed = Actions()
        let consumed = data.withUnsafeBytes { parse($0, now: now, &parsed) }
        switch phase {
        case .closing, .lingering, .closed:
            break  // never parsed
        default:
            if consumed < data.count {
                data.removeSubrange(0..<consumed)  // keeps the storage
                pending = data
            }
            // The stash paused reading; parsing took it below the limit (the rest of a pipelined
            // request's body is still in the socket): read on, or that body never completes.
            // Listed first: the parse's last action may await an answer.
            if pausedForPending && !peerClosed && pending.count <= settings.pendingLimit {
                pausedForPending = false
                actions.append(.resumeReading)
            }
        }
        actions.append(contentsOf: parsed)
        // The client ended its side while these bytes waited (an end of file while the previous
        // answer was still being written): a request they leave incomplete can never complete, so
        // it is given up as `endOfFile` gives up one in progress, rather than left to its timeout.
        if peerClosed && (phase == .head || phase == .body) && !parsed.contains(where: \.awaitsAnswer) {
            abort(now: now, &actions)
        }
    }

    private mutating func beginRequest(now: UInt64) {
        phase = .head
        current.start = now
        setDeadline(.header, settings.headerTimeout, now: now)
    }

    private mutating func requestReceived(_ trailers: HTTPHeaders, now: UInt64, _ actions: inout Actions) {
        guard let h = current.head else { return }
        phase = .handling
        deadlineKind = .none
        current.requestBodyBytes = current.body.count
        if let response = current.earlyResponse {
            current.earlyResponse = nil
            sendResponse(response, error: nil, now: now, &actions)
            return
        }
        // The request takes the fields over: the machine keeps method, target and version (framing,
        // the access record), so the handler's forward edits the field list in place.
        current.head?.headers = HTTPHeaders()
        requestToHandle = HTTPRequest(head: h, body: current.body, trailers: trailers, connection: connection)
        current.body = []
        actions.append(.handleRequest)
    }

    // MARK: responding

    private mutating func renderError(_ error: HTTPError, _ actions: inout Actions) {
        errorToRender = error
        actions.append(.renderError)
    }

    private mutating func failRequest(_ error: HTTPError, now: UInt64, _ actions: inout Actions) {
        guard phase != .closed && phase != .closing && phase != .lingering else { return }
        keepAlive = false
        lingerOnClose = true
        if current.responseStarted {
            abort(now: now, &actions)
            return
        }
        renderError(error, &actions)
    }

    private mutating func sendResponse(_ response: HTTPResponse, error: HTTPError?, now: UInt64, _ actions: inout Actions) {
        let method = current.head?.method
        let http10 = current.head?.version.minor == 0
        let keep = keepAlive
        let date = dateLine()
        let askedClose = output.withBytes {
            HTTP1Serializer.appendResponse(response, requestMethod: method, keepAlive: keep,
                                           clientIsHTTP10: http10, dateLine: date, into: &$0)
        }
        if askedClose { keepAlive = false }
        let status = (200...999).contains(response.status) ? response.status : 500
        current.responseStatus = status
        current.responseBodyBytes = method == .head || status == 204 || status == 304 ? 0 : response.body.count
        finishRequest(error: error, aborted: false, now: now, &actions)
    }

    /// Reports the request and moves on: next request, or close.
    private mutating func finishRequest(error: HTTPError?, aborted: Bool, now: UInt64, _ actions: inout Actions) {
        var c = InProgress()
        swap(&c, &current)  // the finished request's state moves out (a copy would retain each of its fields)
        accessRecord = HTTPAccessRecord(
            connection: connection, method: c.head?.method, target: c.head?.target,
            status: c.responseStarted || c.responseStatus != 0 ? c.responseStatus : 499, error: error ?? c.upstreamError,
            requestBodyBytes: c.head == nil ? 0 : max(c.requestBodyBytes, c.body.count),
            responseBodyBytes: c.responseBodyBytes, latencyNanoseconds: now &- c.start, upstream: c.upstreamName,
            aborted: aborted)
        requestsDone += 1
        if aborted || output.isEmpty {
            actions.append(.report)
        } else {
            reportOnDrain = true  // reported by `reportWaitingRecord` (from `drained` or `abort`)
            reportStart = c.start
        }
        if aborted { return }
        if !keepAlive {
            closeAfterFlush(now: now, &actions)
            return
        }
        phase = .idle
        setDeadline(.silentClose, settings.idleTimeout, now: now)
        afterFlush = .continueAfterResponse
        actions.append(.flush)
    }

    /// After a response was handed to the socket: parse what was kept, or read on.
    private mutating func continueAfterResponse(now: UInt64, _ actions: inout Actions) {
        guard phase == .idle, !awaitingDrain else { return }
        if pending.isEmpty {
            // Draining: `drain` found the connection waiting for its answer to be written and left
            // it open until then; idle between requests now, it closes (pipelined bytes are served).
            if peerClosed || draining {
                closeAfterFlush(now: now, &actions)
            } else {
                actions.append(.resumeReading)
            }
            return
        }
        var parsed = Actions()
        resumeParsing(now: now, &parsed)
        // Resuming only enables readiness for later turns: listed first, it keeps the action that
        // waits for an answer last.
        if phase != .closed && !peerClosed && pending.count <= settings.pendingLimit {
            pausedForPending = false
            actions.append(.resumeReading)
        }
        actions.append(contentsOf: parsed)
    }

    // MARK: proxying

    private mutating func startForward(_ forward: HTTPForward, _ actions: inout Actions) {
        guard forward.upstream.groupID == loopGroupID, loopIndex < forward.upstream.loopPools.count else {
            renderError(.upstreamUnavailable, &actions)  // a pool of another group cannot run here
            return
        }
        let pool = forward.upstream.loopPools[loopIndex]
        let request = HTTP1Serializer.upstreamRequest(forward, hostHeader: pool.settings.hostHeader)
        phase = .forwarding
        current.upstreamName = pool.settings.name
        current.responseHeadFilter = forward.responseHeadFilter
        current.responseField = forward.responseField
        current.upstreamFailureAnswer = forward.upstreamFailureAnswer
        current.upstreamActive = true
        upstreamRequest = UpstreamRequest(pool: pool, method: forward.method, bytes: request,
                                          connectTimeout: forward.connectTimeout, responseTimeout: forward.responseTimeout)
        actions.append(.startForward)
    }

    private mutating func cancelUpstream(_ actions: inout Actions) {
        guard current.upstreamActive else { return }
        current.upstreamActive = false
        actions.append(.cancelUpstream)
    }

    // MARK: writing and closing

    /// The output is fully written.
    private mutating func drained(now: UInt64, _ actions: inout Actions) {
        reportWaitingRecord(now: now, unwritten: false, error: nil, &actions)
        switch phase {
        case .closing:
            startLinger(now: now, &actions)
        case .idle where awaitingDrain:
            awaitingDrain = false
            setDeadline(.silentClose, settings.idleTimeout, now: now)
            continueAfterResponse(now: now, &actions)
        case .forwarding:
            actions.append(.resumeUpstream)
        default:
            break
        }
    }

    private mutating func closeAfterFlush(now: UInt64, _ actions: inout Actions) {
        guard phase != .closed && phase != .lingering else { return }
        phase = .closing
        deadlineKind = .none
        cancelUpstream(&actions)
        if !pending.isEmpty { lingerOnClose = true }
        if output.isEmpty {
            startLinger(now: now, &actions)
        } else {
            actions.append(.flush)
        }
    }

    /// Closes; when input may be unread, first half-closes and discards input for a while so that
    /// the last response is not destroyed by a TCP reset (RFC 9112 section 9.6).
    private mutating func startLinger(now: UInt64, _ actions: inout Actions) {
        if peerClosed || settings.lingerTimeout == 0 || !lingerOnClose {
            close(&actions)
            return
        }
        phase = .lingering
        pending = []
        writeArmed = false  // the half-close disarms it
        actions.append(.shutdownWrite)
        actions.append(.resumeReading)
        setDeadline(.linger, settings.lingerTimeout, now: now)
    }

    /// Closes at once; reports the request in progress as aborted (with `error`, when the server cut it).
    private mutating func abort(now: UInt64, error: HTTPError? = nil, _ actions: inout Actions) {
        guard phase != .closed else { return }
        reportWaitingRecord(now: now, unwritten: true, error: error, &actions)
        let inProgress = phase == .decision || phase == .body || phase == .handling || phase == .forwarding
        if inProgress && current.head != nil {
            cancelUpstream(&actions)
            if let error, !current.responseStarted && current.responseStatus == 0 { current.responseStatus = error.status }
            finishRequest(error: error, aborted: true, now: now, &actions)
        }
        close(&actions)
    }

    /// Reports the finished request whose record waits (`reportOnDrain`), if any, its latency running
    /// to `now`: written whole (`drained`), or `unwritten` when the connection ends first, then
    /// aborted (with `error`, when the server cut the connection: `clientStalled`, `drainDeadline`).
    private mutating func reportWaitingRecord(now: UInt64, unwritten: Bool, error: HTTPError?, _ actions: inout Actions) {
        guard reportOnDrain else { return }
        reportOnDrain = false
        if unwritten {
            accessRecord?.aborted = true
            if let error, accessRecord?.error == nil { accessRecord?.error = error }
        }
        accessRecord?.latencyNanoseconds = now &- reportStart
        actions.append(.report)
    }

    private mutating func close(_ actions: inout Actions) {
        guard phase != .closed else { return }
        if reportOnDrain {  // every path that abandons unwritten output goes through `abort` first
            assertionFailure("HTTP1ConnectionMachine: closed with an access record waiting for its bytes")
            reportOnDrain = false
            accessRecord?.aborted = true
            actions.append(.report)
        }
        phase = .closed
        deadlineKind = .none
        writeArmed = false
        errorToRender = nil
        requestToHandle = nil
        upstreamRequest = nil
        upstreamFailure = nil
        cancelUpstream(&actions)
        actions.append(.close)
    }
}
