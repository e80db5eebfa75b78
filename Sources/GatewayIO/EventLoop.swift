// One event loop: a serial DispatchQueue that owns connections, their buffers and timers.

import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Something living on an event loop (a connection) that is told about time passing.
package protocol EventLoopResident: AnyObject {
    /// Called on the loop's queue every timer tick with the monotonic time in nanoseconds.
    func tick(now: UInt64)
}

/// A serial Dispatch queue that runs the I/O of the connections assigned to it.
///
/// All state of a connection (parser, buffers, socket interest, timers) is confined to its loop's
/// queue, so none of it needs locks. Socket readiness comes from the loop's `EventLoopPoller` (one
/// thread waiting in epoll per loop, running the handlers on the loop's queue). Timeouts are checked
/// by a tick that visits every resident (resolution `EventLoopGroup.timerResolution`), instead of
/// arming a timer per request; the poller's thread keeps the tick (its wait ends when one is due),
/// and a loop without residents does not tick, so it never wakes.
public final class EventLoop: @unchecked Sendable {  // mutable state confined to `queue`
    /// Position of this loop in its group (0-based).
    public let index: Int
    /// The serial queue every event of this loop runs on.
    public let queue: DispatchQueue
    /// Identity of the owning group (upstream pools are per group).
    package let groupID: ObjectIdentifier

    /// Receive buffer shared by every connection of this loop (the loop is serial, so one read at a time).
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// Readiness of this loop's sockets (one epoll set; its waiting thread runs handlers on this queue).
    package let poller: EventLoopPoller
    private var residents: [ObjectIdentifier: any EventLoopResident] = [:]
    private var cachedDateSecond = 0
    private var endOfTurnScheduled = false
    private var cachedDate: [UInt8] = []
    private let key = DispatchSpecificKey<ObjectIdentifier>()

    package init(index: Int, groupID: ObjectIdentifier, timerResolution: Double, readBufferSize: Int) {
        self.index = index
        self.groupID = groupID
        queue = DispatchQueue(label: "attest-gateway.loop.\(index)", qos: .userInitiated)
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBufferSize, alignment: 16)
        do {
            poller = try EventLoopPoller(queue: queue,
                                         tickInterval: UInt64(max(0.001, timerResolution) * 1e9))
        } catch {
            fatalError("attest-gateway: cannot create the event loop's epoll set: \(error)")
        }
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
        poller.onTick = { [weak self] now in self?.tickAll(now: now) }
    }

    deinit {
        poller.cancel()
        readBuffer.deallocate()
    }

    /// Stops the ticks and the poller's waiting thread (the group is shutting down).
    package func stop() {
        poller.cancel()
    }

    /// Runs `work` on this loop's queue, asynchronously.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on this loop's queue once the current turn is over: after the batch of ready
    /// sockets being handled (before the loop looks for more), or, outside a batch, as the next
    /// item on the queue. Work added by end-of-turn work runs in the same turn. Call on the queue.
    /// Used to coalesce writes (all the Redis commands of one batch in one send).
    public func atEndOfTurn(_ work: @escaping () -> Void) {
        poller.endOfTurn.append(.work(work))
        scheduleEndOfTurn()
    }

    /// `atEndOfTurn(_:)` with an object: calls `worker.endOfTurn()` then, holding it until then. No
    /// allocation per call (a closure would be one), for work that recurs every turn.
    public func atEndOfTurn(_ worker: any EndOfTurnWorker) {
        poller.endOfTurn.append(.worker(worker))
        scheduleEndOfTurn()
    }

    private func scheduleEndOfTurn() {
        guard !poller.polling, !endOfTurnScheduled else { return }
        endOfTurnScheduled = true
        queue.async { [self] in
            endOfTurnScheduled = false
            poller.runEndOfTurn()
        }
    }

    /// Whether the caller runs on this loop's queue: at once when the caller is the poller's thread
    /// handling this loop's sockets (where requests are handled), else asked of Dispatch.
    @inline(__always) public var inEventLoop: Bool {
        poller.isHandlingOnThisThread || DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self)
    }

    /// Monotonic time in nanoseconds: `CLOCK_MONOTONIC`, the clock of `DispatchTime.uptimeNanoseconds`
    /// on Linux (so a deadline from here can arm a Dispatch timer), read without libdispatch's
    /// conversion layers (`dispatch_time`: about 200 instructions a read).
    @inline(__always) package static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(truncatingIfNeeded: ts.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: ts.tv_nsec)
    }

    /// Monotonic time in nanoseconds for work on this loop's queue: while a round of ready sockets
    /// is handled, the time that round began (one clock read per round, as nginx updates its time
    /// once per wake-up: every event of the round sees the same time, at most the round's own
    /// duration behind the clock); otherwise the clock read now. Good for deadlines and latencies;
    /// call on the loop's queue.
    @inline(__always) package var turnTime: UInt64 { poller.polling ? poller.roundStart : EventLoop.now() }

    /// Adds `resident` to the ticks (the loop starts ticking with its first resident). On the queue.
    package func register(_ resident: any EventLoopResident) {
        residents[ObjectIdentifier(resident)] = resident
        if residents.count == 1 { poller.setTicking(true) }
    }

    /// Removes `resident` from the ticks (the loop stops ticking after its last). On the queue.
    package func unregister(_ resident: any EventLoopResident) {
        guard residents.removeValue(forKey: ObjectIdentifier(resident)) != nil else { return }
        if residents.isEmpty { poller.setTicking(false) }
    }

    /// Every resident (a snapshot), for shutdown.
    package var allResidents: [any EventLoopResident] { Array(residents.values) }

    private func tickAll(now: UInt64) {
        for resident in residents.values { resident.tick(now: now) }
    }

    /// The bytes `Date: <IMF-fixdate>\r\n` (RFC 9110 section 6.6.1), cached per second.
    package func dateHeaderLine() -> [UInt8] {
        var t = time(nil)
        let second = Int(t)
        if second == cachedDateSecond && !cachedDate.isEmpty { return cachedDate }
        var tmv = tm()
        gmtime_r(&t, &tmv)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let text = "Date: \(days[Int(tmv.tm_wday) % 7]), \(two(tmv.tm_mday)) \(months[Int(tmv.tm_mon) % 12]) "
            + "\(tmv.tm_year + 1900) \(two(tmv.tm_hour)):\(two(tmv.tm_min)):\(two(tmv.tm_sec)) GMT\r\n"
        cachedDate = Array(text.utf8)
        cachedDateSecond = second
        return cachedDate
    }
}
