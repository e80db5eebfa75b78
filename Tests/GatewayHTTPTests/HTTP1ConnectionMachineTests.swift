import GatewayIO
@testable import GatewayHTTP
import XCTest

/// The HTTP/1.1 connection machine without sockets and without sleeping: bytes and answers in,
/// actions out, time moved by hand (`HTTP1MachineDriver`). Timeouts: header 1 s, body 2 s, idle 5 s,
/// write 3 s, linger 0.5 s.
final class HTTP1ConnectionMachineTests: XCTestCase {
    typealias Driver = HTTP1MachineDriver<Void>
    private let s = Driver.second
    private let ms = Driver.ms

    /// One loop group and an upstream pool in it, for forwards (nothing connects: the driver never
    /// starts an exchange, it plays the upstream's events).
    private static let group = EventLoopGroup(loopCount: 1, timerResolution: 1)
    private static let pool: UpstreamPool = {
        // Port 9 (discard) is never connected to: the exchange is played by the test.
        try! UpstreamPool(UpstreamConfiguration(name: "up", address: .tcp(host: "127.0.0.1", port: 9)), group: group)
    }()

    /// A connection whose handler forwarded `request` to `pool`.
    private func forwarding(writeHighWatermark: Int = 256 * 1024,
                            request: String = "GET /p HTTP/1.1\r\nHost: h\r\n\r\n") -> Driver {
        let d = Driver(writeHighWatermark: writeHighWatermark, loopGroupID: Self.group.id)
        d.respond = { .forward(HTTPForward($0, to: Self.pool)) }
        d.receive(request)
        return d
    }

    private func head(_ status: Int, _ framing: HTTPBodyFraming, fields: [(String, String)] = []) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        for (n, v) in fields { try? headers.add(name: n, value: v) }
        return HTTPResponseHead(status: status, headers: headers, framing: framing)
    }

    // MARK: the request handed over

    /// The handler owns the request's field list (`HTTPHandler.handle` is `consuming`): neither the
    /// parser nor the machine keeps a reference, so a forward that adds fields (forwarding family,
    /// verdict, request id) appends in place instead of copying the list. The machine keeps method,
    /// target and version (framing, the access record).
    func testTheHandedRequestOwnsItsFieldsAndTheMachineKeepsMethodTargetAndVersion() {
        let d = Driver()
        var inPlace: [Bool] = []
        var fieldsLeft: [Int?] = []
        d.takeOver = { [unowned d] request in
            fieldsLeft.append(d.machine.requestHead?.headers.count)
            func address<T>(_ array: [T]) -> UInt { array.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
            var fields = request.head.headers
            request.head.headers = HTTPHeaders()
            let before = (address(fields.storage), address(fields.slots))
            fields.reserveAdditional(fields: 2, bytes: 32)  // within the parser's reservation: no regrowth
            try? fields.add(name: "X-Added", value: "1")
            inPlace.append(before == (address(fields.storage), address(fields.slots)))
            request.head.headers = fields
        }
        d.receive("GET /a?q=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: u\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(d.responses().map(\.status), [200, 200])
        XCTAssertEqual(inPlace, [true, true], "a reference to the fields stayed behind: the handler's edit copied them")
        XCTAssertEqual(fieldsLeft, [0, 0], "the machine's head kept the fields")
        XCTAssertEqual(d.handled.map { $0.head.headers.first("User-Agent") }, ["u", nil])
        XCTAssertEqual(d.handled.map { $0.head.headers.first("X-Added") }, ["1", "1"])
        XCTAssertEqual(d.records.map { $0.method }, [.get, .post])
        XCTAssertEqual(d.records.map { $0.targetString }, ["/a?q=1", "/b"])
    }

    // MARK: idle and silent close

    func testSilentFreshConnectionIsClosedWithoutAnswerAtTheHeaderTimeout() {
        let d = Driver()
        d.tick(at: s - 1)
        XCTAssertFalse(d.closed)
        d.tick(at: s)
        XCTAssertTrue(d.closed)
        XCTAssertTrue(d.wire.isEmpty, "silent: no 408 for a connection that sent nothing")
        XCTAssertTrue(d.records.isEmpty)
        XCTAssertFalse(d.halfClosed)
    }

    func testIdleKeepAliveConnectionIsClosedSilentlyAfterTheIdleTimeout() {
        let d = Driver()
        d.now = 100 * ms
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.responses().map(\.status), [200])
        let answered = d.wire.count
        d.tick(at: 100 * ms + 5 * s - 1)
        XCTAssertFalse(d.closed)
        d.tick(at: 100 * ms + 5 * s)
        XCTAssertTrue(d.closed)
        XCTAssertEqual(d.wire.count, answered, "closed without a word")
    }

    func testIdleTimeoutNeverCutsAResponseStillBeingWritten() {
        let d = Driver(timeouts: HTTPServerTimeouts(headerRead: 1, bodyRead: 2, idle: 5, write: 0, linger: 0.5))
        d.socketRoom = 10
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(d.writeArmed)
        d.tick(at: 5 * s)
        XCTAssertFalse(d.closed, "the response is still queued: not idle")
        d.writable()
        XCTAssertEqual(d.responses().map(\.status), [200])
        d.tick(at: 10 * s)
        XCTAssertTrue(d.closed, "idle again: the re-armed idle deadline applies")
    }

    // MARK: header and body timeouts

    func testSlowHeadGets408HeaderTimeoutAndCloses() {
        let d = Driver()
        d.now = 200 * ms
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n")
        d.tick(at: 200 * ms + s - 1)
        XCTAssertTrue(d.wire.isEmpty)
        d.tick(at: 200 * ms + s)
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [408], d.wireText)
        XCTAssertEqual(r.first?.header("X-Error"), "header_timeout")
        XCTAssertEqual(r.first?.header("Connection"), "close")
        XCTAssertEqual(d.records.last?.error, .headerTimeout)
        XCTAssertTrue(d.halfClosed, "lingering close: the client may still be sending")
        XCTAssertTrue(d.handled.isEmpty)
    }

    func testHeadCompletedInTimeIsServed() {
        let d = Driver()
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n")
        d.tick(at: 900 * ms)
        d.receive("X-Late: 1\r\n\r\n")
        d.tick(at: s + 1)
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertFalse(d.closed)
    }

    func testBodyTimeoutBoundsTheWholeBodyEvenWhenItTricklesByteByByte() {
        let d = Driver()
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n")
        // One byte every 300 ms: each read is well within the 2 s limit, the whole body is not.
        var sent = 0
        var time: UInt64 = 0
        while time + 300 * ms < 2 * s {
            time += 300 * ms
            d.tick(at: time)
            d.receive("x")
            sent += 1
        }
        XCTAssertEqual(sent, 6)
        XCTAssertTrue(d.wire.isEmpty)
        d.tick(at: 2 * s - 1)
        XCTAssertTrue(d.wire.isEmpty)
        d.tick(at: 2 * s)
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [408], d.wireText)
        XCTAssertEqual(r.first?.header("X-Error"), "body_timeout")
        XCTAssertEqual(r.first?.header("Connection"), "close")
        XCTAssertTrue(d.handled.isEmpty, "an incomplete body never reaches the handler")
        XCTAssertEqual(d.records.last?.error, .bodyTimeout)
        XCTAssertEqual(d.records.last?.requestBodyBytes, 6)
    }

    func testBodyCompletedWithinTheBodyTimeoutIsServed() {
        let d = Driver()
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n")
        for i in 1...10 {
            d.tick(at: UInt64(i) * 190 * ms)
            d.receive("x")
        }
        d.tick(at: 2 * s)
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.responses().first?.bodyText, "xxxxxxxxxx")
        XCTAssertFalse(d.closed)
    }

    // MARK: write timeout

    func testWriteTimeoutClosesAStalledReader() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n" + String(repeating: "b", count: 100))
        XCTAssertTrue(d.writeArmed)
        XCTAssertEqual(d.wire.count, 10)
        d.tick(at: 3 * s)
        XCTAssertFalse(d.closed, "exactly the limit: not yet")
        d.tick(at: 3 * s + 1)
        XCTAssertTrue(d.closed)
    }

    func testWriteProgressRestartsTheWriteTimeout() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n" + String(repeating: "b", count: 100))
        d.now = 2 * s
        d.writable(room: 10)  // some progress, still blocked
        XCTAssertTrue(d.writeArmed)
        d.tick(at: 4 * s)
        XCTAssertFalse(d.closed)
        d.tick(at: 5 * s + 1)
        XCTAssertTrue(d.closed)
    }

    // MARK: the access record after the last byte

    /// As nginx logs after the last byte: the record of a response the socket did not take at once
    /// is reported when its last byte is written, its latency running to that write.
    func testTheRecordWaitsForTheLastByteAndItsLatencyRunsToIt() {
        let d = Driver()
        d.socketRoom = 10
        d.now = 1 * s
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(d.writeArmed)
        XCTAssertTrue(d.records.isEmpty, "not reported while its bytes wait for the socket")
        d.now = 3 * s
        d.writable()
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.records.map(\.status), [200])
        XCTAssertEqual(d.records.first?.aborted, false)
        XCTAssertEqual(d.records.first?.latencyNanoseconds, 2 * s, "from the request to the last byte written")
        XCTAssertFalse(d.closed)
    }

    func testAResponseTheSocketTakesAtOnceIsReportedAtOnce() {
        let d = Driver()
        d.now = 1 * s
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.records.map(\.status), [200])
        XCTAssertEqual(d.records.first?.latencyNanoseconds, 0)
        XCTAssertFalse(d.writeArmed)
    }

    /// A client that stops reading after the whole response was queued is cut by the write timeout
    /// and reported as such (`client_stalled`, aborted), not as a completed exchange.
    func testAStalledReaderOfAFinishedResponseIsReportedAbortedAndStalled() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(d.records.isEmpty)
        d.tick(at: 3 * s + 1)
        XCTAssertTrue(d.closed)
        XCTAssertEqual(d.records.count, 1)
        XCTAssertEqual(d.records.first?.aborted, true)
        XCTAssertEqual(d.records.first?.error, .clientStalled)
        XCTAssertEqual(d.records.first?.status, 200, "the status being sent")
        XCTAssertEqual(d.records.first?.latencyNanoseconds, 3 * s + 1)
    }

    func testAConnectionResetBeforeTheLastByteIsReportedAborted() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(d.records.isEmpty)
        d.writesFail = true
        d.writable()
        XCTAssertTrue(d.closed)
        XCTAssertEqual(d.records.map(\.aborted), [true])
        XCTAssertNil(d.records.first?.error, "the client went away: no server cut")
    }

    func testADrainDeadlineBeforeTheLastByteIsReportedCutByTheServer() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        d.perform(d.machine.forceClose(now: d.now))
        XCTAssertEqual(d.records.map(\.aborted), [true])
        XCTAssertEqual(d.records.first?.error, .drainDeadline)
        XCTAssertEqual(d.records.first?.status, 200)
    }

    /// A pipelined request starts only once the previous response is written and reported, so each
    /// record goes out with its own request's context and in order.
    func testAPipelinedRequestWaitsUntilThePreviousResponseIsWrittenAndReported() {
        let d = HTTP1MachineDriver<String>(context: "")
        d.decide = { .accept(bodyLimit: 1 << 20, context: $0.targetString) }
        d.socketRoom = 10
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1"], "the next request waits for the socket")
        XCTAssertTrue(d.records.isEmpty)
        d.writable()
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1", "/2"])
        XCTAssertEqual(d.records.map(\.targetString), ["/1", "/2"])
        XCTAssertEqual(d.contexts, ["/1", "/2"])
        XCTAssertEqual(d.responses().map { $0.header("X-Target") ?? "-" }, ["/1", "/2"])
    }

    /// Draining while an answer is still being written: the connection closes once it is, rather
    /// than waiting idle for another request.
    func testDrainWhileTheLastAnswerIsBeingWrittenClosesOnceItIsWritten() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        d.perform(d.machine.drain(now: d.now))
        XCTAssertFalse(d.closed, "its answer is still being written")
        d.writable()
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.records.map(\.aborted), [false])
        XCTAssertTrue(d.closed)
    }

    /// The client ended its side while its answer was still being written, an incomplete pipelined
    /// request kept: once the answer is written the connection closes (that request can never
    /// complete), without a 408 to nobody. (Found by review: it waited for the header timeout.)
    func testEndOfFileWhileAnAnswerIsWrittenClosesOnceWrittenDespiteAnIncompletePipelinedHead() {
        let d = Driver()
        d.socketRoom = 10
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHo")
        d.endOfFile()
        XCTAssertFalse(d.closed, "the answer is still being written")
        d.writable()
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.records.map(\.status), [200])
        XCTAssertTrue(d.closed, "nothing more can be read")
        d.tick(at: 1 * s)
        XCTAssertEqual(d.records.map(\.status), [200], d.wireText)
    }

    /// The same with an incomplete body and the header and body timeouts off: never open forever.
    func testEndOfFileWhileAnAnswerIsWrittenNeverLeavesAnIncompletePipelinedBodyWaiting() {
        let d = Driver(timeouts: HTTPServerTimeouts(headerRead: 0, bodyRead: 0, idle: 5, write: 3, linger: 0.5))
        d.socketRoom = 10
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab")
        d.endOfFile()
        d.writable()
        XCTAssertTrue(d.closed, "reading stopped and no deadline: it would stay open forever")
        XCTAssertEqual(d.handled.count, 1)
        XCTAssertEqual(d.records.map(\.status), [200, 499], "the incomplete request is reported as the client's abort")
        XCTAssertEqual(d.records.last?.aborted, true)
    }

    /// A complete pipelined request kept when the client ended its side (while the previous answer
    /// was being written) is not served once that answer is: 499, as for a request in progress.
    func testEndOfFileWhileAnAnswerIsWrittenCutsACompletePipelinedRequestWith499() {
        let d = HTTP1MachineDriver<String>(context: "")
        d.decide = { .accept(bodyLimit: 1 << 20, context: $0.targetString) }
        d.socketRoom = 10
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
        d.endOfFile()
        d.writable()
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1"], "the kept request is never handled")
        XCTAssertEqual(d.records.map(\.status), [200, 499])
        XCTAssertEqual(d.records.last?.aborted, true)
        XCTAssertEqual(d.contexts, ["/1", "/2"], "reported with its own decided context")
        XCTAssertTrue(d.closed)
    }

    /// A proxied response whose last bytes wait for the socket is reported when they are written.
    func testAProxiedResponseIsReportedWhenItsLastBytesAreWritten() {
        let d = forwarding()
        d.socketRoom = 100
        d.upstreamHead(head(200, .contentLength(1000)))
        d.upstreamBody([UInt8](repeating: 0, count: 1000))
        d.upstreamEnd()
        XCTAssertTrue(d.records.isEmpty, "its last bytes wait for the socket")
        d.writable()
        XCTAssertEqual(d.records.map(\.aborted), [false])
        XCTAssertEqual(d.records.first?.responseBodyBytes, 1000)
    }

    // MARK: lingering close

    func testErrorAnswerLingersThenClosesAtTheLingerTimeout() {
        let d = Driver()
        d.receive("GET /a HTTP/1.1\nHost: h\n\n")
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [400])
        XCTAssertEqual(r.first?.header("X-Error"), "bare_line_ending")
        XCTAssertEqual(r.first?.header("Connection"), "close")
        XCTAssertTrue(d.halfClosed)
        XCTAssertFalse(d.closed)
        XCTAssertEqual(Array(d.log.suffix(2)), [.shutdownWrite, .resumeReading])
        d.receive("whatever the client still sends is read and dropped")
        XCTAssertEqual(d.responses().count, 1)
        d.tick(at: 500 * ms - 1)
        XCTAssertFalse(d.closed)
        d.tick(at: 500 * ms)
        XCTAssertTrue(d.closed)
    }

    func testLingeringEndsAtOnceOnEndOfFileOrTooMuchInput() {
        let eof = Driver()
        eof.receive("GET /a HTTP/1.1\nHost: h\n\n")
        eof.endOfFile()
        XCTAssertTrue(eof.closed)

        let flood = Driver()
        flood.receive("GET /a HTTP/1.1\nHost: h\n\n")
        flood.receive([UInt8](repeating: 0x61, count: 1 << 20))
        XCTAssertFalse(flood.closed)
        flood.receive([0x61])
        XCTAssertTrue(flood.closed, "more than 1 MiB while lingering")
    }

    func testNoLingerWhenDisabled() {
        let d = Driver(timeouts: HTTPServerTimeouts(headerRead: 1, bodyRead: 2, idle: 5, write: 3, linger: 0))
        d.receive("GET /a HTTP/1.1\nHost: h\n\n")
        XCTAssertEqual(d.responses().map(\.status), [400])
        XCTAssertFalse(d.halfClosed)
        XCTAssertTrue(d.closed)
    }

    // MARK: pipelining

    func testPipelinedRequestsAreHandledOneAtATimeAndAnsweredInOrder() {
        let d = Driver()
        let answerLater = d.respond
        d.respond = { $0.head.targetString == "/1" ? nil : answerLater($0) }
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
                  + "POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1"], "the next request waits for the answer")
        XCTAssertTrue(d.wire.isEmpty)
        XCTAssertFalse(d.machine.pending.isEmpty)
        d.answer(.response(HTTPResponse(status: 201)), sequence: 2)
        XCTAssertTrue(d.wire.isEmpty, "a stale sequence is ignored")
        d.answer(.response(HTTPResponse(status: 201)))
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [201, 200, 200], d.wireText)
        XCTAssertEqual(r.map { $0.header("X-Target") ?? "-" }, ["-", "/2", "/3"])
        XCTAssertEqual(r.last?.bodyText, "abc")
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1", "/2", "/3"])
        XCTAssertEqual(d.records.map(\.status), [201, 200, 200])
        XCTAssertTrue(d.closed)
    }

    func testPipelinedBytesAreBoundedByPausingReads() {
        let d = Driver()
        d.respond = { _ in nil }
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n")
        let limit = d.machine.settings.pendingLimit
        let filler = "GET /2 HTTP/1.1\r\nHost: h\r\nX-Fill: " + String(repeating: "f", count: 1000) + "\r\n\r\n"
        var kept = 0
        while kept + filler.utf8.count <= limit {
            d.receive(filler)
            kept += filler.utf8.count
        }
        XCTAssertFalse(d.readingPaused, "within the bound: reading goes on")
        d.receive(filler)
        XCTAssertTrue(d.readingPaused, "past the bound: reading pauses")
        // Answered one by one: reading resumes once the kept bytes are back within the bound.
        d.respond = Driver().respond
        d.answer(.response(HTTPResponse(status: 200)))
        XCTAssertFalse(d.readingPaused)
        XCTAssertEqual(d.handled.count, 2 + kept / filler.utf8.count)
        XCTAssertTrue(d.machine.pending.isEmpty)
    }

    /// A pipelined request whose body outgrew the bound while the previous one was answered: reading
    /// paused with part of the body kept. Once parsing takes the kept bytes the rest of the body must
    /// be read again, or the request waits for `timeouts.body` (a probe: 408 after 30 s, and the
    /// requests behind it never served).
    func testReadingResumesOnceAPipelinedBodyTakesTheKeptBytes() {
        let d = Driver()
        let answerLater = d.respond
        d.respond = { $0.head.targetString == "/1" ? nil : answerLater($0) }
        let limit = d.machine.settings.pendingLimit
        let length = limit + 20_000
        let kept = limit + 5_000
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: \(length)\r\n\r\n"
                  + String(repeating: "b", count: kept))
        XCTAssertTrue(d.readingPaused, "past the bound while /1 is answered")
        d.answer(.response(HTTPResponse(status: 200)))
        XCTAssertTrue(d.machine.pending.isEmpty, "the kept body bytes went to /2")
        XCTAssertFalse(d.readingPaused, "the rest of /2's body is read")
        d.receive(String(repeating: "b", count: length - kept) + "GET /3 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/1", "/2", "/3"])
        XCTAssertEqual(d.responses().map(\.status), [200, 200, 200])
    }

    // MARK: persistence

    func testHTTP10ClosesUnlessKeepAliveIsAsked() {
        let plain = Driver()
        plain.receive("GET /a HTTP/1.0\r\n\r\n")
        XCTAssertEqual(plain.responses().first?.header("Connection"), "close")
        XCTAssertTrue(plain.closed)
        XCTAssertFalse(plain.halfClosed, "nothing unread: no lingering")

        let keep = Driver()
        keep.receive("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(keep.responses().first?.header("Connection"), "keep-alive")
        XCTAssertFalse(keep.closed)
        keep.receive("GET /b HTTP/1.0\r\n\r\n")
        XCTAssertEqual(keep.responses().last?.header("Connection"), "close")
        XCTAssertTrue(keep.closed)
    }

    func testConnectionCloseAndHandlerCloseEndTheConnection() {
        let asked = Driver()
        asked.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertNil(asked.responses().first?.header("Connection"))
        XCTAssertFalse(asked.closed)
        asked.receive("GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(asked.responses().last?.header("Connection"), "close")
        XCTAssertTrue(asked.closed)

        let handler = Driver()
        handler.respond = { _ in
            var headers = HTTPHeaders()
            try? headers.add(name: "Connection", value: "close")
            return .response(HTTPResponse(status: 200, headers: headers))
        }
        handler.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(handler.responses().count, 1)
        XCTAssertEqual(handler.responses().first?.header("Connection"), "close")
        XCTAssertTrue(handler.closed)
    }

    func testMaxRequestsPerConnection() {
        let d = Driver(maxRequests: 2)
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\n\r\n")
        let r = d.responses()
        XCTAssertEqual(r.count, 2, d.wireText)
        XCTAssertNil(r.first?.header("Connection"))
        XCTAssertEqual(r.last?.header("Connection"), "close")
        XCTAssertTrue(d.closed, "the third request is never parsed")
        XCTAssertEqual(d.handled.count, 2)

        let unlimited = Driver()
        unlimited.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(unlimited.responses().count, 3)
        XCTAssertFalse(unlimited.closed)
    }

    // MARK: 100-continue and early answers

    func testExpect100ContinueIsSentOnlyWhenTheHeadIsAccepted() {
        let d = Driver()
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        XCTAssertEqual(d.wireText, "HTTP/1.1 100 Continue\r\n\r\n")
        XCTAssertTrue(d.handled.isEmpty)
        d.receive("data")
        XCTAssertTrue(d.wireText.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), d.wireText)
        XCTAssertEqual(d.responses().last?.bodyText, "data")

        let refused = Driver()
        refused.decide = { _ in .respond(HTTPResponse(status: 404)) }
        refused.receive("POST /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        XCTAssertTrue(refused.wireText.hasPrefix("HTTP/1.1 404 "), refused.wireText)
        XCTAssertFalse(refused.wireText.contains("100 Continue"))
    }

    func testEarlyAnswerToARequestWithBodyClosesLingeringWithoutReadingIt() {
        let d = HTTP1MachineDriver<String>(context: "accepted")
        d.decide = { _ in .respond(HTTPResponse(status: 404, body: Array("no route".utf8)), context: "route") }
        d.receive("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [404], d.wireText)
        XCTAssertEqual(r.first?.header("Connection"), "close")
        XCTAssertTrue(d.handled.isEmpty, "the body is never read, the next request never parsed")
        XCTAssertTrue(d.halfClosed)
        XCTAssertEqual(d.records.count, 1)
        XCTAssertEqual(d.contexts, ["route"])
        d.tick(at: 500 * ms)
        XCTAssertTrue(d.closed)
    }

    func testTheHeadsContextReachesHandleAndTheReportAndAnAnswersContextReplacesIt() {
        let d = HTTP1MachineDriver<String>(context: "")
        d.decide = { head in .accept(bodyLimit: 16, context: "head " + head.targetString) }
        d.respond = { _ in nil }
        d.receive("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.handledContexts, ["head /1"])
        d.answer(.response(HTTPResponse(status: 200)), context: "answered /1")
        d.answer(.response(HTTPResponse(status: 500)), context: "late", sequence: 1)  // stale: changes nothing
        d.receive("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
        d.answer(.response(HTTPResponse(status: 200)), context: "stale", sequence: 1)  // not request 2's
        d.answer(.response(HTTPResponse(status: 204)))  // no context: the head's stays
        d.receive("POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n")  // 413: the server's answer
        XCTAssertEqual(d.responses().map(\.status), [200, 204, 413], d.wireText)
        XCTAssertEqual(d.handledContexts, ["head /1", "head /2"])
        XCTAssertEqual(d.contexts, ["answered /1", "head /2", "head /3"])

        let malformed = HTTP1MachineDriver<String>(context: "decided")
        malformed.receive("GET /\u{1} HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(malformed.responses().map(\.status), [400], malformed.wireText)
        XCTAssertEqual(malformed.contexts, [nil], "no head decided: no context")
    }

    func testEarlyAnswerToABodylessRequestKeepsTheConnection() {
        let d = Driver()
        d.decide = { $0.targetString == "/x" ? .respond(HTTPResponse(status: 404)) : .accept(bodyLimit: 0) }
        d.receive("GET /x HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.responses().map(\.status), [404, 200], d.wireText)
        XCTAssertEqual(d.handled.map(\.head.targetString), ["/next"])
        XCTAssertFalse(d.closed)
        XCTAssertFalse(d.halfClosed)
    }

    func testDeclaredBodyOverTheLimitIs413BeforeReadingIt() {
        let d = Driver()
        d.decide = { _ in .accept(bodyLimit: 4) }
        d.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(d.responses().map(\.status), [413])
        XCTAssertEqual(d.responses().first?.header("X-Error"), "body_too_large")
        XCTAssertTrue(d.handled.isEmpty)
        XCTAssertTrue(d.halfClosed)

        let fits = Driver()
        fits.decide = { _ in .accept(bodyLimit: 5) }
        fits.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(fits.responses().map(\.status), [200])
    }

    // MARK: drain

    func testDrainClosesAnIdleConnectionAtOnce() {
        let d = Driver()
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertFalse(d.closed)
        d.drain()
        XCTAssertTrue(d.closed)
        XCTAssertFalse(d.halfClosed)
        XCTAssertEqual(d.responses().count, 1)
    }

    func testDrainWhileHandlingAnswersWithConnectionCloseThenCloses() {
        let d = Driver()
        d.respond = { _ in nil }
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        d.drain()
        XCTAssertFalse(d.closed, "the request in progress is answered first")
        d.answer(.response(HTTPResponse(status: 200)))
        XCTAssertEqual(d.responses().first?.header("Connection"), "close")
        XCTAssertTrue(d.closed)
        XCTAssertFalse(d.records.first?.aborted ?? true)
    }

    /// A fresh connection (nothing sent yet) is not closed by a drain: its client is on its way
    /// (a handover), so its first request is served, with `Connection: close`.
    func testDrainLetsAConnectionWithoutARequestYetSendItsFirst() {
        let d = Driver()
        d.drain()
        XCTAssertFalse(d.closed, "not closed before its first request")
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.responses().map(\.status), [200])
        XCTAssertEqual(d.responses().first?.header("Connection"), "close")
        XCTAssertTrue(d.closed)
    }

    /// Cut by the drain deadline: reported aborted with `drainDeadline` and 503 (the gateway cut it),
    /// not 499 (a client that went away).
    func testForceCloseReportsTheRequestInProgressAsCutByTheServer() {
        let d = Driver()
        d.respond = { _ in nil }
        d.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        d.perform(d.machine.forceClose(now: d.now))
        XCTAssertTrue(d.closed)
        XCTAssertEqual(d.records.first?.aborted, true)
        XCTAssertEqual(d.records.first?.status, 503)
        XCTAssertEqual(d.records.first?.error, .drainDeadline)
        d.answer(.response(HTTPResponse(status: 200)))
        XCTAssertTrue(d.wire.isEmpty, "an answer after the close is dropped")
    }

    // MARK: proxying

    func testForwardSendsTheSerializedRequestAndRelaysTheResponse() {
        let d = forwarding()
        XCTAssertEqual(d.log.last, .startForward)
        let request = String(decoding: d.upstreamRequests.first?.bytes ?? [], as: UTF8.self)
        XCTAssertTrue(request.hasPrefix("GET /p HTTP/1.1\r\nHost: h\r\n"), request)
        d.upstreamHead(head(200, .contentLength(5), fields: [("Content-Length", "5"), ("X-Up", "1")]))
        XCTAssertTrue(d.wire.isEmpty, "the head waits for the body bytes of the same read")
        d.upstreamBody(Array("hello".utf8))
        d.upstreamReadDone()
        d.upstreamEnd()
        let r = d.responses()
        XCTAssertEqual(r.map(\.status), [200])
        XCTAssertEqual(r.first?.bodyText, "hello")
        XCTAssertEqual(r.first?.header("X-Up"), "1")
        XCTAssertEqual(d.records.first?.upstream, "up")
        XCTAssertEqual(d.records.first?.responseBodyBytes, 5)
        XCTAssertFalse(d.closed)
    }

    func testForwardToAPoolOfAnotherGroupIs502() {
        let other = Driver()  // its loop group is not the pool's
        other.respond = { .forward(HTTPForward($0, to: Self.pool)) }
        other.receive("GET /p HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(other.responses().map(\.status), [502])
        XCTAssertEqual(other.responses().first?.header("X-Error"), "upstream_unavailable")
        XCTAssertTrue(other.upstreamRequests.isEmpty)
        XCTAssertFalse(other.closed)
    }

    func testUpstreamIsPausedPastTheHighWatermarkAndResumedOnceDrained() {
        let d = forwarding(writeHighWatermark: 1000)
        d.socketRoom = 0
        d.upstreamHead(head(200, .contentLength(3000)))
        XCTAssertTrue(d.upstreamBody([UInt8](repeating: 1, count: 500)), "under the watermark")
        XCTAssertFalse(d.upstreamBody([UInt8](repeating: 2, count: 1000)), "past the watermark: pause the upstream")
        d.upstreamReadDone()
        XCTAssertTrue(d.writeArmed)
        XCTAssertFalse(d.machine.upstreamMayContinue)
        XCTAssertEqual(d.upstreamResumes, 0)
        d.writable()
        XCTAssertFalse(d.writeArmed)
        XCTAssertEqual(d.upstreamResumes, 1, "drained: resume the upstream")
        XCTAssertTrue(d.machine.upstreamMayContinue)
        d.upstreamBody([UInt8](repeating: 3, count: 1500))
        d.upstreamReadDone()
        d.upstreamEnd()
        XCTAssertEqual(d.responses().first?.body.count, 3000)
        XCTAssertFalse(d.closed)
    }

    func testLargeUpstreamReadsAreWrittenDirectlyAndSmallOnesCoalesced() {
        let d = forwarding()
        let big = HTTP1ConnectionMachine.coalesceLimit
        d.upstreamHead(head(200, .contentLength(3 + big)))
        d.upstreamBody([1, 2, 3])
        XCTAssertTrue(d.wire.isEmpty, "small: queued until the read is done")
        d.upstreamReadDone()
        XCTAssertFalse(d.wire.isEmpty)
        d.clear()
        d.upstreamBody([UInt8](repeating: 7, count: big))
        XCTAssertEqual(d.log, [.writeDirect, .resumeUpstream], "large with nothing queued: no copy")
        XCTAssertEqual(d.wire.count, big)
        d.upstreamEnd()
        XCTAssertEqual(d.records.first?.responseBodyBytes, 3 + big)
    }

    func testChunkedUpstreamIsRechunkedForHTTP11AndCloseDelimitedForHTTP10() {
        let d = forwarding()
        d.upstreamHead(head(200, .chunked, fields: [("Transfer-Encoding", "chunked")]))
        d.upstreamBody(Array("abc".utf8))
        d.upstreamEnd()
        XCTAssertTrue(d.wireText.hasSuffix("Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), d.wireText)
        XCTAssertFalse(d.closed)

        let old = forwarding(request: "GET /p HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        old.upstreamHead(head(200, .chunked, fields: [("Transfer-Encoding", "chunked")]))
        old.upstreamBody(Array("abc".utf8))
        old.upstreamEnd()
        XCTAssertTrue(old.wireText.hasSuffix("Connection: close\r\n\r\nabc"), old.wireText)
        XCTAssertTrue(old.closed, "the end of the body is the close")
    }

    func testUpstreamFailureBeforeTheHeadIsAnsweredAndKeepsTheConnection() {
        let d = forwarding()
        d.upstreamFailed(.upstreamReset)
        XCTAssertEqual(d.responses().map(\.status), [502])
        XCTAssertEqual(d.responses().first?.header("X-Error"), "upstream_reset")
        XCTAssertEqual(d.records.first?.error, .upstreamReset)
        XCTAssertEqual(d.records.first?.upstream, "up")
        XCTAssertFalse(d.closed)
        d.respond = Driver().respond
        d.receive("GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertEqual(d.responses().map(\.status), [502, 200])
    }

    /// A forward with its own failure answer: the machine waits for it like for a handler answer
    /// (later, here), sends it, keeps the upstream error in the access record and the connection.
    func testUpstreamFailureIsAnsweredByTheForwardsOwnAnswerWhenItHasOne() {
        let d = Driver(loopGroupID: Self.group.id)
        d.respond = { request in
            var forward = HTTPForward(request, to: Self.pool)
            forward.upstreamFailureAnswer = { _, _ in }
            return .forward(forward)
        }
        d.receive("GET /p HTTP/1.1\r\nHost: h\r\n\r\n")
        d.upstreamFailed(.upstreamTimeout)
        XCTAssertEqual(d.upstreamFailuresAnswered, [.upstreamTimeout])
        XCTAssertEqual(d.responses().count, 0, "nothing is written before the answer")
        XCTAssertEqual(d.machine.phase, .handling)
        d.answer(.response(HTTPResponse(status: 504, body: Array("mine".utf8))))
        XCTAssertEqual(d.responses().map(\.status), [504])
        XCTAssertEqual(d.responses().first?.body, Array("mine".utf8))
        XCTAssertEqual(d.records.first?.error, .upstreamTimeout)
        XCTAssertFalse(d.closed)
    }

    /// After the head, the forward's answer is never asked: the truncation closes the connection.
    func testUpstreamFailureAfterTheHeadIgnoresTheForwardsOwnAnswer() {
        let d = Driver(loopGroupID: Self.group.id)
        d.respond = { request in
            var forward = HTTPForward(request, to: Self.pool)
            forward.upstreamFailureAnswer = { _, _ in }
            return .forward(forward)
        }
        d.receive("GET /p HTTP/1.1\r\nHost: h\r\n\r\n")
        d.upstreamHead(head(200, .contentLength(10)))
        d.upstreamFailed(.upstreamReset)
        XCTAssertEqual(d.upstreamFailuresAnswered, [])
        XCTAssertTrue(d.closed)
    }

    func testUpstreamFailureAfterTheHeadWritesWhatCameThenCloses() {
        let d = forwarding()
        d.upstreamHead(head(200, .contentLength(10)))
        d.upstreamBody(Array("part".utf8))
        d.upstreamFailed(.upstreamReset)
        XCTAssertTrue(d.wireText.hasSuffix("\r\n\r\npart"), "what was relayed went out: \(d.wireText)")
        XCTAssertTrue(d.closed, "closing is the only way to signal the truncation")
        XCTAssertFalse(d.halfClosed)
        XCTAssertEqual(d.records.first?.aborted, true)
        XCTAssertEqual(d.records.first?.status, 200)
        XCTAssertNil(d.records.first?.error)
    }

    func testClientGoneWhileForwardingCancelsTheExchange() {
        let d = forwarding()
        d.perform(d.machine.readFailed(now: d.now))
        XCTAssertTrue(d.upstreamCancelled)
        XCTAssertTrue(d.closed)
        XCTAssertEqual(d.records.first?.aborted, true)
        XCTAssertEqual(d.records.first?.status, 499)
    }

    func testWriteTimeoutAbortsAProxiedResponse() {
        let d = forwarding()
        d.socketRoom = 100
        d.upstreamHead(head(200, .contentLength(10_000)))
        d.upstreamBody([UInt8](repeating: 0, count: 5000))
        d.upstreamReadDone()
        XCTAssertTrue(d.writeArmed)
        d.tick(at: 3 * s + 1)
        XCTAssertTrue(d.closed)
        XCTAssertTrue(d.upstreamCancelled)
        XCTAssertEqual(d.records.first?.aborted, true)
        XCTAssertEqual(d.records.first?.status, 200)
    }

    // MARK: HEAD, 204, 304

    func testLocalResponsesToHEADAnd204And304CarryNoBody() {
        let d = Driver()
        d.respond = { request in
            switch request.head.targetString {
            case "/204": return .response(HTTPResponse(status: 204, body: Array("x".utf8)))
            case "/304": return .response(HTTPResponse(status: 304, body: Array("x".utf8)))
            default: return .response(HTTPResponse(status: 200, body: Array("hello".utf8)))
            }
        }
        d.receive("HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(d.wireText.hasSuffix("Content-Length: 5\r\n\r\n"), "HEAD: the length, not the body: \(d.wireText)")
        d.clear()
        d.receive("GET /204 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertFalse(d.wireText.contains("Content-Length"), d.wireText)
        XCTAssertTrue(d.wireText.hasSuffix("\r\n\r\n"), d.wireText)
        d.clear()
        d.receive("GET /304 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertFalse(d.wireText.contains("Content-Length"), d.wireText)
        XCTAssertTrue(d.wireText.hasSuffix("\r\n\r\n"), d.wireText)
        XCTAssertEqual(d.records.map(\.responseBodyBytes), [0, 0, 0])
        d.clear()
        d.receive("GET /200 HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(d.wireText.hasSuffix("\r\n\r\nhello"), "GET gets the body: \(d.wireText)")
    }

    func testProxiedHEADAnd304KeepTheLengthAnd204DropsIt() {
        let headRequest = forwarding(request: "HEAD /p HTTP/1.1\r\nHost: h\r\n\r\n")
        headRequest.upstreamHead(head(200, .none, fields: [("Content-Length", "100")]))
        headRequest.upstreamEnd()
        XCTAssertTrue(headRequest.wireText.contains("Content-Length: 100\r\n"), headRequest.wireText)
        XCTAssertTrue(headRequest.wireText.hasSuffix("\r\n\r\n"))
        XCTAssertFalse(headRequest.wireText.contains("Transfer-Encoding"))

        let notModified = forwarding()
        notModified.upstreamHead(head(304, .none, fields: [("Content-Length", "100")]))
        notModified.upstreamEnd()
        XCTAssertTrue(notModified.wireText.contains("Content-Length: 100\r\n"), notModified.wireText)

        let noContent = forwarding()
        noContent.upstreamHead(head(204, .none, fields: [("Content-Length", "0")]))
        noContent.upstreamEnd()
        XCTAssertFalse(noContent.wireText.contains("Content-Length"), noContent.wireText)
        XCTAssertFalse(noContent.wireText.contains("Transfer-Encoding"), noContent.wireText)
        XCTAssertFalse(noContent.closed)

        let get = forwarding()
        get.upstreamHead(head(200, .none))
        get.upstreamEnd()
        XCTAssertTrue(get.wireText.contains("Content-Length: 0\r\n"), "a GET without upstream body gets length 0: \(get.wireText)")
    }

    // MARK: end of file and the action lists

    func testEndOfFileMidRequestAbortsAndAfterAnswersCloses() {
        let mid = Driver()
        mid.receive("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhe")
        mid.endOfFile()
        XCTAssertTrue(mid.closed)
        XCTAssertEqual(mid.records.first?.aborted, true)
        XCTAssertTrue(mid.wire.isEmpty)

        // The client went away while its request was handled (nginx's 499, Envoy's reset): no
        // socket is held for an answer nobody reads; the late answer is dropped.
        let gone = Driver()
        gone.respond = { _ in nil }
        gone.receive("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        gone.endOfFile()
        XCTAssertTrue(gone.closed, "closed at once, not after the handler's answer")
        XCTAssertEqual(gone.records.first?.status, 499)
        XCTAssertEqual(gone.records.first?.aborted, true)
        gone.answer(.response(HTTPResponse(status: 200)))
        XCTAssertTrue(gone.wire.isEmpty, "nothing written for a client that left")
    }

    func testEndOfFileWhileForwardingCancelsTheUpstreamUnlessTheAnswerStarted() {
        let waiting = forwarding()
        waiting.endOfFile()
        XCTAssertTrue(waiting.upstreamCancelled, "the upstream exchange stops")
        XCTAssertTrue(waiting.closed)
        XCTAssertEqual(waiting.records.first?.status, 499)

        let started = forwarding()
        started.upstreamHead(head(200, .contentLength(4)))
        started.endOfFile()
        XCTAssertFalse(started.upstreamCancelled, "an answer being written goes on")
        XCTAssertFalse(started.closed)
        started.upstreamBody(Array("done".utf8))
        started.upstreamEnd()
        XCTAssertEqual(started.responses().map(\.status), [200])
        XCTAssertTrue(started.closed, "then it closes")
    }

    func testActionListsHoldOneAwaitedActionLastAndNeverAllocate() {
        var actions: HTTP1ConnectionMachine.Actions = [.report, .cancelUpstream, .flush]
        XCTAssertEqual(Array(actions), [.report, .cancelUpstream, .flush])
        XCTAssertEqual(MemoryLayout<HTTP1ConnectionMachine.Actions>.size, 24, "two words and a count, inline")
        actions = HTTP1ConnectionMachine.Actions()
        for _ in 0..<15 { actions.append(.resumeReading) }
        actions.append(.close)
        XCTAssertEqual(actions.count, HTTP1ConnectionMachine.Actions.capacity)
        XCTAssertEqual(actions[15], .close)
        XCTAssertEqual(actions[8], .resumeReading)
        // The driver's precondition checks the "awaited action last" rule on every list of every test.
    }
}
