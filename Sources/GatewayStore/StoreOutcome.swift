/// The verdict of a store operation that checks evidence: either it committed (and carries what it
/// returns) or it refused with a stable reason and changed nothing. Infrastructure failures never appear
/// here: they are the `.failure(StoreUnavailable)` side of the completion's `Result`.
public enum StoreOutcome<Value: Sendable>: Sendable {
    /// All checks passed and the change was committed atomically.
    case accepted(Value)
    /// A check failed; nothing was changed.
    case refused(StoreRefusal)

    /// The refusal, if any.
    public var refusal: StoreRefusal? {
        if case .refused(let reason) = self { return reason }
        return nil
    }

    /// The accepted value, if any.
    public var value: Value? {
        if case .accepted(let value) = self { return value }
        return nil
    }
}

extension StoreOutcome: Equatable where Value: Equatable {}
