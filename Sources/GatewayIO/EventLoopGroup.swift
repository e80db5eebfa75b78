// A fixed set of event loops shared by servers and upstream pools.

import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small fixed set of event loops (serial Dispatch queues), by default one per CPU core.
///
/// Servers' loops accept connections themselves and keep them (spread by load); upstream pools keep idle connections
/// per loop, so a proxied exchange never leaves the loop of its downstream connection. A server and
/// the upstream pools it forwards to must share one group.
public final class EventLoopGroup: Sendable {
    /// The loops, indexed by `EventLoop.index`.
    public let loops: [EventLoop]
    /// How often each loop checks its connections' deadlines, in seconds (timeouts fire up to this late).
    public let timerResolution: Double
    private let nextIndex = Atomic<Int>(0)

    /// Creates `loopCount` loops (default: the number of online CPU cores, at least 1).
    /// - Parameters:
    ///   - timerResolution: seconds between deadline checks (default 0.1 s; tests use less).
    ///   - readBufferSize: bytes of the per-loop receive buffer (default 64 KiB).
    public init(loopCount: Int? = nil, timerResolution: Double = 0.1, readBufferSize: Int = 65536) {
        let count = max(1, loopCount ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        self.timerResolution = timerResolution
        var loops: [EventLoop] = []
        let identity = EventLoopGroupIdentity()
        for i in 0..<count {
            loops.append(EventLoop(index: i, groupID: ObjectIdentifier(identity), timerResolution: timerResolution,
                                   readBufferSize: max(4096, readBufferSize)))
        }
        self.loops = loops
        self.identity = identity
    }

    private let identity: EventLoopGroupIdentity

    /// Identity shared by the loops of this group.
    package var id: ObjectIdentifier { ObjectIdentifier(identity) }

    /// The next loop, round-robin (thread-safe).
    public func next() -> EventLoop {
        let i = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: i) % UInt(loops.count))]
    }

    /// Stops the loops' timers (call when the group is no longer used; connections must be closed first).
    public func shutdown() {
        // Called from one of the loops when the last connection's close completes a shutdown:
        // that loop stops its timer directly (a sync onto its own queue would trap).
        for loop in loops {
            if loop.inEventLoop { loop.stop() } else { loop.queue.sync { loop.stop() } }
        }
    }
}

/// A unique object whose identity names one group.
package final class EventLoopGroupIdentity: Sendable {}
