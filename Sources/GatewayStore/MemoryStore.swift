import Dispatch
import Foundation

/// The embedded in-process store (DESIGN.md section 4): the default for trying the gateway without
/// Redis, with exactly the semantics of `RedisStore` (both pass the shared conformance suite).
///
/// State lives in two dictionaries behind one lock; every operation is one critical section, so each
/// commit is atomic like the Redis Lua scripts. Completions are called synchronously on the calling
/// thread, after the lock is released, before the method returns.
///
/// Challenge lifetime mirrors Redis TTLs: a challenge is purged `challengeGrace` after its lifetime
/// (`expiresAt - now` at issue) measured on the store's own `clock`, lazily when touched and by a
/// periodic bounded sweep; the expiry *decision* uses the caller's injected `now`. State is lost when
/// the process exits or the store is closed (this store is not for production fleets).
public final class MemoryStore: AttestStore, @unchecked Sendable {  // all mutable state guarded by `lock`
    /// Tunables of the memory store.
    public struct Configuration: Sendable {
        /// How long a challenge is kept after its expiry so a late use answers `challenge_expired`, ms.
        public var challengeGrace: UnixMillis = 60_000
        /// Period of the background sweep of purgeable challenges, ms; 0 disables the timer
        /// (purging then happens only on access and through `sweep()`).
        public var sweepInterval: UnixMillis = 1_000
        /// Most challenges purged per sweep (keeps each critical section short).
        public var sweepBudget: Int = 10_000
        /// Most challenges held at once; `issueChallenge` fails with `.overloaded` beyond it.
        public var maximumChallenges: Int = 1_000_000
        /// The store's own clock in ms (monotonic by default), used only for purging; inject for tests.
        public var clock: @Sendable () -> UnixMillis = MemoryStore.monotonicMillis

        /// Defaults: 60 s grace, 1 s sweep, 10 000 per sweep, 1 000 000 challenges, monotonic clock.
        public init() {}
    }

    struct Slot: Hashable {
        let keyId: KeyID
        let challenge: Challenge
    }

    struct PendingChallenge {
        let purpose: ChallengePurpose
        let expiresAt: UnixMillis
        /// On `configuration.clock`.
        let purgeAt: UnixMillis
    }

    private let configuration: Configuration
    let lock = NSLock()
    var keys: [KeyID: KeyRecord] = [:]
    var challenges: [Slot: PendingChallenge] = [:]
    /// Account indexes (`KeyLifecycleStore`): per account hash, keyId -> (createdAt, expiresAt).
    var accounts: [AccountHash: [KeyID: (createdAt: UnixMillis, expiresAt: UnixMillis?)]] = [:]
    /// Registration back-off per device key, with the caller's time after which it is forgotten.
    private var backoffs: [KeyID: (backoff: RegistrationBackoff, forgetAt: UnixMillis)] = [:]
    /// Min-heap of (purgeAt, slot); may hold stale entries for consumed or re-issued challenges.
    private var purgeHeap: [(purgeAt: UnixMillis, slot: Slot)] = []
    private var timer: DispatchSourceTimer?
    /// Set by `close()`: every call then fails as `.closed`.
    var closed = false
    /// Fleet counters by name: the window index and the uses counted in it.
    private var fleetCounters: [String: (window: Int64, count: Int)] = [:]
    /// The receipt refresher's schedule and leases (`MemoryStore+ReceiptRefresh.swift`).
    private var refresh = MemoryReceiptRefreshState()

    /// What `withOpenState` hands to its body (under `lock`).
    struct LockedState {
        var keys: [KeyID: KeyRecord]
        var refresh: MemoryReceiptRefreshState
    }

    /// Runs `body` on the key records and refresher state under the lock (with the store's clock), or
    /// fails as `.closed`. For the extensions of this store in other files.
    func withOpenState<T>(_ body: (inout LockedState, UnixMillis) -> T) -> Result<T, StoreUnavailable> {
        lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            var state = LockedState(keys: keys, refresh: refresh)
            keys = [:]
            defer { keys = state.keys; refresh = state.refresh }
            return .success(body(&state, configuration.clock()))
        }
    }

    /// Creates an empty store and starts its sweep timer (unless `sweepInterval` is 0).
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        if configuration.sweepInterval > 0 {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            let interval = DispatchTimeInterval.milliseconds(Int(clamping: configuration.sweepInterval))
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
            timer.setEventHandler { [weak self] in _ = self?.sweep() }
            timer.resume()
            self.timer = timer
        }
    }

    deinit { timer?.cancel() }

    /// Milliseconds of a monotonic clock (`DispatchTime.now()`), the default purge clock.
    @Sendable public static func monotonicMillis() -> UnixMillis {
        UnixMillis(clamping: DispatchTime.now().uptimeNanoseconds / 1_000_000)
    }

    /// Number of challenges held (expired-but-not-purged included); for tests and metrics.
    public var challengeCount: Int { lock.withLock { challenges.count } }

    /// Purges up to `sweepBudget` challenges whose purge time passed on the store's clock.
    /// - Returns: how many were purged.
    @discardableResult
    public func sweep() -> Int {
        lock.withLock { sweepLocked(clockNow: configuration.clock(), budget: configuration.sweepBudget) }
    }

    private func sweepLocked(clockNow: UnixMillis, budget: Int) -> Int {
        var purged = 0
        while purged < budget, let top = purgeHeap.first, top.purgeAt <= clockNow {
            popHeap()
            if let entry = challenges[top.slot], entry.purgeAt <= clockNow {
                challenges[top.slot] = nil
                purged += 1
            }
        }
        return purged
    }

    // MARK: AttestStore

    /// The answer of every call after `close()`.
    static let closedError = StoreUnavailable(.closed, detail: "store closed")

    /// See `AttestStore.close`: drops every challenge and key record, stops the sweep timer; later
    /// calls complete with `.failure(StoreUnavailable(.closed))`.
    public func close() {
        let timer: DispatchSourceTimer? = lock.withLock {
            closed = true
            keys = [:]
            challenges = [:]
            accounts = [:]
            backoffs = [:]
            fleetCounters = [:]
            purgeHeap = []
            refresh = MemoryReceiptRefreshState()
            defer { self.timer = nil }
            return self.timer
        }
        timer?.cancel()
    }

    /// See `AttestStore.issueChallenge`; fails with `.overloaded` at `maximumChallenges`.
    public func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose,
                               expiresAt: UnixMillis, now: UnixMillis,
                               completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        let lifetime = StoreLimits.challengeLifetime(expiresAt: expiresAt, now: now)
        let result: Result<Void, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            let slot = Slot(keyId: keyId, challenge: challenge)
            guard storeChallengeLocked(slot, purpose: purpose, expiresAt: expiresAt, lifetime: lifetime) else {
                return .failure(StoreUnavailable(.overloaded, detail: "memory store holds \(challenges.count) challenges"))
            }
            return .success(())
        }
        completion(result)
    }

    /// Stores a pending challenge (lock held); false when the store is full even after a sweep.
    private func storeChallengeLocked(_ slot: Slot, purpose: ChallengePurpose, expiresAt: UnixMillis,
                                      lifetime: UnixMillis) -> Bool {
        let clockNow = configuration.clock()
        if challenges.count >= configuration.maximumChallenges && challenges[slot] == nil {
            _ = sweepLocked(clockNow: clockNow, budget: configuration.sweepBudget)
            if challenges.count >= configuration.maximumChallenges { return false }
        }
        let purgeAt = clockNow.addingClamped(lifetime).addingClamped(max(configuration.challengeGrace, 0))
        challenges[slot] = PendingChallenge(purpose: purpose, expiresAt: expiresAt, purgeAt: purgeAt)
        pushHeap(purgeAt: purgeAt, slot: slot)
        if purgeHeap.count > 2 * max(challenges.count, 1024) { rebuildHeap() }
        return true
    }

    /// See `AttestStore.registerKey` (one critical section).
    public func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                            completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<Void>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            let slot = Slot(keyId: record.keyId, challenge: challenge)
            if let refusal = checkChallenge(slot, purpose: .attest, now: now) { return .success(.refused(refusal)) }
            if keys[record.keyId] != nil { return .success(.refused(.keyExists)) }
            keys[record.keyId] = record
            challenges[slot] = nil
            return .success(.accepted(()))
        }
        completion(result)
    }

    /// See `AttestStore.fetchKey`.
    public func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
        let result: Result<KeyRecord?, StoreUnavailable> = lock.withLock {
            closed ? .failure(MemoryStore.closedError) : .success(keys[keyId])
        }
        completion(result)
    }

    /// See `AttestStore.commitAssertion` (one critical section).
    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<CommittedAssertion>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            return .success(commitLocked(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now))
        }
        completion(result)
    }

    /// See `AttestStore.commitAssertion(keyId:challenge:counter:window:now:issuing:completion:)`: the
    /// commit and the next challenge in one critical section. The next challenge is stored after
    /// the commit decided (so it can never be the one the commit consumes); a full store
    /// (`maximumChallenges`) leaves it out (`nextIssued == false`) without failing the commit.
    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                issuing next: NextChallenge,
                                completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void) {
        let lifetime = StoreLimits.challengeLifetime(expiresAt: next.expiresAt, now: now)
        let result: Result<AssertionCommit, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            let outcome = commitLocked(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now)
            var issued = false
            if AssertionCommit.issuesNext(after: outcome) {
                issued = storeChallengeLocked(Slot(keyId: keyId, challenge: next.challenge), purpose: .assert,
                                              expiresAt: next.expiresAt, lifetime: lifetime)
            }
            return .success(AssertionCommit(outcome: outcome, nextIssued: issued))
        }
        completion(result)
    }

    /// The commit's checks and effects (lock held).
    private func commitLocked(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int,
                              now: UnixMillis) -> StoreOutcome<CommittedAssertion> {
        guard var record = keys[keyId] else { return .refused(.keyUnknown) }
        guard record.status == .active else { return .refused(.keyRevoked) }
        if let expiresAt = record.expiresAt, now >= expiresAt { return .refused(.keyExpired) }
        let slot = Slot(keyId: keyId, challenge: challenge)
        if let refusal = checkChallenge(slot, purpose: .assert, now: now) { return .refused(refusal) }
        guard let admitted = record.replayWindow.admit(counter: counter, highest: record.counter, size: window) else {
            return .refused(.counterReplay)
        }
        record.counter = admitted.highest
        record.replayWindow = admitted.window
        keys[keyId] = record
        challenges[slot] = nil
        return .accepted(record.committedFields)
    }

    /// See `AttestStore.acquireFleetSlot` (one process is the whole fleet; one counter per name).
    public func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                                 completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void) {
        let (index, remaining) = MemoryStore.fleetWindow(now: now, windowMillis: windowMillis)
        let result: Result<FleetSlot, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            var counter = fleetCounters[name] ?? (index, 0)
            if counter.window != index { counter = (index, 0) }
            counter.count += 1
            fleetCounters[name] = counter
            return .success(counter.count > limit ? .refused(retryAfterMillis: remaining) : .granted)
        }
        completion(result)
    }

    /// See `AttestStore.revokeKey`.
    public func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        let result: Result<Bool, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            guard keys[keyId] != nil else { return .success(false) }
            keys[keyId]?.status = .revoked
            return .success(true)
        }
        completion(result)
    }

    /// See `AttestStore.deleteKey`.
    public func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        let result: Result<Bool, StoreUnavailable> = lock.withLock {
            closed ? .failure(MemoryStore.closedError) : .success(keys.removeValue(forKey: keyId) != nil)
        }
        completion(result)
    }

    /// See `AttestStore.registerDeviceKey` (one critical section).
    public func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                  completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<Void>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            let slot = Slot(keyId: record.keyId, challenge: challenge)
            if let refusal = checkChallenge(slot, purpose: .register, now: now) { return .success(.refused(refusal)) }
            if let existing = keys[record.keyId] {
                // Only an active record whose registration expired is replaced (AttestStore.registerDeviceKey).
                guard existing.status == .active, let expiresAt = existing.expiresAt, now >= expiresAt else {
                    return .success(.refused(.keyExists))
                }
            }
            keys[record.keyId] = record
            challenges[slot] = nil
            backoffs[record.keyId] = nil
            return .success(.accepted(()))
        }
        completion(result)
    }

    /// See `AttestStore.registerVouchingKey` (one critical section): never replaces a record.
    public func registerVouchingKey(_ record: KeyRecord,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<Void>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            if keys[record.keyId] != nil { return .success(.refused(.keyExists)) }
            keys[record.keyId] = record
            return .success(.accepted(()))
        }
        completion(result)
    }

    /// See `AttestStore.commitSignedRequest` (one critical section).
    public func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<Void>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            guard let record = keys[keyId] else { return .success(.refused(.keyUnknown)) }
            guard record.status == .active else { return .success(.refused(.keyRevoked)) }
            if let expiresAt = record.expiresAt, now >= expiresAt { return .success(.refused(.keyExpired)) }
            let slot = Slot(keyId: keyId, challenge: challenge)
            if let refusal = checkChallenge(slot, purpose: .assert, now: now) { return .success(.refused(refusal)) }
            challenges[slot] = nil
            return .success(.accepted(()))
        }
        completion(result)
    }

    /// See `AttestStore.recordRegistrationRefusal` (one critical section). The count is forgotten
    /// seven days after `retryAt` on the caller's clock (Redis: the record's TTL).
    public func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                          completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        let result: Result<RegistrationBackoff, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            var previous = 0
            if let held = backoffs[keyId], now < held.forgetAt { previous = held.backoff.refusals }
            let refusals = min(previous, 1_000_000) + 1
            let delay = RegistrationBackoff.delay(refusals: refusals)
            let backoff = RegistrationBackoff(refusals: refusals, retryAt: now.addingClamped(delay))
            backoffs[keyId] = (backoff, backoff.retryAt.addingClamped(RegistrationBackoff.maximumDelay))
            return .success(backoff)
        }
        completion(result)
    }

    /// Succeeds (in-process) until `close()`.
    public func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        let isClosed = lock.withLock { closed }
        completion(isClosed ? .failure(MemoryStore.closedError) : .success(()))
    }

    // MARK: Internals (called with `lock` held)

    /// The challenge checks shared by register and commit; purges a challenge past its grace lazily.
    func checkChallenge(_ slot: Slot, purpose: ChallengePurpose, now: UnixMillis) -> StoreRefusal? {
        guard let entry = challenges[slot] else { return .challengeUnknown }
        if entry.purgeAt <= configuration.clock() {
            challenges[slot] = nil
            return .challengeUnknown
        }
        if now >= entry.expiresAt { return .challengeExpired }
        if entry.purpose != purpose { return .challengeWrongPurpose }
        return nil
    }

    private func pushHeap(purgeAt: UnixMillis, slot: Slot) {
        purgeHeap.append((purgeAt, slot))
        var child = purgeHeap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard purgeHeap[child].purgeAt < purgeHeap[parent].purgeAt else { break }
            purgeHeap.swapAt(child, parent)
            child = parent
        }
    }

    private func popHeap() {
        guard !purgeHeap.isEmpty else { return }
        purgeHeap.swapAt(0, purgeHeap.count - 1)
        purgeHeap.removeLast()
        siftDown(from: 0)
    }

    private func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < purgeHeap.count && purgeHeap[left].purgeAt < purgeHeap[smallest].purgeAt { smallest = left }
            if right < purgeHeap.count && purgeHeap[right].purgeAt < purgeHeap[smallest].purgeAt { smallest = right }
            if smallest == parent { return }
            purgeHeap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Drops stale heap entries: rebuilds the heap from the live challenges.
    private func rebuildHeap() {
        purgeHeap = challenges.map { ($0.value.purgeAt, $0.key) }
        var index = purgeHeap.count / 2
        while index > 0 { index -= 1; siftDown(from: index) }
    }
}

extension Int64 {
    /// `self + other`, saturating at the bounds instead of trapping.
    func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
