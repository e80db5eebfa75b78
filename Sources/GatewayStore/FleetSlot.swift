/// The answer of `AttestStore.acquireFleetSlot`: whether one more use of a fleet-wide limit fits
/// in the current window.
public enum FleetSlot: Sendable, Equatable {
    /// Counted; within the limit.
    case granted
    /// The window's limit is used up; the next window starts in `retryAfterMillis` (>= 1).
    case refused(retryAfterMillis: UnixMillis)
}
