import AttestCrypto
import Dispatch
import Foundation
import GatewayConfig
import GatewayStore
import Synchronization

/// The keys of one `verdict_token` section and the key that signs now (issue 12 "Signed verdicts").
///
/// - HS256: the configured secret under its `key_id`; nothing is published.
/// - ES256 `key_files`: the first file signs, every file is published.
/// - ES256 generated: the fleet's key set (`VerdictKeyRotation`) in the store under `store_key`.
///   `refresh()` reads it, advances the schedule and, when that changed something, writes it back
///   with a compare-and-set (a replica that loses reads the winner's set): the first set is created
///   once for the fleet, every rotation happens once. A timer calls `refresh()` every quarter of
///   `publish_ahead` (between 250 ms and 60 s). Keys stay in memory: a store outage delays the next
///   rotation (the current key keeps signing), never the signing itself. Until the first read
///   succeeds there is no key (`currentKey` nil: the route's store-error rule decides, before the
///   request's challenge is consumed, `hasSigningKey`), and a request that finds none asks for a
///   refresh at once (`refreshSoon`, at most one a second) instead of waiting for the timer.
/// - A set missing from the store (Redis restarted without persistence, evicted, flushed) is written
///   again from the keys in memory, so tokens already issued keep verifying (`verdict_keys_restored`);
///   only a replica that holds none creates a new set. A reload that changes the section keeps the
///   keys of the same `store_key` (`inheriting`).
///
/// Thread-safe: the installed keys are behind `installed` (a `Mutex`); `timer` is set once in
/// `init` and only cancelled in `deinit`; the rest is immutable.
final class VerdictTokenSigner: @unchecked Sendable {  // `installed` is a Mutex; `timer` written once in init
    /// Keys as used for signing, in activation order.
    struct Installed: Sendable {
        /// Every published key (and, for HS256, the secret).
        var keys: [VerdictSigningKey] = []
        /// When each key of `keys` starts signing (unix ms); `Int64.max`: published only.
        var activations: [Int64] = []
        /// The set these came from (generated keys), to reuse parsed keys on the next install.
        var rotation = VerdictKeyRotation()
    }

    /// The section.
    let configuration: VerdictTokenConfiguration
    /// `exp - iat`, seconds.
    let lifetimeSeconds: Int64
    let clock: GatewayClock
    private let installed: Mutex<Installed>
    private let keyStore: (any VerdictKeyStore)?
    private let events: (@Sendable (String, [(String, String)]) -> Void)?
    private var timer: DispatchSourceTimer?
    /// Successful refreshes so far (tests wait for one).
    private let refreshes = Atomic<Int>(0)
    /// Whether the last refresh failed: a failure is logged once, when it starts, not on every tick.
    private let failing = Atomic<Bool>(false)
    /// Whether a key is installed (set once keys exist; they are never all dropped): the hot path's
    /// check before an enforced request consumes anything, without taking `installed`'s lock.
    private let keyInstalled = Atomic<Bool>(false)
    /// When `refreshSoon` last started a refresh (monotonic ns; 0: never).
    private let lastSoonRefresh = Atomic<UInt64>(0)

    /// Builds the signer of `configuration`; generated keys start their first refresh now.
    /// - Throws: `GatewayStartupError` naming `path` when a key file cannot be read or is not a
    ///   P-256 private key.
    /// `inheriting`: the signer this one replaces at a reload, whose generated keys (same `store_key`)
    /// this one starts with, so that the JWKS and the signing never go empty while the store is read.
    init(configuration: VerdictTokenConfiguration, path: String, clock: GatewayClock, store: any AttestStore,
         events: (@Sendable (String, [(String, String)]) -> Void)?, inheriting: VerdictTokenSigner? = nil) throws {
        self.configuration = configuration
        self.clock = clock
        self.events = events
        lifetimeSeconds = max(1, GatewayRuntime.millis(configuration.lifetime) / 1000)
        var initial = Installed()
        switch (configuration.algorithm, configuration.keys) {
        case (.hs256, _):
            initial.keys = [VerdictSigningKey(hs256: configuration.secret ?? [], kid: configuration.keyID ?? "")]
            initial.activations = [Int64.min]
            keyStore = nil
        case (.es256, .files(let files)?):
            for (index, file) in files.enumerated() {
                let key: ECPrivateKey
                do {
                    key = try ECPrivateKey(pem: try String(contentsOfFile: file, encoding: .utf8))
                } catch {
                    throw GatewayStartupError("\(path).key_files[\(index)]: \(file) is not a readable PEM private key (\(error))")
                }
                do {
                    initial.keys.append(try VerdictSigningKey(es256: key))
                } catch {
                    throw GatewayStartupError("\(path).key_files[\(index)]: \(file) is not a P-256 key (ES256 needs P-256)")
                }
                initial.activations.append(index == 0 ? Int64.min : Int64.max)
            }
            keyStore = nil
        case (.es256, _):
            keyStore = VerdictKeyStores.make(for: store)
            if let inheriting, case .generated(let key, _, _)? = configuration.keys,
               case .generated(let previousKey, _, _)? = inheriting.configuration.keys, key == previousKey {
                initial = inheriting.installed.withLock { $0 }
            }
        }
        installed = Mutex(initial)
        keyInstalled.store(!initial.keys.isEmpty, ordering: .releasing)
        if case .generated(_, _, let ahead)? = configuration.keys, configuration.algorithm == .es256 {
            let period = min(60.0, max(0.25, GatewayRuntime.seconds(ahead) / 4))
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "attest-gateway.verdict-keys"))
            timer.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in self?.refresh() }
            self.timer = timer
            timer.resume()
            refresh()
        }
    }

    /// What is wrong with a `key_files` entry (unreadable, not an unencrypted PEM private key, not
    /// P-256), nil when it can sign: `check-config` and reloads report it at its key path.
    static func keyFileProblem(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "cannot read \(path)" }
        guard let key = try? ECPrivateKey(pem: text) else { return "\(path) is not an unencrypted PEM private key" }
        guard (try? VerdictSigningKey(es256: key)) != nil else { return "\(path) is not a P-256 key (ES256 needs P-256)" }
        return nil
    }

    deinit { timer?.cancel() }

    /// Stops looking at the store (shutdown); the keys in memory still sign.
    func stop() { timer?.cancel() }

    /// The rotation schedule of generated keys (nil otherwise).
    var policy: VerdictKeyRotation.Policy? {
        guard case .generated(_, let rotation, let ahead)? = configuration.keys, configuration.algorithm == .es256 else { return nil }
        return VerdictKeyRotation.Policy(rotation: GatewayRuntime.millis(rotation), publishAhead: GatewayRuntime.millis(ahead),
                                         tokenLifetime: lifetimeSeconds * 1000)
    }

    /// The key that signs at `now` (unix ms), nil when there is none yet.
    func currentKey(now: Int64) -> VerdictSigningKey? {
        installed.withLock { state in
            var chosen: VerdictSigningKey?
            for (index, activation) in state.activations.enumerated() where activation <= now { chosen = state.keys[index] }
            return chosen
        }
    }

    /// Whether a key can sign (cheap: an atomic load). False only before generated keys were first
    /// read from the store.
    var hasSigningKey: Bool { keyInstalled.load(ordering: .acquiring) }

    /// Starts a refresh now unless one started less than a second ago (a request found no key: the
    /// store may be back, and the timer can be a minute away).
    func refreshSoon() {
        guard keyStore != nil else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let last = lastSoonRefresh.load(ordering: .relaxed)
        guard last == 0 || now &- last >= 1_000_000_000,
              lastSoonRefresh.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else { return }
        refresh()
    }

    /// Every key published now (ES256: what the JWKS lists).
    var publishedKeys: [VerdictSigningKey] { installed.withLock { $0.keys } }

    /// Successful refreshes of a generated key set so far.
    var refreshCount: Int { refreshes.load(ordering: .acquiring) }

    /// Reads the fleet's key set, advances it to now and writes it back when it changed (generated
    /// keys only; otherwise nothing). `completion` (tests) runs once it is installed or failed.
    func refresh(attempt: Int = 0, completion: (@Sendable (Bool) -> Void)? = nil) {
        guard let keyStore, let policy, case .generated(let storeKey, _, _)? = configuration.keys else {
            completion?(false)
            return
        }
        keyStore.load(key: storeKey) { [self] result in
            switch result {
            case .failure(let error):
                failed("verdict_keys_unavailable", [("store_key", storeKey), ("detail", "\(error)")])
                completion?(false)
            case .success(let found):
                // No set in the store: start from the keys in memory, if any (their tokens must keep
                // verifying), rather than from nothing.
                var rotation = found == nil ? installed.withLock { $0.rotation } : VerdictKeyRotation()
                let restoring = found == nil && !rotation.entries.isEmpty
                if let found {
                    guard let decoded = VerdictKeyRotation(decoding: found.document) else {
                        failed("verdict_keys_unreadable", [("store_key", storeKey),
                                                           ("effect", "signing with the keys in memory; delete the key to start a new set")])
                        completion?(false)
                        return
                    }
                    rotation = decoded
                }
                let now = clock.now()
                var next = rotation
                let change: VerdictKeyRotation.Change
                do {
                    change = try next.advance(now: now, policy: policy) {
                        let key = try ECPrivateKey(generatingOn: .p256)
                        return (try VerdictSigningKey(es256: key).kid, try key.pkcs8DER())
                    }
                } catch {
                    failed("verdict_keys_unavailable", [("store_key", storeKey), ("detail", "key generation failed: \(error)")])
                    completion?(false)
                    return
                }
                guard !change.isEmpty || restoring else {
                    install(rotation)
                    completion?(true)
                    return
                }
                let advanced = next
                keyStore.replace(key: storeKey, expected: found?.version ?? 0, document: advanced.encoded()) { [self] written in
                    switch written {
                    case .success(true):
                        install(advanced)
                        if restoring {
                            events?("verdict_keys_restored", [("store_key", storeKey), ("keys", String(advanced.entries.count)),
                                                              ("detail", "the key set was missing from the store; written again from this replica's keys")])
                        }
                        if let added = change.added { events?("verdict_key_added", [("store_key", storeKey), ("kid", added)]) }
                        completion?(true)
                    case .success(false) where attempt < 3:
                        refresh(attempt: attempt + 1, completion: completion)  // another replica was first: take its set
                    case .success(false):
                        completion?(false)
                    case .failure(let error):
                        failed("verdict_keys_unavailable", [("store_key", storeKey), ("detail", "\(error)")])
                        completion?(false)
                    }
                }
            }
        }
    }

    /// Logs a failed refresh when the previous one succeeded (one line per outage).
    private func failed(_ name: String, _ fields: [(String, String)]) {
        if !failing.exchange(true, ordering: .acquiringAndReleasing) { events?(name, fields) }
    }

    /// Makes `rotation` the keys in use (keys already parsed are reused).
    private func install(_ rotation: VerdictKeyRotation) {
        if failing.exchange(false, ordering: .acquiringAndReleasing), case .generated(let storeKey, _, _)? = configuration.keys {
            events?("verdict_keys_recovered", [("store_key", storeKey)])
        }
        let previous = installed.withLock { $0 }
        guard previous.rotation != rotation || previous.keys.isEmpty else {
            refreshes.add(1, ordering: .releasing)
            return
        }
        var byKid: [String: VerdictSigningKey] = [:]
        for key in previous.keys { byKid[key.kid] = key }
        var made = Installed(rotation: rotation)
        for entry in rotation.entries {
            if let key = byKid[entry.kid] ?? (try? ECPrivateKey(pkcs8DER: entry.material)).flatMap({ try? VerdictSigningKey(es256: $0) }) {
                made.keys.append(key)
                made.activations.append(entry.activatesAt)
            }
        }
        installed.withLock { $0 = made }
        if !made.keys.isEmpty { keyInstalled.store(true, ordering: .releasing) }
        refreshes.add(1, ordering: .releasing)
    }
}
