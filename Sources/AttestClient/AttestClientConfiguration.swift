import Foundation

/// What `AttestClient` needs to know about the gateway and its own behaviour. Every field but
/// `gateway` has the gateway's default.
public struct AttestClientConfiguration: Sendable {
    /// Which registration the client performs.
    public enum Mode: String, Sendable, Codable {
        /// Device-key registration (`POST {prefix}/register`, DESIGN.md section 8), with an App Attest
        /// token where the device has App Attest; falls back to `appAttestOnly` when the gateway does
        /// not know the `register` challenge purpose (a gateway without registrations).
        case automatic
        /// Device-key registration only.
        case deviceKey
        /// App Attest alone (`POST {prefix}/attest`, requests signed with App Attest assertions).
        case appAttestOnly
    }

    /// The gateway's base URL, e.g. `https://api.example.com` (a path, if any, is kept in front of every target).
    public var gateway: URL
    /// The gateway's endpoint prefix (`endpoints.prefix`), default `/app-attest/v1`.
    public var prefix: String = "/app-attest/v1"
    /// The app's identifier `TEAMID.bundle.id`, sent as `appId` with registrations; the gateway needs it
    /// for a registration without App Attest when it serves several apps. nil: not sent.
    public var appId: String?
    /// Registration mode (default `.automatic`).
    public var mode: Mode = .automatic
    /// Integrity codes this app found (e.g. `jb_files`, `debugger`), sent with each registration.
    /// Short documented codes only, never paths or app names.
    public var integrityCodes: @Sendable () -> [String] = { [] }
    /// Seconds to wait for each answer (default 15).
    public var requestTimeout: Double = 15
    /// How many times a `retry` answer or a lost connection is retried per call (default 3).
    public var maxRetries: Int = 3
    /// First back-off delay in seconds (default 0.5); doubles per retry.
    public var retryBaseDelay: Double = 0.5
    /// Largest back-off delay in seconds (default 30), and the longest `Retry-After` the SDK waits: a
    /// gateway asking for more is not waited for (the call ends at once, `.unavailable`, with
    /// `ProtectedResponse.retryAfter` set).
    public var retryMaxDelay: Double = 30
    /// A passed result counts as valid until this many seconds before it expires (default 300).
    public var expiryMargin: Double = 300
    /// How many times Apple's `serverUnavailable` is retried within one attempt (default 2), with the
    /// same key and the same clientDataHash; after that the device key registers alone.
    public var appAttestRetries: Int = 2
    /// Seconds between those tries (default 2).
    public var appAttestRetryDelay: Double = 2
    /// Renew by itself shortly before expiry (and on return to the foreground on iOS). Default true.
    public var automaticRenewal: Bool = true
    /// The evidence header names (`headers.key_id`, `headers.challenge`, `headers.assertion`,
    /// the device-key signature header), defaults as the gateway's.
    public var keyIdHeader = "App-Attest-Key-Id"
    /// See `keyIdHeader`.
    public var challengeHeader = "App-Attest-Challenge"
    /// See `keyIdHeader`.
    public var assertionHeader = "App-Attest-Assertion"
    /// See `keyIdHeader`.
    public var signatureHeader = "App-Attest-Signature"
    /// The header naming the refusal code (`App-Attest-Error`).
    public var errorHeader = "App-Attest-Error"
    /// The next-challenge headers of DESIGN.md section 9.
    public var nextChallengeHeader = "App-Attest-Next-Challenge"
    /// See `nextChallengeHeader` (unix seconds).
    public var nextChallengeExpiresHeader = "App-Attest-Next-Challenge-Expires"

    /// A configuration for the gateway at `gateway` with every default.
    public init(gateway: URL) {
        self.gateway = gateway
    }
}
