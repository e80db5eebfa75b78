import Dispatch
import Foundation
@testable import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// `SocketChannel` on the loop's `EventLoopPoller`, over real socket pairs: level-triggered delivery,
/// pause / resume / stop, writability only while armed, end of file as readable, no delivery to a
/// channel closed earlier in the same batch, and a hung-up socket with no interest does not spin.
final class EventLoopPollerTests: XCTestCase {
    private var group: EventLoopGroup!
    private var loop: EventLoop { group.loops[0] }

    override func setUp() {
        super.setUp()
        group = EventLoopGroup(loopCount: 1, timerResolution: 0.02)
    }

    override func tearDown() {
        group.shutdown()
        group = nil
        super.tearDown()
    }

    private func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0 else {
            throw Socket.Failure(call: "socketpair", errno: errno)
        }
        return (fds[0], fds[1])
    }

    /// Runs `body` on the loop and waits for it.
    private func onLoop<T>(_ body: @escaping () -> T) -> T {
        nonisolated(unsafe) var result: T?
        nonisolated(unsafe) let work = body
        loop.queue.sync { result = work() }
        return result!
    }

    /// Counts events per channel (touched only on the loop).
    private final class Counter: @unchecked Sendable {  // confined to the loop's queue
        var readable = 0
        var writable = 0
    }

    private func settle() { Thread.sleep(forTimeInterval: 0.15) }

    func testLevelTriggeredPauseResumeAndStop() throws {
        let (a, b) = try socketPair()
        defer { close(b) }
        let counter = Counter()
        nonisolated(unsafe) var channel: SocketChannel?
        onLoop {
            channel = SocketChannel(fd: a, loop: self.loop, onReadable: { counter.readable += 1 }, onWritable: {})
            channel?.startReading()
        }
        _ = write(b, "x", 1)
        // Nothing is read: level-triggered, so it is reported again and again (polled, not slept
        // on: a loaded machine may take longer than any fixed pause).
        waitFor("unread data reported again (level-triggered)", timeout: 10) { self.onLoop { counter.readable } > 1 }

        onLoop { channel?.pauseReading() }
        settle()
        let paused = onLoop { counter.readable }
        settle()
        XCTAssertEqual(onLoop { counter.readable }, paused, "a paused channel gets no readability")

        onLoop { channel?.resumeReading() }
        waitFor("a resumed channel delivered again", timeout: 10) { self.onLoop { counter.readable } > paused }

        onLoop { channel?.stopReading() }
        settle()
        let stopped = onLoop { counter.readable }
        settle()
        XCTAssertEqual(onLoop { counter.readable }, stopped, "stopped: nothing more")
        onLoop { channel?.close() }
    }

    func testWritabilityOnlyWhileArmedAndEndOfFileIsReadable() throws {
        let (a, b) = try socketPair()
        let counter = Counter()
        nonisolated(unsafe) var channel: SocketChannel?
        onLoop {
            channel = SocketChannel(fd: a, loop: self.loop, onReadable: {
                var byte: UInt8 = 0
                if read(a, &byte, 1) == 0 { counter.readable += 1; channel?.stopReading() }
            }, onWritable: {
                counter.writable += 1
                channel?.disarmWrite()
            })
            channel?.startReading()
        }
        settle()
        XCTAssertEqual(onLoop { counter.writable }, 0, "writable is not delivered unless armed")
        onLoop { channel?.armWrite() }
        waitFor("an armed channel told it is writable", timeout: 10) { self.onLoop { counter.writable } >= 1 }
        settle()
        XCTAssertEqual(onLoop { counter.writable }, 1, "armed: delivered once, then disarmed")
        close(b)
        waitFor("end of file delivered as readable", timeout: 10) { self.onLoop { counter.readable } >= 1 }
        settle()
        XCTAssertEqual(onLoop { counter.readable }, 1, "end of file is delivered as readable, once")
        onLoop { channel?.close() }
    }

    func testChannelClosedEarlierInTheSameBatchGetsNothing() throws {
        let (a1, b1) = try socketPair()
        let (a2, b2) = try socketPair()
        defer { close(b1); close(b2) }
        let counter = Counter()
        nonisolated(unsafe) var first: SocketChannel?
        nonisolated(unsafe) var second: SocketChannel?
        onLoop {
            // Whichever is delivered first closes the other one (both are ready in the same batch).
            first = SocketChannel(fd: a1, loop: self.loop, onReadable: {
                counter.readable += 1
                second?.close()
                first?.close()
            }, onWritable: {})
            second = SocketChannel(fd: a2, loop: self.loop, onReadable: {
                counter.readable += 1
                first?.close()
                second?.close()
            }, onWritable: {})
            first?.startReading()
            second?.startReading()
        }
        // Make both ready while the loop is busy, so one epoll_wait returns both.
        loop.queue.async {
            _ = write(b1, "x", 1)
            _ = write(b2, "y", 1)
            Thread.sleep(forTimeInterval: 0.05)
        }
        settle()
        XCTAssertEqual(onLoop { counter.readable }, 1, "the channel closed by the first handler gets no event")
    }

    func testHungUpSocketWithoutInterestDoesNotSpin() throws {
        let (a, b) = try socketPair()
        let counter = Counter()
        nonisolated(unsafe) var channel: SocketChannel?
        onLoop {
            channel = SocketChannel(fd: a, loop: self.loop, onReadable: { counter.readable += 1 }, onWritable: {
                counter.writable += 1
            })
            channel?.startReading()
            channel?.pauseReading()
        }
        close(b)
        settle()
        XCTAssertEqual(onLoop { counter.readable + counter.writable }, 0, "no interest: no events, no spin")
        onLoop { channel?.resumeReading() }
        settle()
        XCTAssertGreaterThan(onLoop { counter.readable }, 0, "interest again: the hang-up is delivered")
        onLoop { channel?.close() }
    }

    func testHandlersRunOnTheLoopQueueAndEndOfTurnWorkAfterTheBatch() throws {
        let (a, b) = try socketPair()
        defer { close(b) }
        let order = Counter()
        nonisolated(unsafe) var log: [String] = []
        let delivered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var channel: SocketChannel?
        onLoop {
            channel = SocketChannel(fd: a, loop: self.loop, onReadable: {
                var buffer = [UInt8](repeating: 0, count: 16)
                _ = read(a, &buffer, 16)
                log.append(self.loop.inEventLoop ? "handler on loop" : "handler off loop")
                // Known without asking Dispatch: this is the poller's thread running the loop's queue.
                if !self.loop.poller.isHandlingOnThisThread { log.append("handler not on the poller's thread") }
                self.loop.atEndOfTurn {
                    log.append("end of turn")
                    order.readable += 1
                    delivered.signal()
                }
                log.append("handler done")
            }, onWritable: {})
            channel?.startReading()
        }
        // The loop is idle (its thread blocked in epoll_wait): a write must wake it.
        Thread.sleep(forTimeInterval: 0.05)
        _ = write(b, "x", 1)
        XCTAssertEqual(delivered.wait(timeout: .now() + 5), .success, "an idle loop is woken by readiness")
        XCTAssertEqual(onLoop { log }, ["handler on loop", "handler done", "end of turn"])
        // Outside a batch, end-of-turn work runs next on the queue.
        let outside = DispatchSemaphore(value: 0)
        let loop = self.loop
        loop.execute { loop.atEndOfTurn { outside.signal() } }
        XCTAssertEqual(outside.wait(timeout: .now() + 5), .success)
        // Work hopped onto the queue runs on a Dispatch thread: still on the loop, by Dispatch's word.
        let hopped = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var hop: (onLoop: Bool, pollerThread: Bool) = (false, true)
        loop.execute {
            hop = (loop.inEventLoop, loop.poller.isHandlingOnThisThread)
            hopped.signal()
        }
        XCTAssertEqual(hopped.wait(timeout: .now() + 5), .success)
        XCTAssertTrue(hop.onLoop, "a hop runs on the loop")
        XCTAssertFalse(hop.pollerThread, "a hop is not the poller's turn")
        XCTAssertFalse(loop.inEventLoop, "the test's thread is not on the loop")
        let other = EventLoopGroup(loopCount: 1, timerResolution: 0.02)
        defer { other.shutdown() }
        XCTAssertFalse(other.loops[0].queue.sync { loop.inEventLoop }, "another loop's queue is not this loop")
        XCTAssertTrue(other.loops[0].queue.sync { other.loops[0].inEventLoop })
        onLoop { channel?.close() }
    }

    /// End-of-turn work queued as closures and as objects (`EndOfTurnWorker`) runs in the order it was
    /// queued, work queued by it runs in the same turn, every turn (the list's two buffers are swapped,
    /// not copied), and the loop lets go of a worker once it ran.
    func testEndOfTurnRunsClosuresAndWorkersInOrderAndLetsGoOfWorkers() throws {
        final class Worker: EndOfTurnWorker, @unchecked Sendable {  // confined to the loop's queue
            let name: String
            let record: (String) -> Void
            var then: (() -> Void)?
            init(_ name: String, _ record: @escaping (String) -> Void) { self.name = name; self.record = record }
            func endOfTurn() {
                record(name)
                then?()
            }
        }
        nonisolated(unsafe) var log: [String] = []
        nonisolated(unsafe) weak var released: Worker?
        let loop = self.loop
        for turn in 0..<3 {
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                let first = Worker("worker 1 of \(turn)") { log.append($0) }
                let second = Worker("worker 2 of \(turn)") { log.append($0) }
                second.then = {
                    loop.atEndOfTurn { log.append("queued by worker 2 of \(turn)") }
                    loop.atEndOfTurn(Worker("worker 3 of \(turn)") { log.append($0); done.signal() })
                }
                loop.atEndOfTurn(first)
                loop.atEndOfTurn { log.append("closure of \(turn)") }
                loop.atEndOfTurn(second)
                released = first
            }
            XCTAssertEqual(done.wait(timeout: .now() + 5), .success)
            XCTAssertEqual(onLoop { log }, ["worker 1 of \(turn)", "closure of \(turn)", "worker 2 of \(turn)",
                                           "queued by worker 2 of \(turn)", "worker 3 of \(turn)"])
            XCTAssertNil(onLoop { released }, "the loop let go of the worker after it ran")
            onLoop { log = [] }
        }
    }

    func testShutdownEndsTheWaitingThreadAndClosesItsDescriptors() throws {
        // Judged by this group's own pollers, not by the process's descriptor numbers: a loop group of
        // an earlier test may still be closing its sets while this one runs, and a number it frees can
        // be reused by this group at once.
        let extra = EventLoopGroup(loopCount: 2, timerResolution: 0.02)
        let pollers = extra.loops.map(\.poller)
        let descriptors = pollers.map(\.descriptor)
        XCTAssertEqual(Set(descriptors).count, 2, "one epoll set per loop")
        for fd in descriptors {
            XCTAssertEqual(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                           "anon_inode:[eventpoll]", "descriptor \(fd) is an epoll set")
        }
        XCTAssertFalse(pollers.contains(where: \.hasClosedDescriptors))
        extra.shutdown()
        let deadline = Date().addingTimeInterval(5)
        while !pollers.allSatisfy(\.hasClosedDescriptors) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(pollers.allSatisfy(\.hasClosedDescriptors),
                      "shutdown ends each loop's waiting thread, which closes its epoll set")
    }

    /// Counts ticks; on the loop's queue.
    private final class TickRecorder: EventLoopResident, @unchecked Sendable {  // confined to the loop's queue
        let loop: EventLoop
        let ticked = DispatchSemaphore(value: 0)
        var times: [UInt64] = []
        var offLoop = 0
        init(loop: EventLoop) { self.loop = loop }
        func tick(now: UInt64) {
            if !loop.inEventLoop { offLoop += 1 }
            times.append(now)
            ticked.signal()
        }
    }

    func testTicksRunOnTheLoopOnlyWhileItHasResidents() throws {
        let ticking = EventLoopGroup(loopCount: 1, timerResolution: 0.01)
        defer { ticking.shutdown() }
        let loop = ticking.loops[0]
        func eventually(_ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(5)
            while !condition() && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            return condition()
        }
        XCTAssertTrue(eventually { loop.poller.isWaitingIndefinitely },
                      "a loop without residents waits without a timeout (it never wakes to tick)")
        // The first resident wakes the thread out of its wait without a timeout; ticks follow.
        let recorder = TickRecorder(loop: loop)
        loop.queue.sync { loop.register(recorder) }
        for n in 1...3 {
            XCTAssertEqual(recorder.ticked.wait(timeout: .now() + 5), .success, "tick \(n) with a resident")
        }
        let (times, offLoop) = loop.queue.sync { (recorder.times, recorder.offLoop) }
        guard times.count >= 3 else { return XCTFail("no ticks with a resident: \(times)") }
        XCTAssertEqual(offLoop, 0, "ticks run on the loop's queue")
        XCTAssertEqual(times, times.sorted(), "tick times never go back")
        XCTAssertLessThan(times[0], times[2])
        XCTAssertLessThanOrEqual(times[2], EventLoop.now())
        // The last resident gone, the thread goes back to waiting without a timeout, and is still
        // there five tick intervals later (a ticking thread shows the flag only for the instant
        // between setting it and seeing `ticking`, then waits with it cleared).
        loop.queue.sync { loop.unregister(recorder) }
        XCTAssertTrue(eventually { loop.poller.isWaitingIndefinitely }, "no residents, no ticks")
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertTrue(loop.poller.isWaitingIndefinitely, "still waiting without a timeout")
        // And a new resident starts them again.
        loop.queue.sync { loop.register(recorder) }
        XCTAssertEqual(recorder.ticked.wait(timeout: .now() + 5), .success, "ticks resume with a new resident")
        loop.queue.sync { loop.unregister(recorder) }
    }
}
