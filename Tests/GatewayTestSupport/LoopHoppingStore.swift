import Dispatch
import GatewayStore
import Synchronization

/// A store wrapper for tests of stores that live in event loops: every call is made on one of
/// `loops` (alternating), as the gateway's event loops make them; completions are the inner
/// store's (with `RedisStore` in loop mode they run on the calling loop).
public final class LoopHoppingStore: AttestStore, Sendable {
    /// The store every call goes to.
    public let inner: any AttestStore
    /// The queues calls are made from, in turn.
    public let loops: [DispatchQueue]
    private let next = Atomic<Int>(0)

    /// Calls `inner` from `loops`, alternating.
    public init(_ inner: any AttestStore, loops: [DispatchQueue]) {
        self.inner = inner
        self.loops = loops
    }

    private func onLoop(_ work: @escaping @Sendable () -> Void) {
        loops[next.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count].async(execute: work)
    }

    public func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis,
                        now: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        onLoop { self.inner.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt, now: now, completion: completion) }
    }

    public func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                     completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        onLoop { self.inner.registerKey(record, challenge: challenge, now: now, completion: completion) }
    }

    public func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
        onLoop { self.inner.fetchKey(keyId, completion: completion) }
    }

    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
        onLoop { self.inner.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now,
                                            completion: completion) }
    }

    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                issuing next: NextChallenge,
                                completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void) {
        onLoop { self.inner.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now,
                                            issuing: next, completion: completion) }
    }

    public func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                                 completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void) {
        onLoop { self.inner.acquireFleetSlot(name, limit: limit, windowMillis: windowMillis, now: now, completion: completion) }
    }

    public func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        onLoop { self.inner.revokeKey(keyId, completion: completion) }
    }

    public func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        onLoop { self.inner.deleteKey(keyId, completion: completion) }
    }

    public func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        onLoop { self.inner.ping(completion: completion) }
    }

    public func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                  completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        onLoop { self.inner.registerDeviceKey(record, challenge: challenge, now: now, completion: completion) }
    }

    public func registerVouchingKey(_ record: KeyRecord,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        onLoop { self.inner.registerVouchingKey(record, completion: completion) }
    }

    public func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        onLoop { self.inner.commitSignedRequest(keyId: keyId, challenge: challenge, now: now, completion: completion) }
    }

    public func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                          completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        onLoop { self.inner.recordRegistrationRefusal(keyId: keyId, now: now, completion: completion) }
    }

    /// Closes `inner` from the calling thread (calls made afterwards reach it closed).
    public func close() { inner.close() }
}
