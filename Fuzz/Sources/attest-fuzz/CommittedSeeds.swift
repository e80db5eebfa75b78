import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation

/// The seeds committed under Fuzz/corpus/NAME (`attest-fuzz seeds all Fuzz/corpus`): minted by the
/// simulator under Fuzz/testca (random device keys: re-running makes new, equivalent seeds) or
/// written by hand. Nothing here comes from ../shared.
enum CommittedSeeds {
    /// Fuzz/testca, next to this source folder.
    static let testCADirectory: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("testca").path
    }()

    static let appId = "ABCDE12345.com.example.fuzz"
    static let now = CivilTime.secondsSinceEpoch(year: 2026, month: 1, day: 1, hour: 0, minute: 0, second: 0)

    struct Minted {
        var attestations: [(String, MintedAttestation, policy: UInt8)] = []
        var assertions: [(String, MintedAssertion, publicKey: [UInt8], previous: UInt32)] = []
        var receipts: [(String, [UInt8])] = []
        var ca: TestCA
    }

    static func mint() throws -> Minted {
        let ca = try TestCA.load(directory: testCADirectory)
        guard ca.root.derBytes == FuzzTrust.testRoot.derBytes else {
            throw SimulatorError.invalidCA("Fuzz/testca/root.pem differs from FuzzTrust.testRootPEM")
        }
        var minted = Minted(ca: ca)
        let options = AttestationOptions(notBefore: now - 86_400, leafLifetime: 30 * 86_400, now: now)
        var device = try SoftwareDevice()
        let plain = try device.mintAttestation(ca: ca, appId: appId, environment: .development, challenge: Array("fuzz-challenge-0123456789abcdef".utf8), options: options)
        minted.attestations.append(("minted-dev", plain, 0))
        var ios27 = options
        ios27.ios27Extension = IOS27Extension(bundleVersion: "42")
        let production = try SoftwareDevice().mintAttestation(ca: ca, appId: appId, environment: .production, clientDataHash: Array(repeating: 7, count: 24), options: ios27)
        minted.attestations.append(("minted-prod-ios27-raw-hash", production, 1))

        let receiptSigned = try SyntheticReceipt.make(ca: ca, attestation: plain, signedAttributes: true, indefinite: true)
        let receiptPlain = try SyntheticReceipt.make(ca: ca, attestation: plain, signedAttributes: false, indefinite: false)
        minted.receipts = [("synthetic-ber-signed-attributes", receiptSigned), ("synthetic-der-econtent", receiptPlain)]
        var withReceipt = options
        withReceipt.receipt = receiptSigned
        let third = try SoftwareDevice().mintAttestation(ca: ca, appId: appId, environment: .development, challenge: [1, 2, 3], options: withReceipt)
        minted.attestations.append(("minted-dev-synthetic-receipt", third, 2))

        let first = try device.mintAssertion(appId: appId, challenge: Array(repeating: 9, count: 32), method: "POST", target: "/api/v1/payments?x=1",
                                             body: Array("{}".utf8), boundFields: [(name: "Authorization", value: "Bearer t")])
        minted.assertions.append(("minted-post", first, device.publicKeyPoint, 0))
        let second = try device.mintAssertion(appId: appId, clientData: Array("raw".utf8),
                                              options: AssertionOptions(counter: 77, ios27Extension: IOS27Extension(bundleVersion: "1")))
        minted.assertions.append(("minted-ios27-counter77", second, device.publicKeyPoint, 76))
        return minted
    }

    static func seeds(for name: String) throws -> [(String, [UInt8])] {
        switch name {
        case "attestation":
            return try mint().attestations.map { id, m, policy in
                (id, AttestationHarness.frame(policy: policy, now: now, keyId: m.keyId, clientDataHash: m.clientDataHash, appId: appId, object: m.attestationObject))
            }
        case "assertion":
            return try mint().assertions.map { id, m, key, previous in
                (id, AssertionHarness.frame(checkCounter: true, previousCounter: previous, publicKey: key, rpIdHash: SHA256.hash(utf8: appId),
                                            clientDataHash: m.clientDataHash, object: m.assertionObject))
            }
        case "cbor":
            let m = try mint()
            return m.attestations.map { ($0.0, $0.1.attestationObject) } + m.assertions.map { ($0.0, $0.1.assertionObject) } + [
                ("small-map", [0xA2, 0x01, 0x02, 0x20, 0x58, 0x02, 0xAB, 0xCD]),
                ("array-simple", [0x84, 0xF4, 0xF5, 0xF6, 0xF7]),
                ("text-utf8", [0x63, 0xE2, 0x82, 0xAC]),
                ("nested", [0x81, 0x81, 0x81, 0xA1, 0x61, 0x61, 0x3B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            ]
        case "authdata":
            let m = try mint()
            return m.attestations.map { ($0.0, [0] + $0.1.authenticatorData) } + m.assertions.map { ($0.0, [1] + $0.1.authenticatorData) }
        case "der":
            let m = try mint()
            var out: [(String, [UInt8])] = []
            for (id, a, _) in m.attestations.prefix(2) {
                if let nonce = try a.credentialCertificate.extensionValue(oid: NonceExtension.oid) { out.append((id + "-nonce", [0] + nonce)) }
                out.append((id + "-leaf", [0] + a.credentialCertificate.derBytes))
            }
            out.append(("test-root", [0] + m.ca.root.derBytes))
            out += m.receipts.map { ($0.0, [1] + $0.1) }
            return out
        case "receipt":
            return try mint().receipts
        case "base64":
            return ["", "AA==", "AAE", "-_8", "+/8=", "YWJjZA", "YWJjZA==", String(repeating: "A", count: 43) + "=",
                    "zgSY9YSD-7TaDXssY6WlOPVS1K3Lmk-pFhlcSWE-ZV0"].enumerated().map { ("b64-\($0.offset)", Array($0.element.utf8)) }
        case "proxy-header":
            return ProxyHeaderHarness.seeds
        case "target":
            let targets: [(UInt8, String)] = [(0, "/"), (0, "/api/v1/payments?id=1&x=%2F"), (0, "/a%20b/c"), (1, "/a;v=1/b"), (0, "/a/"),
                                              (0, "/%C3%A9t%C3%A9"), (0, "/a/./b"), (0, "//a"), (0, "/%41"), (0, "/a%2Fb"), (0, "*"), (0, "http://h/")]
            return targets.enumerated().map { ("target-\($0.offset)", [$0.element.0] + Array($0.element.1.utf8)) }
        case "http-request":
            let requests: [(UInt8, String)] = [
                (3, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                (3, "POST /app-attest/v1/attest HTTP/1.1\r\nHost: g\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello"),
                (3, "POST /api/v1/payments?id=7 HTTP/1.1\r\nHost: g\r\nTransfer-Encoding: chunked\r\nApp-Attest-Key-Id: AAAA\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: v\r\n\r\n"),
                (2, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nPUT /b HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabcGET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
                (1, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n01234567890123456789"),
                (11, "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"),
                (3, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                (3, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n"),
                (3, "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"),
                (3, "GET / HTTP/1.1\nHost: a\n\n"),
                (3, "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"),
                (3, "GET / HTTP/1.1\r\nHost: [2001:db8::1.2.3.4]:8443\r\n\r\nGET / HTTP/1.1\r\nHost: [v1.x:y]\r\n\r\nGET / HTTP/1.0\r\nHost: ex%41mple.com:80\r\n\r\n"),
                (3, "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
            ]
            return requests.enumerated().map { ("request-\($0.offset)", [$0.element.0, UInt8($0.offset)] + Array($0.element.1.utf8)) }
        case "http-response":
            let responses: [(UInt8, UInt8, String)] = [
                (0, 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                (0, 0, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n"),
                (0, 0, "HTTP/1.0 200 OK\r\nServer: x\r\n\r\nbody until close"),
                (0, 1, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"),
                (1, 0, "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: gzip\r\n\r\nabc"),
                (0, 0, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\nHTTP/1.1 500\r\nContent-Length: 1\r\n\r\nx"),
            ]
            return responses.enumerated().map { ("response-\($0.offset)", [$0.element.0, $0.element.1, UInt8($0.offset)] + Array($0.element.2.utf8)) }
        case "config":
            let configs = [
                """
                listen: 127.0.0.1:8080
                store: memory
                apps:
                  - app_id: ABCDE12345.com.example.demo
                    environment: development
                trust:
                  extra_roots: [root.pem]
                upstreams:
                  demo: http://127.0.0.1:8081
                routes:
                  - name: all
                    path_prefix: /
                    upstream: demo
                    max_body: 64KiB
                """,
                """
                listen: [0.0.0.0:8080, "[::1]:8443"]
                admin: 127.0.0.1:9901
                store: {url: "redis://user:pw@127.0.0.1:6379/2", command_timeout: 250ms}
                apps: [{app_id: ABCDE12345.com.example.app, environment: any}]
                endpoints: {prefix: /aa/v1, challenge_ttl: 2m, challenge_bytes: 32}
                upstreams:
                  app: {url: "unix:/run/app.sock", connect_timeout: 1s}
                routes:
                  - {name: pay, path_prefix: /pay, methods: [POST], upstream: app, bind_headers: [Authorization], counter_window: 4}
                  - {name: health, path: /healthz, upstream: app, mode: off}
                limits: {max_header_bytes: 16KiB, max_connections: 10}
                timeouts: {header: 10s, idle: 2m}
                log: {access: true, format: json, level: debug}
                """,
            ]
            return configs.enumerated().map { ("config-\($0.offset).yaml", Array($0.element.utf8)) }
        case "resp":
            let replies = ["+OK\r\n", "-NOSCRIPT No matching script\r\n:-7\r\n", "$3\r\na\r\n\r\n$-1\r\n*-1\r\n",
                           "*4\r\n$2\r\npk\r\n$3\r\nabc\r\n$3\r\nctr\r\n:12\r\n", "*2\r\n*2\r\n:1\r\n:2\r\n*0\r\n", "*3\r\n$1\r\nx\r\n*1\r\n+QUEUED\r\n$0\r\n\r\n"]
            return replies.enumerated().map { ("resp-\($0.offset)", [UInt8($0.offset)] + Array($0.element.utf8)) }
        case "h2-session":
            // HTTP/2 frames after the preface (RFC 9113 section 4.1): type, flags, stream, payload.
            func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt8, _ payload: [UInt8] = []) -> [UInt8] {
                let header: [UInt8] = [0, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF), type, flags, 0, 0, 0, stream]
                return header + payload
            }
            func literal(_ name: String, _ value: String) -> [UInt8] {
                var out: [UInt8] = [0x00, UInt8(name.utf8.count)]
                out += Array(name.utf8)
                out.append(UInt8(value.utf8.count))
                out += Array(value.utf8)
                return out
            }
            let get: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, 0x68]  // GET http / authority h (RFC 7541 static table)
            let post: [UInt8] = [0x83, 0x86, 0x84, 0x01, 0x01, 0x68]
            var seeds: [(UInt8, [UInt8])] = []
            seeds.append((0, frame(1, 0x5, 1, get)))
            seeds.append((2, frame(1, 0x4, 1, post + literal("content-length", "5")) + frame(0, 0x1, 1, Array("hello".utf8))))
            var trailers = frame(1, 0x4, 1, post)
            trailers += frame(0, 0, 1, Array("ab".utf8))
            trailers += frame(1, 0x5, 1, literal("x-trailer", "t"))
            seeds.append((4, trailers))
            var control = frame(6, 0, 0, Array("12345678".utf8))
            control += frame(4, 0, 0, [0, 3, 0, 0, 0, 9])
            control += frame(8, 0, 0, [0, 0, 1, 0])
            control += frame(1, 0x5, 1, get)
            control += frame(3, 0, 1, [0, 0, 0, 8])
            seeds.append((0, control))
            var continuation = frame(1, 0x1, 1, get)
            continuation += frame(9, 0, 1, literal("x-a", "1"))
            continuation += frame(9, 0, 1, literal("x-b", "2"))
            continuation += frame(9, 0x4, 1, literal("x-c", "3"))
            seeds.append((1, continuation))
            var bad = frame(1, 0x5, 1, get + literal("X-Upper", "1"))
            bad += frame(1, 0x5, 3, get + literal("connection", "close"))
            bad += frame(1, 0x5, 5, get + literal("host", "other"))
            seeds.append((0, bad))
            let indexed: [UInt8] = get + [0x40, 0x03] + Array("x-d".utf8) + [0x04] + Array("vvvv".utf8)
            seeds.append((2, frame(1, 0x5, 1, indexed) + frame(1, 0x5, 3, get + [0xBE])))
            var resets: [UInt8] = []
            for i in 0..<6 {
                resets += frame(1, 0x5, UInt8(1 + 2 * i), get)
                resets += frame(3, 0, UInt8(1 + 2 * i), [0, 0, 0, 8])
            }
            seeds.append((5, resets))
            seeds.append((1, frame(1, 0x4, 1, post) + frame(0, 0, 1) + frame(0, 0, 1) + frame(0, 0, 1)))
            seeds.append((8, Array("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".utf8)))
            let dotPath: [UInt8] = [0x87, 0x86, 0x01, 0x01, 0x68] + literal(":path", "/a/../b")
            seeds.append((0, frame(1, 0x5, 1, dotPath)))
            return seeds.enumerated().map { ("h2-\($0.offset)", [$0.element.0, UInt8($0.offset * 37 & 0xFF)] + $0.element.1) }
        case "device-registration":
            return try deviceRegistrationSeeds()
        default:
            return []
        }
    }

    /// A device key alone (tier device), with an attestation over its client data (minted under
    /// Fuzz/testca), with an assertion of a held key, and a refused one (signature over other codes).
    static func deviceRegistrationSeeds() throws -> [(String, [UInt8])] {
        let ca = try TestCA.load(directory: testCADirectory)
        let deviceKey = try ECPrivateKey(generatingOn: .p256)
        let challenge = Array(repeating: UInt8(5), count: 32)
        func seed(_ variant: UInt8, backing: String, integrity: [String], signedIntegrity: [String]? = nil, appKeyId: [UInt8] = [],
                  heldKey: [UInt8] = [], object: [UInt8] = []) throws -> [UInt8] {
            let data = DeviceKeyRegistration.clientData(challenge: challenge, publicKey: deviceKey.publicKeyPoint, backing: backing,
                                                        integrity: signedIntegrity ?? integrity)
            return DeviceRegistrationHarness.frame(variant: variant, now: now, publicKey: deviceKey.publicKeyPoint, challenge: challenge,
                                                   signature: try deviceKey.signature(for: data), backing: backing, integrity: integrity,
                                                   appAttestKeyId: appKeyId, heldKey: heldKey, object: object)
        }
        var seeds: [(String, [UInt8])] = []
        seeds.append(("device-only", try seed(0, backing: "software", integrity: ["jb_files", "future_code"])))
        seeds.append(("bad-signature", try seed(0, backing: "secure_enclave", integrity: ["debugger"], signedIntegrity: [])))
        let data = DeviceKeyRegistration.clientData(challenge: challenge, publicKey: deviceKey.publicKeyPoint, backing: "secure_enclave",
                                                    integrity: [])
        let options = AttestationOptions(notBefore: now - 86_400, leafLifetime: 30 * 86_400, now: now)
        let appDevice = try SoftwareDevice()
        let attestation = try appDevice.mintAttestation(ca: ca, appId: appId, environment: .development, clientDataHash: SHA256.hash(data),
                                                        options: options)
        seeds.append(("attestation", try seed(1, backing: "secure_enclave", integrity: [], appKeyId: appDevice.keyId,
                                              object: attestation.attestationObject)))
        var held = try SoftwareDevice()
        let assertion = try held.mintAssertion(appId: appId, clientData: data)
        seeds.append(("assertion", try seed(2, backing: "secure_enclave", integrity: [], appKeyId: held.keyId,
                                            heldKey: held.publicKeyPoint, object: assertion.assertionObject)))
        return seeds
    }
}

/// A receipt-shaped CMS SignedData (RFC 5652) like Apple's: BER with indefinite lengths and a
/// segmented eContent (or plain DER), the App Attest receipt payload, a P-256 signer certificate
/// named like Apple's ("Application Attestation Fraud Receipt Signing") issued by the TEST CA.
/// Only for seeds: it verifies under the test root, never under Apple Root CA - G3.
enum SyntheticReceipt {
    static func oid(_ dotted: String) -> [UInt8] { DERWriter.objectIdentifier(dotted)! }

    static func make(ca: TestCA, attestation: MintedAttestation, signedAttributes: Bool, indefinite: Bool) throws -> [UInt8] {
        let now = CommittedSeeds.now
        let signerKey = try ECPrivateKey(generatingOn: .p256)
        var serial = try SecureRandom.bytes(count: 12)
        serial[0] = serial[0] & 0x3F | 0x40
        var builder = CertificateBuilder(subject: [NameAttribute("CN", ReceiptVerifier.signerCommonName), NameAttribute("O", TestCA.organization)],
                                         issuer: ca.intermediate.subjectAttributes, serialNumber: serial,
                                         notBefore: now - 86_400, notAfter: now + 365 * 86_400)
        builder.addBasicConstraints(ca: false)
        builder.addKeyUsage([.digitalSignature])
        builder.addAuthorityKeyIdentifier(issuerPublicKeyPoint: ca.intermediateKey.publicKeyPoint)
        builder.addSubjectKeyIdentifier(for: signerKey.publicKeyPoint)
        let signer = try builder.sign(subjectPublicKey: signerKey, issuerKey: ca.intermediateKey, digest: .sha256)

        func field(_ type: UInt64, _ value: [UInt8]) -> [UInt8] { DERWriter.sequence([DERWriter.integer(type), DERWriter.integer(1), DERWriter.octetString(value)]) }
        let payload = DERWriter.tlv(0x31, [
            field(2, Array(CommittedSeeds.appId.utf8)), field(3, attestation.credentialCertificate.derBytes),
            field(4, attestation.clientDataHash), field(5, Array("fuzz-token".utf8)), field(6, Array("ATTEST".utf8)),
            field(7, Array("sandbox".utf8)), field(12, Array(CivilTime.iso8601(now).utf8)), field(17, Array("2".utf8)),
            field(19, Array(CivilTime.iso8601(now).utf8)), field(21, Array(CivilTime.iso8601(now + 90 * 86_400).utf8)),
        ].flatMap { $0 })

        let sha256 = DERWriter.sequence([oid("2.16.840.1.101.3.4.2.1"), [0x05, 0x00]])
        let attributes = DERWriter.sequence([oid("1.2.840.113549.1.9.3"), DERWriter.tlv(0x31, oid("1.2.840.113549.1.7.1"))])
            + DERWriter.sequence([oid("1.2.840.113549.1.9.4"), DERWriter.tlv(0x31, DERWriter.octetString(SHA256.hash(payload)))])
        let signature = try signerKey.signature(for: signedAttributes ? DERWriter.tlv(0x31, attributes) : payload, digest: .sha256)
        var signerInfo: [[UInt8]] = [DERWriter.integer(1), DERWriter.sequence([signer.issuerDER, DERWriter.tlv(0x02, signer.serialNumber)]), sha256]
        if signedAttributes { signerInfo.append(DERWriter.tlv(0xA0, attributes)) }
        signerInfo += [DERWriter.sequence([oid("1.2.840.10045.4.3.2")]), DERWriter.octetString(signature)]

        func constructed(_ tag: UInt8, _ parts: [[UInt8]]) -> [UInt8] {
            indefinite ? [tag, 0x80] + parts.flatMap { $0 } + [0, 0] : DERWriter.tlv(tag, parts.flatMap { $0 })
        }
        let half = payload.count / 2
        let content: [UInt8] = indefinite
            ? [0x24, 0x80] + DERWriter.octetString(Array(payload[..<half])) + DERWriter.octetString(Array(payload[half...])) + [0, 0]
            : DERWriter.octetString(payload)
        let encapsulated = constructed(0x30, [oid("1.2.840.113549.1.7.1"), constructed(0xA0, [content])])
        let signedData = constructed(0x30, [DERWriter.integer(1), DERWriter.tlv(0x31, sha256), encapsulated,
                                            constructed(0xA0, [signer.derBytes, ca.intermediate.derBytes]),
                                            DERWriter.tlv(0x31, DERWriter.sequence(signerInfo))])
        return constructed(0x30, [oid("1.2.840.113549.1.7.2"), constructed(0xA0, [signedData])])
    }
}
