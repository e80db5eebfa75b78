/// An object with work to do once its event loop's current turn is over
/// (`EventLoop.atEndOfTurn(_:)` with an object instead of a closure).
///
/// Why objects as well as closures: a connection that flushes once per turn would otherwise make a
/// closure per turn (an allocation each time), or keep one closure that captures it weakly - and a
/// weak reference gives the object a side table for its whole life, after which every retain and
/// release of it takes the Swift runtime's slow path (bench/PERFORMANCE.md, "Session 32"). The loop
/// holds the object strongly only while it is queued.
public protocol EndOfTurnWorker: AnyObject {
    /// Called once per `atEndOfTurn(_:)`, on the loop's queue, at the end of the turn.
    func endOfTurn()
}
