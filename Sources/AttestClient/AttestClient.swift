import Foundation

/// The app side of the gateway (DESIGN.md section 9): registers this install's key, keeps the result
/// across launches, renews it, and signs protected requests, following every `action` the gateway
/// answers. One instance per gateway; share it across the app.
///
/// Blocking calls (`attest()`, `renewAttestation()`, `storedAttestation()`, `forgetAttestation()`,
/// `send(_:)`) make network requests or read the Keychain: never call them on the main thread; each has
/// an `async` twin. Nothing throws: failures are results (`Attestation.verdict`, `ProtectedResponse.verdict`).
///
/// Thread-safe: `attest`, `renewAttestation` and `forgetAttestation` run one at a time (so concurrent
/// first calls create one key, and forgetting waits for an attestation in progress); `send` may run
/// concurrently with anything.
public final class AttestClient: @unchecked Sendable {  // mutable state guarded by `lock`; attest/renew/forget serialized by `operation`
    /// The configuration it was created with.
    public let configuration: AttestClientConfiguration
    let appAttest: any AppAttestService
    let keys: any DeviceKeyFactory
    let store: any AttestationStore
    let transport: any HTTPTransport
    let clock: any AttestClock
    let jitter: @Sendable () -> Double
    let retry: RetryPolicy

    /// Guards every `var` below.
    let lock = NSLock()
    /// Held for the whole of attest, renew and forget.
    let operation = NSLock()
    var last: Attestation?
    var registration: StoredRegistration?
    var deviceKey: (any DeviceKeySigner)?
    /// The next challenge the gateway handed out, for the key named `kid`.
    var nextChallenge: (kid: String, bytes: Data, expiresAt: Double)?
    var refreshAt: Double?
    var renewalGeneration = 0
    /// Renewals in a row whose result still asked to be renewed at once (`renewAfter` in the past).
    var staleRenewals = 0
    /// A registration passed while the back-off after spent attestations had a count: the count is
    /// cleared once a protected request is accepted (the registration lasted), not before.
    var backoffCountPending = false
    #if canImport(UIKit) && !os(watchOS)
    var foregroundObserver: NSObjectProtocol?
    #endif

    /// Names of the `AttestationStore` items.
    enum Item {
        static let deviceKey = "device-key"
        static let appAttestKey = "app-attest-key"
        static let registration = "registration"
        static let backoff = "registration-backoff"
    }

    /// A client with every part given (tests, and apps that bring their own storage or networking).
    /// - Parameters:
    ///   - configuration: the gateway and the behaviour.
    ///   - appAttest: Apple's App Attest service (`DeviceCheckAppAttestService`), or `UnavailableAppAttestService`.
    ///   - deviceKeys: where device keys come from (`SecureEnclaveKeyFactory`, `SoftwareKeyFactory`).
    ///   - store: what survives relaunches (`KeychainAttestationStore`, `FileAttestationStore`).
    ///   - transport: HTTP (default `URLSessionTransport`).
    ///   - clock: time (default `SystemClock`).
    ///   - jitter: random numbers in [0, 1) for back-off jitter (default `Double.random(in:)`).
    public init(configuration: AttestClientConfiguration, appAttest: any AppAttestService, deviceKeys: any DeviceKeyFactory,
                store: any AttestationStore, transport: any HTTPTransport = URLSessionTransport(), clock: any AttestClock = SystemClock(),
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.configuration = configuration
        self.appAttest = appAttest
        self.keys = deviceKeys
        self.store = store
        self.transport = transport
        self.clock = clock
        self.jitter = jitter
        self.retry = RetryPolicy(base: configuration.retryBaseDelay, cap: configuration.retryMaxDelay, maxRetries: max(0, configuration.maxRetries))
        #if canImport(UIKit) && !os(watchOS)
        if configuration.automaticRenewal {
            // UIApplication.willEnterForegroundNotification by its raw name (no main-actor UIKit symbol here).
            foregroundObserver = NotificationCenter.default.addObserver(forName: Notification.Name("UIApplicationWillEnterForegroundNotification"),
                                                                        object: nil, queue: nil) { [weak self] _ in
                DispatchQueue.global(qos: .utility).async { self?.renewIfDue(generation: nil) }
            }
        }
        #endif
    }

    /// A client with this platform's parts: DeviceCheck's App Attest, Secure Enclave keys and the Keychain
    /// on Apple platforms; no App Attest, software keys and `FileAttestationStore.defaultDirectory()` elsewhere.
    public convenience init(configuration: AttestClientConfiguration) {
        #if canImport(DeviceCheck) && canImport(CryptoKit) && canImport(Security)
        let service: any AppAttestService
        if #available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) { service = DeviceCheckAppAttestService() } else { service = UnavailableAppAttestService() }
        self.init(configuration: configuration, appAttest: service, deviceKeys: SecureEnclaveKeyFactory(), store: KeychainAttestationStore())
        #else
        self.init(configuration: configuration, appAttest: UnavailableAppAttestService(), deviceKeys: SoftwareKeyFactory(),
                  store: FileAttestationStore(directory: FileAttestationStore.defaultDirectory()))
        #endif
    }

    deinit {
        #if canImport(UIKit) && !os(watchOS)
        if let foregroundObserver { NotificationCenter.default.removeObserver(foregroundObserver) }
        #endif
    }

    // MARK: - The public API

    /// Registers this install's key with the gateway (once; a passed result is cached, across launches
    /// too, until `expiryMargin` before it expires) and returns the result. Blocking: up to
    /// `requestTimeout` per request, and as long again for App Attest. Never throws.
    ///
    /// After a registration attempt that spent an App Attest attestation and did not end in a lasting
    /// registration (refused, unanswered, malformed, or with App Attest alone its key told to re-attest
    /// within the hour), answers `.failed` without contacting the gateway for one hour, doubling per
    /// such attempt in a row up to seven days; `detail` says until when.
    public func attest() -> Attestation {
        operation.lock()
        defer { operation.unlock() }
        if let valid = validRegistration() {
            lock.locked { last = valid.attestation }
            scheduleRenewal(valid)
            return valid.attestation
        }
        let (result, stored) = register(replacing: nil)
        return record(result, stored)
    }

    /// Registers again now, even while the current result is valid (e.g. before a sensitive step).
    /// When that fails, the previous valid result is kept and returned, its `detail` saying why the
    /// renewal failed. Blocking; never throws.
    public func renewAttestation() -> Attestation {
        operation.lock()
        defer { operation.unlock() }
        let previous = validRegistration()
        let (result, stored) = renew(previous)
        if result.verdict == .passed || previous == nil { return record(result, stored) }
        var kept = previous!.attestation
        kept.detail = "renewal failed, the previous result is kept: \(result.detail ?? result.verdict.rawValue)"
        lock.locked { last = kept }
        scheduleRetryOfRenewal(previous!)
        return kept
    }

    /// The valid registration this install holds, without any network request or App Attest call; nil
    /// when `attest()` would have to register. A registration found this way is renewed automatically.
    /// Reads the store (the Keychain): call it off the main thread.
    public func storedAttestation() -> Attestation? {
        guard let valid = validRegistration() else { return nil }
        scheduleRenewal(valid)
        return valid.attestation
    }

    /// Forgets this install's registration (telling the gateway, best effort) and any wait after refused
    /// registrations, so that the next `attest()` registers from the start. The device key is kept.
    /// Automatic renewal stops until the next `attest()`. Waits for an `attest()` in progress.
    public func forgetAttestation() {
        operation.lock()
        defer { operation.unlock() }
        if let current = lock.locked({ registration }) ?? loadRegistration() { tellGatewayToForget(current) }
        lock.locked {
            last = nil
            registration = nil
            nextChallenge = nil
            refreshAt = nil
            renewalGeneration += 1
            staleRenewals = 0
            backoffCountPending = false
        }
        try? store.set(nil, for: Item.registration)
        try? store.set(nil, for: Item.backoff)
    }

    /// The last result of `attest()` or `renewAttestation()`, without attesting again; nil before the first.
    public var lastAttestation: Attestation? { lock.locked { last } }

    /// When the automatic renewal will next run; nil when none is planned.
    public var nextAttestationRefresh: Date? {
        lock.locked { refreshAt.map { Date(timeIntervalSince1970: $0) } }
    }

    // MARK: - async twins

    /// `attest()` off the calling task's thread.
    public func attest() async -> Attestation { await Self.offload { self.attest() } }
    /// `renewAttestation()` off the calling task's thread.
    public func renewAttestation() async -> Attestation { await Self.offload { self.renewAttestation() } }
    /// `storedAttestation()` off the calling task's thread.
    public func storedAttestation() async -> Attestation? { await Self.offload { self.storedAttestation() } }
    /// `forgetAttestation()` off the calling task's thread.
    public func forgetAttestation() async { await Self.offload { self.forgetAttestation() } }
    /// `send(_:)` off the calling task's thread.
    public func send(_ request: ProtectedRequest) async -> ProtectedResponse { await Self.offload { self.send(request) } }

    /// Runs blocking `work` on a global queue (never on the cooperative pool).
    static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: work()) }
        }
    }

    // MARK: - State

    /// The registration in memory, else the persisted one, when still valid (loaded into memory).
    func validRegistration() -> StoredRegistration? {
        let now = clock.now()
        let margin = configuration.expiryMargin
        if let current = lock.locked({ registration }), current.isValid(now: now, margin: margin) { return current }
        guard let stored = loadRegistration(), stored.isValid(now: now, margin: margin) else { return nil }
        lock.locked { if registration == nil { registration = stored } }
        return stored
    }

    func loadRegistration() -> StoredRegistration? {
        store.data(for: Item.registration).flatMap { try? JSONDecoder().decode(StoredRegistration.self, from: $0) }
    }

    /// Makes `result` the last one; a passed one (with `stored`) becomes the registration, persisted and scheduled for renewal.
    func record(_ result: Attestation, _ stored: StoredRegistration?) -> Attestation {
        lock.locked { last = result }
        guard result.verdict == .passed, var stored else { return result }
        stored.obtainedAt = clock.now()
        lock.locked { registration = stored }
        if let data = try? JSONEncoder().encode(stored) { try? store.set(data, for: Item.registration) }
        // The back-off stops; its count waits for an accepted request (a key refused at once keeps doubling it).
        if let data = store.data(for: Item.backoff), let backoff = try? JSONDecoder().decode(RegistrationBackoff.self, from: data) {
            if let cleared = try? JSONEncoder().encode(RegistrationBackoff(refusals: backoff.refusals, until: 0)) { try? store.set(cleared, for: Item.backoff) }
            lock.locked { backoffCountPending = true }
        }
        schedule(at: plannedRefresh(stored, now: clock.now()))
        return result
    }

    /// Drops `stale` (the registration a `reattest` answer refused), unless it was replaced meanwhile.
    /// Compared whole, not by kid: a registration made again with the same device key has the same
    /// kid, and a concurrent send refused for the old one must not drop it (each such send would
    /// otherwise register once more).
    func invalidate(_ stale: StoredRegistration) {
        let dropped: Bool = lock.locked {
            guard registration == stale else { return false }
            registration = nil
            nextChallenge = nil
            return true
        }
        if dropped || loadRegistration() == stale { try? store.set(nil, for: Item.registration) }
    }

    // MARK: - Renewal

    /// When `registration` should be renewed: the gateway's `renewAfter`, else `expiryMargin` before expiry.
    func refreshTime(_ registration: StoredRegistration) -> Double? {
        if let renewAfter = registration.attestation.renewAfter { return Double(renewAfter) }
        return registration.attestation.expiresAt.map { Double($0) - configuration.expiryMargin - 60 }
    }

    /// The shortest time between automatic renewals, in seconds (a quarter of the remaining lifetime
    /// when that is shorter).
    static let minimumRenewalGap: Double = 60
    /// The longest wait between renewals whose refresh time stays in the past (one day).
    static let longestStaleRenewalWait: Double = 86_400

    /// When to renew `registration`, just obtained at `now`: the gateway's refresh time, but never
    /// sooner than `minimumRenewalGap` from now. A refresh time in the past (the device's clock ahead of
    /// the gateway's, or a hostile `renewAfter`) waits 60 s, doubling with each renewal in a row that
    /// did not move it into the future, up to a day: a skewed clock never makes a renewal storm.
    func plannedRefresh(_ registration: StoredRegistration, now: Double) -> Double? {
        guard let time = refreshTime(registration) else {
            lock.locked { staleRenewals = 0 }
            return nil
        }
        if time > now {
            var gap = Self.minimumRenewalGap
            if let expiresAt = registration.attestation.expiresAt { gap = min(gap, max(1, (Double(expiresAt) - now) / 4)) }
            lock.locked { staleRenewals = 0 }
            return max(time, now + gap)
        }
        let stale: Int = lock.locked {
            staleRenewals += 1
            return staleRenewals
        }
        return now + min(Self.longestStaleRenewalWait, Self.minimumRenewalGap * pow(2, Double(min(stale - 1, 20))))
    }

    /// Arms the renewal of a registration found valid (the cache, the store): the time already planned
    /// for it, else its refresh time.
    func scheduleRenewal(_ registration: StoredRegistration) {
        let planned: Double? = lock.locked { refreshAt }
        schedule(at: planned ?? refreshTime(registration))
    }

    /// After a failed renewal of a still valid registration: again in 5 minutes, or at its expiry margin.
    func scheduleRetryOfRenewal(_ registration: StoredRegistration) {
        let now = clock.now()
        var at = now + 300
        if let expiresAt = registration.attestation.expiresAt { at = min(at, max(now + 30, Double(expiresAt) - configuration.expiryMargin)) }
        schedule(at: at)
    }

    func schedule(at time: Double?) {
        let generation: Int = lock.locked {
            refreshAt = time
            renewalGeneration += 1
            return renewalGeneration
        }
        guard let time, configuration.automaticRenewal else { return }
        let delay = max(1, time - clock.now())
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [weak self] in
            self?.renewIfDue(generation: generation)
        }
    }

    /// Renews when the planned refresh time has come (and, for a timer, when it is still the planned one).
    func renewIfDue(generation: Int?) {
        let due: Bool = lock.locked {
            guard let refreshAt, generation == nil || generation == renewalGeneration else { return false }
            return refreshAt <= clock.now() + 1
        }
        if due { _ = renewAttestation() }
    }
}
