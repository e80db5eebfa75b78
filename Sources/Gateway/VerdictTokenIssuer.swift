import AppAttest
import AttestCrypto
import GatewayConfig
import GatewayHTTP
import GatewayRules
import GatewayStore

/// Signed verdicts for one generation of the tables (issue 12): which `verdict_token` section signs
/// a request, the header it goes in, and the JWKS document served at `{endpoints.prefix}/jwks.json`
/// and on the admin listener.
///
/// Per forwarded request of an `enforce` or `monitor` route: one claims buffer, one signature, one
/// header (`<headers.prefix>Verdict-Token`, which ingress strips from clients as part of the family).
/// Thread-safe: immutable; the signers lock their own keys.
final class VerdictTokenIssuer: Sendable {
    /// What `attach` did.
    enum Outcome: Sendable, Equatable {
        /// The token was added.
        case attached
        /// No section applies to this request (nothing to sign).
        case notConfigured
        /// A section applies but it has no key yet (generated keys not read from the store yet).
        case noKey
    }

    /// The header's name (`<headers.prefix>Verdict-Token`).
    let headerName: String
    private let headerNameBytes: [UInt8]
    /// The top-level section's signer.
    let gateway: VerdictTokenSigner?
    /// Apps' own sections' signers by App ID.
    let apps: [String: VerdictTokenSigner]
    /// Every distinct signer (JWKS).
    let signers: [VerdictTokenSigner]

    /// The signers of `configuration`, or nil when no section is configured. Signers of generated
    /// keys in `previous` whose section did not change are kept (their keys, their schedule).
    /// - Throws: `GatewayStartupError` for an unusable key file.
    static func make(configuration: GatewayConfiguration, clock: GatewayClock, store: any AttestStore,
                     events: (@Sendable (String, [(String, String)]) -> Void)?, previous: VerdictTokenIssuer?) throws -> VerdictTokenIssuer? {
        let hasApps = configuration.apps.contains { $0.verdictToken != nil }
        guard configuration.verdictToken != nil || hasApps else { return nil }
        var made: [VerdictTokenSigner] = []
        func signer(_ section: VerdictTokenConfiguration, path: String) throws -> VerdictTokenSigner {
            if let same = made.first(where: { $0.configuration == section }) { return same }
            // Generated keys keep their signer (schedule, keys in memory); key files and secrets are
            // read again, so that a reload picks up files replaced in place.
            if case .generated? = section.keys, section.algorithm == .es256,
               let kept = previous?.signers.first(where: { $0.configuration == section }) {
                made.append(kept)
                return kept
            }
            // A changed section of generated keys under the same `store_key` starts with the keys
            // in memory (its refresh reads the store at once): the JWKS never goes empty.
            let predecessor = previous?.signers.first { old in
                guard case .generated(let key, _, _)? = section.keys, case .generated(let oldKey, _, _)? = old.configuration.keys else { return false }
                return key == oldKey && section.algorithm == .es256 && old.configuration.algorithm == .es256
            }
            let fresh = try VerdictTokenSigner(configuration: section, path: path, clock: clock, store: store, events: events,
                                               inheriting: predecessor)
            made.append(fresh)
            return fresh
        }
        let gateway = try configuration.verdictToken.map { try signer($0, path: "verdict_token") }
        var apps: [String: VerdictTokenSigner] = [:]
        for (index, app) in configuration.apps.enumerated() {
            if let section = app.verdictToken { apps[app.appID.description] = try signer(section, path: "apps[\(index)].verdict_token") }
        }
        return VerdictTokenIssuer(headerName: configuration.headers.prefix + "Verdict-Token", gateway: gateway, apps: apps, signers: made)
    }

    init(headerName: String, gateway: VerdictTokenSigner?, apps: [String: VerdictTokenSigner], signers: [VerdictTokenSigner]) {
        self.headerName = headerName
        headerNameBytes = Array(headerName.utf8)
        self.gateway = gateway
        self.apps = apps
        self.signers = signers
    }

    /// Whether every section can sign now (`VerdictTokenSigner.hasSigningKey`); when one cannot, it
    /// is asked to refresh at once. Checked before an enforced request is evaluated, so that a gateway
    /// whose generated keys were not read yet answers 503 before the challenge is consumed.
    func canSign() -> Bool {
        var ready = true
        for signer in signers where !signer.hasSigningKey {
            signer.refreshSoon()
            ready = false
        }
        return ready
    }

    /// Signs the verdict `report` of `request` and adds the token to `headers` (the fields being
    /// forwarded, verdict headers already set; `riskHeader` names the risk header to copy as `risk`).
    func attach(to headers: inout HTTPHeaders, report: VerdictReport, request: HTTPRequest, riskHeader: String) -> Outcome {
        let signer = report.appId.flatMap { apps[$0] } ?? gateway
        guard let signer else { return .notConfigured }
        let now = signer.clock.now()
        guard let key = signer.currentKey(now: now) else {
            signer.refreshSoon()
            return .noKey
        }
        let body = report.bodySHA256 ?? (request.body.isEmpty ? ClientDataBinding.emptyBodySHA256 : SHA256.hash(request.body))
        guard let payload = try? VerdictClaims.payload(report: report, method: request.head.method.bytes, target: request.head.target,
                                                       bodySHA256: body, risk: headers.first(riskHeader),
                                                       issuer: signer.configuration.issuer, issuedAt: now / 1000,
                                                       lifetime: signer.lifetimeSeconds),
              let token = try? key.sign(payload: payload) else { return .noKey }
        // Ingress stripped every client copy: the name is in the gateway's family.
        try? headers.add(name: headerNameBytes, value: token)
        return .attached
    }

    /// `{"keys":[...]}`: every published ES256 key of every section (by kid, once).
    func jwks() -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.beginArray("keys")
        var seen = Set<String>()
        for signer in signers {
            for key in signer.publishedKeys where seen.insert(key.kid).inserted { key.writeJWK(&json) }
        }
        json.endArray()
        json.endObject()
        return json.bytes
    }

    /// The JWKS answer: 200 `application/jwk-set+json`, cacheable for a minute (upstreams fetch it
    /// again when they meet an unknown kid; the next key is published well before it signs).
    func jwksResponse() -> HTTPResponse {
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "application/jwk-set+json")
        try? headers.add(name: "Cache-Control", value: "public, max-age=60")
        return HTTPResponse(status: 200, headers: headers, body: jwks())
    }
}
