// Readiness of one event loop's sockets: one epoll set, watched by one Dispatch read source.

import CEpoll
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The I/O readiness of every socket of one event loop, delivered on the loop's queue.
///
/// Why not one Dispatch source per socket: on Linux, libdispatch hands every source event from its
/// manager thread (epoll) to a worker thread, and after the handler the source is pushed back to the
/// manager to be re-armed (an eventfd write waking the manager, an `epoll_ctl`, a context switch) -
/// per socket event. Here the loop's sockets sit in one level-triggered epoll set whose descriptor is
/// watched by **one** `DispatchSourceRead` on the loop's queue: when any socket is ready, Dispatch
/// wakes the loop once and the handler takes every ready socket of the set with one non-blocking
/// `epoll_wait` (up to `batchSize`; the rest fire the source again). The event loop stays a Dispatch
/// queue driven by a Dispatch source (DESIGN.md section 5); the per-socket cost is one entry in a
/// ready list instead of a round trip through the manager thread.
///
/// Semantics kept from per-socket read/write sources: level-triggered (data left unread is reported
/// again), end of file and errors are reported as readable (and as writable while a write is armed),
/// and interest can be changed at any time (`SocketChannel` pauses, resumes and arms through here).
/// A socket with no interest is removed from the set, so a hung-up socket nobody listens to cannot
/// spin. Registrations carry a slot and a generation: an event fetched for a socket that was closed
/// (and whose descriptor number was reused) earlier in the same batch is dropped.
///
/// Confined to the loop's queue (every method, and the handler).
final class EventLoopPoller {
    /// Ready sockets taken per `epoll_wait`.
    static let batchSize = 256

    private let epollFD: Int32
    private var source: DispatchSourceRead?
    private var channels: [SocketChannel?] = []
    private var generations: [UInt32] = []
    private var freeSlots: [Int] = []
    private let events: UnsafeMutablePointer<epoll_event>

    /// A poller delivering on `queue`.
    /// - Throws: `Socket.Failure` when the epoll set cannot be created.
    init(queue: DispatchQueue) throws {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw Socket.Failure(call: "epoll_create1", errno: errno) }
        epollFD = fd
        events = UnsafeMutablePointer<epoll_event>.allocate(capacity: EventLoopPoller.batchSize)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [unowned self] in self.poll() }
        source.setCancelHandler { _ = Glibc.close(fd) }
        self.source = source
        source.activate()
    }

    deinit {
        events.deallocate()
    }

    /// Stops delivering events and closes the epoll set (once the source's cancel handler ran).
    func cancel() {
        source?.cancel()
        source = nil
    }

    // MARK: registration (from SocketChannel)

    /// A slot for `channel` (kept until `release`); no interest yet.
    func attach(_ channel: SocketChannel) -> Int {
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            channels[slot] = channel
        } else {
            slot = channels.count
            channels.append(channel)
            generations.append(0)
        }
        return slot
    }

    /// Applies `interest` (epoll event bits, 0 for none) to `fd`, which was registered with
    /// `registered` (0 for none). Returns the interest now registered.
    func update(fd: Int32, slot: Int, from registered: UInt32, to interest: UInt32) -> UInt32 {
        guard interest != registered else { return registered }
        if interest == 0 {
            var unused = epoll_event()
            _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &unused)
            return 0
        }
        var event = epoll_event()
        event.events = interest
        event.data.u64 = UInt64(slot) | UInt64(generations[slot]) << 32
        if epoll_ctl(epollFD, registered == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) != 0 {
            // ENOENT / EEXIST: our bookkeeping and the kernel's disagree; take the kernel's word.
            let e = errno
            if e == ENOENT { _ = epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
            else if e == EEXIST { _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) }
        }
        return interest
    }

    /// Frees the slot of a channel that is closing (events already fetched for it are dropped).
    /// Call after removing its interest and before closing its descriptor.
    func release(slot: Int) {
        guard slot < channels.count, channels[slot] != nil else { return }
        channels[slot] = nil
        generations[slot] &+= 1
        freeSlots.append(slot)
    }

    // MARK: delivery

    /// Work to run once the current batch of ready sockets is handled (`EventLoop.atEndOfTurn`).
    var endOfTurn: [() -> Void] = []
    /// Whether `poll()` is running (then end-of-turn work is drained by it).
    private(set) var polling = false

    /// Takes ready sockets until none is left, at most `roundsPerWakeup` times: what became ready
    /// while a batch was being handled is taken without another trip through Dispatch; the bound
    /// lets the loop's other work (timers, hops from other queues) run in between. Each round ends
    /// with the end-of-turn work (e.g. the Redis commands of the batch written with one send).
    ///
    /// Measured and dropped: waiting a little (`epoll_pwait2`, 200 us) for the next event before
    /// returning to Dispatch. Dispatch's manager thread watches the epoll set too, so it wakes for
    /// those events anyway; serial latency did not move.
    private func poll() {
        polling = true
        defer { polling = false }
        for _ in 0..<EventLoopPoller.roundsPerWakeup {
            let count = epoll_wait(epollFD, events, Int32(EventLoopPoller.batchSize), 0)
            guard count > 0 else { return }
            for i in 0..<Int(count) {
                let token = events[i].data.u64
                let slot = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
                guard slot < channels.count, generations[slot] == UInt32(truncatingIfNeeded: token >> 32),
                      let channel = channels[slot] else { continue }
                channel.ready(events[i].events)
            }
            runEndOfTurn()
        }
    }

    /// Runs (and empties) the end-of-turn list, including work added while it runs.
    func runEndOfTurn() {
        while !endOfTurn.isEmpty {
            let work = endOfTurn
            endOfTurn.removeAll(keepingCapacity: true)
            for item in work { item() }
        }
    }

    /// Non-blocking `epoll_wait` rounds per Dispatch wake-up at most.
    static let roundsPerWakeup = 8
}
