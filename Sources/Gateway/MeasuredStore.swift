import GatewayIO
import GatewayStore

/// The store as the gateway's request path uses it, with every command counted and timed in
/// `GatewayMetrics` (`attest_gateway_store_*`), in the shard of the event loop that submitted it.
/// Answers and failures pass through unchanged.
///
/// Cost per command: one clock read at each end and one closure context for the wrapped completion.
final class MeasuredStore: AttestStore {
    /// The store it measures.
    let inner: any AttestStore
    let metrics: GatewayMetrics

    init(_ inner: any AttestStore, metrics: GatewayMetrics) {
        self.inner = inner
        self.metrics = metrics
    }

    /// The completion that counts and times the command in the shard of the submitting loop, then calls
    /// `completion` (the store commands here and the key lifecycle ones of `MeasuredStore+Lifecycle`).
    @inline(__always)
    func measured<T>(_ command: GatewayMetrics.StoreCommand,
                             _ completion: @escaping @Sendable (Result<T, StoreUnavailable>) -> Void)
        -> @Sendable (Result<T, StoreUnavailable>) -> Void {
        let loop = GatewayMetrics.currentLoop
        let start = EventLoop.now()
        let metrics = self.metrics
        return { result in
            var failure: StoreUnavailable?
            if case .failure(let error) = result { failure = error }
            metrics.store(command, loop: loop, nanoseconds: EventLoop.now() &- start, error: failure)
            completion(result)
        }
    }

    func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis,
                        now: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        inner.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt, now: now,
                             completion: measured(.issueChallenge, completion))
    }

    func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                     completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.registerKey(record, challenge: challenge, now: now, completion: measured(.registerKey, completion))
    }

    func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
        inner.fetchKey(keyId, completion: measured(.fetchKey, completion))
    }

    func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
        inner.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now,
                              completion: measured(.commitAssertion, completion))
    }

    func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                         issuing next: NextChallenge,
                         completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void) {
        inner.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now, issuing: next,
                              completion: measured(.commitAssertion, completion))
    }

    func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                          completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void) {
        inner.acquireFleetSlot(name, limit: limit, windowMillis: windowMillis, now: now,
                               completion: measured(.fleetSlot, completion))
    }

    func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        inner.revokeKey(keyId, completion: measured(.revokeKey, completion))
    }

    func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        inner.deleteKey(keyId, completion: measured(.deleteKey, completion))
    }

    func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        inner.ping(completion: measured(.ping, completion))
    }

    func close() { inner.close() }
}
