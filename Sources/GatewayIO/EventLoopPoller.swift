// Readiness of one event loop's sockets: one epoll set, waited on by one thread that runs the
// handlers on the loop's Dispatch queue.

import CEpoll
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The I/O readiness of every socket of one event loop, delivered on the loop's queue.
///
/// The loop's sockets sit in one level-triggered epoll set. One thread per loop blocks in
/// `epoll_wait` on it and, when sockets are ready, runs the handlers **on the loop's serial
/// Dispatch queue** with `queue.sync` (libdispatch runs a `sync` block on the calling thread when the
/// queue is free, and waits its turn otherwise), so every handler stays confined to the loop's queue
/// and serialized with the loop's other Dispatch work (timers, `execute` hops). Each wake-up takes the
/// ready batch, then up to `roundsPerWakeup - 1` more batches with non-blocking `epoll_wait` calls,
/// ending every round with the end-of-turn work (`EventLoop.atEndOfTurn`).
///
/// Why a waiting thread and not a Dispatch read source (measured, README Performance): on Linux,
/// libdispatch's manager thread waits in epoll and hands every source event to a worker thread, then
/// re-arms the source through the manager - two thread wake-ups per readiness event on the request's
/// critical path (client, Redis, upstream). Per-socket sources cost that per socket; one source for
/// the loop's epoll set (the previous design) per batch. The waiting thread is woken by the kernel
/// directly, as nginx's workers are: on the enforced route 110.6 -> 98.6 us of CPU per request and
/// +13% throughput, in serial 240 -> 180 us of CPU and p50 334 -> 299 us.
///
/// Semantics kept from per-socket read/write sources: level-triggered (data left unread is reported
/// again), end of file and errors are reported as readable (and as writable while a write is armed),
/// and interest can be changed at any time (`SocketChannel` pauses, resumes and arms through here).
/// A socket with no interest is removed from the set, so a hung-up socket nobody listens to cannot
/// spin. Registrations carry a slot and a generation: an event fetched for a socket that was closed
/// (and whose descriptor number was reused) earlier in the same batch is dropped.
///
/// The same thread keeps the loop's clock: while the loop has residents (`ticking`), it waits at most
/// until the next tick is due (`tickInterval`), and runs the tick (`onTick`, on the queue) after the
/// ready sockets of a wake-up once it is due - under load without a wake-up of its own. With no
/// residents it waits without a timeout, so an idle loop costs no CPU at all (a repeating Dispatch
/// timer woke libdispatch's manager thread and a worker ten times a second per loop: 2 ms of CPU
/// per second with no traffic). `setTicking(true)` wakes a thread that waits without a timeout.
///
/// Confined to the loop's queue (every method and the handlers), except `stopped`, `ticking` and
/// `waitingIndefinitely` (atomics) and the thread's blocking wait, which touches only the epoll
/// descriptor, `events` and its own tick deadline before entering the queue.
package final class EventLoopPoller: @unchecked Sendable {  // state confined to `queue`; `stopped`, `ticking`, `waitingIndefinitely` atomic; `events` written by the waiting thread only before it enters `queue`
    /// Ready sockets taken per `epoll_wait`.
    package static let batchSize = 256

    private let epollFD: Int32
    /// An eventfd in the epoll set (token `wakeToken`) that `cancel()` writes to end the wait.
    private let wakeFD: Int32
    private let queue: DispatchQueue
    private let stopped = Atomic<Bool>(false)
    /// Whether the loop has residents to tick (`setTicking`).
    private let ticking = Atomic<Bool>(false)
    /// Set by the waiting thread while it is (about to be) in an `epoll_wait` without a timeout.
    private let waitingIndefinitely = Atomic<Bool>(false)
    /// Nanoseconds between ticks.
    private let tickInterval: UInt64
    /// The tick (`EventLoop`'s visit of its residents), with the monotonic time; run on the queue.
    /// Set once, before the first `setTicking(true)`.
    package var onTick: ((UInt64) -> Void)?
    /// Set by the waiting thread once it has closed the epoll set and its eventfd (after `cancel()`).
    private let descriptorsClosed = Atomic<Bool>(false)
    // Release builds drop the run-time exclusivity check of `channels`, `generations` and
    // `endOfTurn` (`@exclusivity(unchecked)`; debug builds keep it): confined to the queue, and every
    // access is a leaf (a slot's channel is read out before its handler runs; the end-of-turn list is
    // copied out before its work runs). bench/PERFORMANCE.md "Seventh pass".
    #if DEBUG
    private var channels: [SocketChannel?] = []
    #else
    @exclusivity(unchecked) private var channels: [SocketChannel?] = []
    #endif
    #if DEBUG
    private var generations: [UInt32] = []
    #else
    @exclusivity(unchecked) private var generations: [UInt32] = []
    #endif
    private var freeSlots: [Int] = []
    private let events: UnsafeMutablePointer<epoll_event>
    private static let wakeToken = UInt64.max

    /// A poller delivering on `queue`, ticking every `tickInterval` nanoseconds (at least 1 ms) while
    /// `setTicking(true)`; starts its waiting thread.
    /// - Throws: `Socket.Failure` when the epoll set, its eventfd or the thread cannot be created.
    package init(queue: DispatchQueue, tickInterval: UInt64 = 100_000_000) throws {
        self.tickInterval = max(tickInterval, 1_000_000)
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw Socket.Failure(call: "epoll_create1", errno: errno) }
        let wake = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wake >= 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw Socket.Failure(call: "eventfd", errno: e)
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = EventLoopPoller.wakeToken
        _ = epoll_ctl(fd, EPOLL_CTL_ADD, wake, &event)
        epollFD = fd
        wakeFD = wake
        self.queue = queue
        events = UnsafeMutablePointer<epoll_event>.allocate(capacity: EventLoopPoller.batchSize)
        // The thread owns a reference until it has closed the descriptors.
        let retained = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let poller = Unmanaged<EventLoopPoller>.fromOpaque(raw!).takeRetainedValue()
            poller.waitLoop()
            return nil
        }, retained.toOpaque())
        guard rc == 0 else {
            retained.release()
            _ = Glibc.close(wake)
            _ = Glibc.close(fd)
            throw Socket.Failure(call: "pthread_create", errno: rc)
        }
        pthread_detach(thread)
    }

    deinit {
        events.deallocate()
    }

    /// Ends the waiting thread, which then closes the epoll set. Any queue or thread.
    package func cancel() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake()
    }

    /// Starts (`true`) or stops the ticks; wakes the waiting thread when it waits without a timeout.
    /// Any thread (the loop calls it when its first resident arrives and its last one leaves).
    package func setTicking(_ on: Bool) {
        ticking.store(on, ordering: .sequentiallyConsistent)
        // Paired with the waiting thread's store-then-load in `waitLoop`: one of the two sees the other.
        if on && waitingIndefinitely.load(ordering: .sequentiallyConsistent) { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// The waiting thread: blocks until sockets are ready or the next tick is due, then handles the
    /// sockets and the tick on the loop's queue.
    private func waitLoop() {
        var nextTick: UInt64 = 0  // 0: not ticking when last looked
        while !stopped.load(ordering: .acquiring) {
            var timeout: Int32 = -1
            waitingIndefinitely.store(true, ordering: .sequentiallyConsistent)
            if ticking.load(ordering: .sequentiallyConsistent) {
                waitingIndefinitely.store(false, ordering: .relaxed)
                let now = EventLoop.now()
                if nextTick == 0 { nextTick = now &+ tickInterval }
                timeout = nextTick <= now ? 0 : Int32(clamping: (nextTick - now + 999_999) / 1_000_000)
            } else {
                nextTick = 0
            }
            let count = epoll_wait(epollFD, events, Int32(EventLoopPoller.batchSize), timeout)
            waitingIndefinitely.store(false, ordering: .relaxed)
            if stopped.load(ordering: .acquiring) { break }
            guard count > 0 || nextTick != 0 else { continue }  // EINTR while not ticking
            queue.sync {
                // This thread runs the loop's queue until the block returns (`isHandlingOnThisThread`).
                pthread_setspecific(EventLoopPoller.handlingKey, Unmanaged.passUnretained(self).toOpaque())
                defer { pthread_setspecific(EventLoopPoller.handlingKey, nil) }
                if count > 0 { self.handle(first: Int(count)) }
                guard nextTick != 0 else { return }
                // One clock read decides whether the tick is due and is its time: read after the
                // sockets were handled, never older than a time their handlers recorded (residents
                // compute `now - last progress` unsigned).
                let now = EventLoop.now()
                guard now >= nextTick else { return }
                // The next tick one interval on; after a long stall, one interval from now.
                nextTick = nextTick &+ tickInterval > now ? nextTick &+ tickInterval : now &+ tickInterval
                if !self.stopped.load(ordering: .acquiring) { self.onTick?(now) }
            }
        }
        _ = Glibc.close(wakeFD)
        _ = Glibc.close(epollFD)
        descriptorsClosed.store(true, ordering: .releasing)
    }

    /// The epoll set's descriptor (valid until `hasClosedDescriptors`), for tests and diagnostics.
    package var descriptor: Int32 { epollFD }

    /// Whether the waiting thread has ended and closed the epoll set and its eventfd (any thread).
    package var hasClosedDescriptors: Bool { descriptorsClosed.load(ordering: .acquiring) }

    /// Thread-specific slot naming the poller whose waiting thread is running the loop's queue
    /// (set for the length of its `queue.sync`), so that `isHandlingOnThisThread` costs one
    /// `pthread_getspecific` where `DispatchQueue.getSpecific` costs about 190 instructions.
    private static let handlingKey: pthread_key_t = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key, nil)
        precondition(rc == 0, "pthread_key_create: \(rc)")
        return key
    }()

    /// Whether the calling thread is this poller's waiting thread while it runs the loop's queue
    /// (handling ready sockets or the tick). `true` proves the caller is on the loop's queue;
    /// `false` proves nothing (Dispatch may run the queue on another thread): ask the queue then.
    @inline(__always) package var isHandlingOnThisThread: Bool {
        pthread_getspecific(EventLoopPoller.handlingKey) == Unmanaged.passUnretained(self).toOpaque()
    }

    /// Whether the waiting thread is in (or entering) a wait without a timeout: the loop is not
    /// ticking and nothing is ready. Any thread; for tests and diagnostics.
    package var isWaitingIndefinitely: Bool { waitingIndefinitely.load(ordering: .sequentiallyConsistent) }

    // MARK: registration (from SocketChannel)

    /// A slot for `channel` (kept until `release`); no interest yet.
    package func attach(_ channel: SocketChannel) -> Int {
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
    package func update(fd: Int32, slot: Int, from registered: UInt32, to interest: UInt32) -> UInt32 {
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
    package func release(slot: Int) {
        guard slot < channels.count, channels[slot] != nil else { return }
        channels[slot] = nil
        generations[slot] &+= 1
        freeSlots.append(slot)
    }

    // MARK: delivery

    /// One piece of end-of-turn work: a closure, or an object called back (`EndOfTurnWorker`).
    package enum EndOfTurnItem {
        case work(() -> Void)
        case worker(any EndOfTurnWorker)

        @inline(__always) func run() {
            switch self {
            case .work(let work): work()
            case .worker(let worker): worker.endOfTurn()
            }
        }
    }

    /// Work to run once the current batch of ready sockets is handled (`EventLoop.atEndOfTurn`).
    #if DEBUG
    package var endOfTurn: [EndOfTurnItem] = []
    #else
    @exclusivity(unchecked) package var endOfTurn: [EndOfTurnItem] = []
    #endif
    /// The list's second buffer: `runEndOfTurn` swaps the two, so that taking the queued work out
    /// allocates nothing (copying the list and emptying it with `keepingCapacity` made a new buffer
    /// every turn, the copy still sharing the old one).
    private var spareEndOfTurn: [EndOfTurnItem] = []
    /// Whether a batch is being handled (then end-of-turn work is drained by it).
    private(set) var polling = false
    /// Monotonic time (nanoseconds) read when the current round of ready sockets began
    /// (`EventLoop.turnTime`); valid while `polling`.
    private(set) var roundStart: UInt64 = 0

    /// Handles the `first` events the waiting thread fetched, then takes more ready sockets with
    /// non-blocking waits, at most `roundsPerWakeup` rounds in all, so the loop's other Dispatch work
    /// (timers, hops from other queues) gets its turn. Each round ends with the end-of-turn work
    /// (e.g. the Redis commands of the batch written with one send). On the loop's queue.
    private func handle(first: Int) {
        guard !stopped.load(ordering: .acquiring) else { return }
        polling = true
        defer { polling = false }
        var count = first
        for round in 0..<EventLoopPoller.roundsPerWakeup {
            if round > 0 {
                count = Int(epoll_wait(epollFD, events, Int32(EventLoopPoller.batchSize), 0))
                guard count > 0 else { return }
            }
            roundStart = EventLoop.now()
            for i in 0..<count {
                let token = events[i].data.u64
                if token == EventLoopPoller.wakeToken {
                    var drained: UInt64 = 0
                    _ = read(wakeFD, &drained, 8)  // `setTicking` woke the thread; `cancel` ends it anyway
                    continue
                }
                let slot = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
                guard slot < channels.count, generations[slot] == UInt32(truncatingIfNeeded: token >> 32),
                      let channel = channels[slot] else { continue }
                channel.ready(events[i].events)
            }
            runEndOfTurn()
        }
    }

    /// Runs (and empties) the end-of-turn list, including work added while it runs.
    package func runEndOfTurn() {
        while !endOfTurn.isEmpty {
            var work: [EndOfTurnItem] = []
            swap(&work, &spareEndOfTurn)  // an empty buffer with capacity (or [] when re-entered)
            swap(&work, &endOfTurn)       // the queued work out, the empty buffer in
            for item in work { item.run() }
            work.removeAll(keepingCapacity: true)
            if work.capacity > spareEndOfTurn.capacity { spareEndOfTurn = work }
        }
    }

    /// Rounds (the woken batch, then non-blocking `epoll_wait` calls) per wake-up at most.
    package static let roundsPerWakeup = 8
}
