import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules
import GatewayTestSupport
import XCTest

/// Byte-level agreement with shared/tools/ref_device.py (cbor2) and with real Apple objects wherever
/// the output is deterministic: CBOR encodings, client data v1, authenticatorData, certificate
/// extensions.
final class SimulatorByteLayoutTests: XCTestCase {
    let appId = SimulatorSupport.appId

    // MARK: CBOR encoder

    func testCBORHeadsUseShortestForms() throws {
        let cases: [(CBORValue, String)] = [
            (.unsigned(0), "00"), (.unsigned(23), "17"), (.unsigned(24), "1818"), (.unsigned(255), "18ff"),
            (.unsigned(256), "190100"), (.unsigned(65535), "19ffff"), (.unsigned(65536), "1a00010000"),
            (.unsigned(0xFFFF_FFFF), "1affffffff"), (.unsigned(0x1_0000_0000), "1b0000000100000000"),
            (.unsigned(UInt64.max), "1bffffffffffffffff"),
            (.negative(0), "20"), (.negative(23), "37"), (.negative(24), "3818"), (.negative(255), "38ff"), (.negative(256), "390100"),
            (.bytes([]), "40"), (.bytes([0xAB]), "41ab"), (.text(""), "60"), (.text("é"), "62c3a9"),
            (.array([]), "80"), (.map([CBORMapEntry]()), "a0"), (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"), (.undefined, "f7"),
        ]
        for (value, hex) in cases {
            XCTAssertEqual(Self.hex(try CBORWriter.encode(value)), hex, "\(value)")
        }
        var out: [UInt8] = []
        CBORWriter.appendInteger(Int64.min, to: &out)
        CBORWriter.appendInteger(-7, to: &out)
        CBORWriter.appendInteger(Int64.max, to: &out)
        XCTAssertEqual(Self.hex(out), "3b7fffffffffffffff" + "26" + "1b7fffffffffffffff")
        XCTAssertEqual(Self.hex(try CBORWriter.encode(.bytes([UInt8](repeating: 7, count: 300)))).prefix(6), "59012c")
        // Duplicate keys are refused (our decoder and Apple's would not accept them either).
        XCTAssertThrowsError(try CBORWriter.encode(.map([CBORMapEntry(key: .text("a"), value: .null),
                                                           CBORMapEntry(key: .text("a"), value: .null)])))
    }

    func testCBOREncodingMatchesCbor2AndRoundTripsThroughOurDecoder() throws {
        let value: CBORValue = .array([
            .unsigned(0), .unsigned(23), .unsigned(24), .unsigned(255), .unsigned(256), .unsigned(65535), .unsigned(65536),
            .unsigned(0xFFFF_FFFF), .unsigned(0x1_0000_0000), .unsigned(UInt64.max),
            .negative(0), .negative(23), .negative(24), .negative(255), .negative(256), .negative(UInt64(Int64.max)),
            .bytes([]), .bytes([UInt8](repeating: 0x78, count: 300)), .text("é apple_bundle_version_01"),
            .map([CBORMapEntry(key: .text("z"), value: .unsigned(1)), CBORMapEntry(key: .text("a"), value: .array([.bool(true), .bool(false), .null])),
                  CBORMapEntry(key: .negative(2), value: .bytes([1, 2]))]),
        ])
        let python = """
        import cbor2
        v = [0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1, -1, -24, -25, -256, -257, -2**63,
             b"", b"x" * 300, "é apple_bundle_version_01", {"z": 1, "a": [True, False, None], -3: b"\\x01\\x02"}]
        print(json.dumps({"hex": cbor2.dumps(v).hex()}))
        """
        let ours = try CBORWriter.encode(value)
        // Outside the assertion: without ../shared the helper throws XCTSkip, which inside an
        // XCTAssert autoclosure would be recorded as a failure instead of a skip.
        let reference = try SimulatorSupport.python(python)
        XCTAssertEqual(Self.hex(ours), reference["hex"] as? String)
        XCTAssertEqual(try CBORDecoder().decode(ours), value)
    }

    /// Real device objects (every attestation and assertion in shared/vectors), decoded by our strict
    /// decoder and re-encoded by our encoder, come out byte-identical: the encoder reproduces
    /// Apple's layout (key order, shortest heads).
    func testReencodingRealAppleObjectsIsByteIdentical() throws {
        guard let vectors = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        var count = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: vectors.path).sorted() where name.hasSuffix(".json") {
            let vector = try SimulatorSupport.jsonObject(String(contentsOf: vectors.appendingPathComponent(name), encoding: .utf8))
            guard let field = ["attestationObject", "assertion"].first(where: { vector[$0] is String }) else { continue }
            let original = try SimulatorSupport.unb64(vector[field])
            XCTAssertEqual(try CBORWriter.encode(CBORDecoder().decode(original)), original, name)
            count += 1
        }
        XCTAssertEqual(count, 49 + 29)
    }

    func testObjectsHaveApplesKeyOrderAndCbor2ReencodesThemIdentically() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let ca = try SimCA.generate()
        var device = try SoftwareDevice()
        let attestation = try device.mintAttestation(ca: ca, appId: appId, environment: .production, challenge: [1, 2, 3],
                                                     options: AttestationOptions(ios27Extension: IOS27Extension(bundleVersion: "1")))
        let assertion = try device.mintAssertion(appId: appId, clientData: Array("hello".utf8))
        let attestationFile = tmp.appendingPathComponent("att.cbor"), assertionFile = tmp.appendingPathComponent("asr.cbor")
        try Data(attestation.attestationObject).write(to: attestationFile)
        try Data(assertion.assertionObject).write(to: assertionFile)
        let vectors = try SimulatorSupport.toolsDirectory().deletingLastPathComponent().appendingPathComponent("vectors").path
        let python = """
        import cbor2, os
        att = open(sys.argv[1], "rb").read(); asr = open(sys.argv[2], "rb").read()
        real_att = cbor2.loads(ref_device.b64d(json.load(open(os.path.join(sys.argv[3], "attestation-apple-doc-2026.json")))["attestationObject"]))
        real_asr = cbor2.loads(ref_device.b64d(json.load(open(os.path.join(sys.argv[3], "assertion-worldcoin-dev-2026a.json")))["assertion"]))
        a, s = cbor2.loads(att), cbor2.loads(asr)
        print(json.dumps({
          "att_reencoded": cbor2.dumps(a) == att, "asr_reencoded": cbor2.dumps(s) == asr,
          "att_keys": list(a) == list(real_att), "stmt_keys": list(a["attStmt"]) == list(real_att["attStmt"]),
          "asr_keys": list(s) == list(real_asr),
          "cose_headers": a["authData"][87:97] == real_att["authData"][87:97] and a["authData"][129:132] == real_att["authData"][129:132],
          "fixed_fields": a["authData"][32:37] == real_att["authData"][32:37] and a["authData"][37:55] == real_att["authData"][37:55],
          "ios27_map_like_apples": a["authData"][164:] == ref_device.ios27_extension("1"),
          "apple_sample_map": ref_device.ios27_extension("1", bytes.fromhex("01000000")) == real_att["authData"][164:],
        }))
        """
        let checks = try SimulatorSupport.python(python, [attestationFile.path, assertionFile.path, vectors])
        XCTAssertEqual(checks.count, 9)
        for (name, value) in checks { XCTAssertEqual(value as? Bool, true, name) }

        // Apple's 2026 sample map, reproduced byte for byte by IOS27Extension.
        let real = try SimulatorSupport.jsonObject(String(contentsOfFile: vectors + "/attestation-apple-doc-2026.json", encoding: .utf8))
        let realObject = try CBORDecoder().decode(try SimulatorSupport.unb64(real["attestationObject"]))
        let realAuthData = try XCTUnwrap(realObject["authData"]?.bytesValue)
        XCTAssertEqual(IOS27Extension(bundleVersion: "1", validationCategory: [1, 0, 0, 0]).encoded, Array(realAuthData[164...]))
    }

    // MARK: client data and authenticatorData vs ref_device.py

    func testClientDataV1MatchesRefDevice() throws {
        let cases: [(challenge: [UInt8], method: String, target: String, body: [UInt8], fields: [(name: String, value: String)])] = [
            (Array(0..<32), "POST", "/v1/purchases?n=1", Array(#"{"sku":"a1","qty":2}"#.utf8), []),
            ([0xFF, 0x00, 0x10], "GET", "/v1/items", [], []),  // empty body: SHA-256 of zero bytes
            (Array("chal".utf8), "PUT", "/a/b?c=d&e=%2F", [0, 1, 2, 0xFF], [(name: "authorization", value: "Bearer abc"),
                                                                             (name: "X-Device", value: "k:v:w")]),
            ([], "DELETE", "/", [], [(name: "x-empty", value: "")]),
        ]
        var vectors: [[String: Any]] = []
        for (index, c) in cases.enumerated() {
            var device = try SoftwareDevice()
            let ours = try device.mintAssertion(appId: appId, challenge: c.challenge, method: c.method, target: c.target, body: c.body,
                                                boundFields: c.fields)
            XCTAssertEqual(ours.clientData, try ClientDataBinding.v1(challenge: c.challenge, method: c.method, target: c.target,
                                                                     bodySHA256: SHA256.hash(c.body), boundFields: c.fields))
            vectors.append(["i": index, "challenge": SimulatorSupport.b64(c.challenge), "method": c.method, "target": c.target,
                            "body": SimulatorSupport.b64(c.body), "fields": c.fields.map { "\($0.name):\($0.value)" },
                            "ours": SimulatorSupport.b64(ours.clientData)])
        }
        let input = String(decoding: try JSONSerialization.data(withJSONObject: vectors), as: UTF8.self)
        let python = """
        cases = json.loads(sys.argv[1])
        out = {}
        for c in cases:
            ref = ref_device.client_data_v1(base64.b64decode(c["challenge"]), c["method"], c["target"], base64.b64decode(c["body"]), c["fields"])
            out[str(c["i"])] = ref == base64.b64decode(c["ours"])
        print(json.dumps(out))
        """
        let result = try SimulatorSupport.python(python, [input])
        XCTAssertEqual(result.count, cases.count)
        for (index, same) in result { XCTAssertEqual(same as? Bool, true, "case \(index)") }
    }

    func testAssertionAuthenticatorDataMatchesRefDevice() throws {
        var cases: [[String: Any]] = []
        var ours: [String: String] = [:]
        for counter: UInt32 in [0, 1, 255, 256, 65_536, UInt32.max] {
            for version in [nil, "1", "27.0.1"] {
                let key = "\(counter)-\(version ?? "none")"
                let data = AuthenticatorDataBuilder.assertion(appId: appId, counter: counter,
                                                              ios27Extension: version.map { IOS27Extension(bundleVersion: $0) })
                XCTAssertEqual(data.count, 37 + (version.map { IOS27Extension(bundleVersion: $0).encoded.count } ?? 0))
                ours[key] = Self.hex(data)
                cases.append(["key": key, "counter": Int(counter), "version": version ?? NSNull()])
            }
        }
        // The minted assertion carries exactly these bytes.
        var device = try SoftwareDevice()
        let minted = try device.mintAssertion(appId: appId, clientData: [], options: AssertionOptions(counter: 256, ios27Extension: IOS27Extension(bundleVersion: "1")))
        XCTAssertEqual(Self.hex(minted.authenticatorData), ours["256-1"])
        XCTAssertEqual(try CBORDecoder().decode(minted.assertionObject)["authenticatorData"]?.bytesValue, minted.authenticatorData)

        let input = String(decoding: try JSONSerialization.data(withJSONObject: cases), as: UTF8.self)
        let python = """
        print(json.dumps({c["key"]: ref_device.assertion_auth_data(\(SimulatorSupport.pythonString(appId)), c["counter"], c["version"]).hex()
                          for c in json.loads(sys.argv[1])}))
        """
        let reference = try SimulatorSupport.python(python, [input])
        XCTAssertEqual(reference.count, ours.count)
        for (key, hex) in ours { XCTAssertEqual(reference[key] as? String, hex, key) }
    }

    func testAttestationAuthenticatorDataAndCOSEKeyMatchRefDeviceForTheSameKey() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let keyFile = tmp.appendingPathComponent("device.key").path
        let device = try SoftwareDevice()
        try device.save(to: keyFile)
        let ca = try SimCA.generate()
        var ours: [String: String] = ["cose": Self.hex(try AuthenticatorDataBuilder.coseKey(publicKeyPoint: device.publicKeyPoint))]
        for environment in AppAttestEnvironment.allCases {
            for version in [nil, "1", "42"] {
                let minted = try device.mintAttestation(ca: ca, appId: appId, environment: environment, challenge: [9],
                                                        options: AttestationOptions(ios27Extension: version.map { IOS27Extension(bundleVersion: $0) }))
                ours["\(environment.rawValue)-\(version ?? "none")"] = Self.hex(minted.authenticatorData)
                XCTAssertEqual(minted.nonce, SHA256.hash(minted.authenticatorData + SHA256.hash([9])))
            }
        }
        let python = """
        key = ref_device.load_key(sys.argv[1]); app = sys.argv[2]
        out = {"cose": ref_device.cose_key(key).hex()}
        for env in ("development", "production"):
            for v in (None, "1", "42"):
                out["%s-%s" % (env, v or "none")] = ref_device.attestation_auth_data(key, app, env, v).hex()
        print(json.dumps(out))
        """
        let reference = try SimulatorSupport.python(python, [keyFile, appId])
        XCTAssertEqual(reference.count, 7)
        for (key, hex) in ours { XCTAssertEqual(reference[key] as? String, hex, key) }
    }

    // MARK: certificates vs Apple's

    func testCredentialCertificateHasApplesExtensionsAndNames() throws {
        guard let vectors = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let real = try SimulatorSupport.jsonObject(String(contentsOf: vectors.appendingPathComponent("attestation-apple-doc-2026.json"), encoding: .utf8))
        let realX5c = try XCTUnwrap(try CBORDecoder().decode(try SimulatorSupport.unb64(real["attestationObject"]))["attStmt"]?["x5c"]?.arrayValue)
        let realLeaf = try X509Certificate(der: try XCTUnwrap(realX5c[0].bytesValue))
        let realIntermediate = try X509Certificate(der: try XCTUnwrap(realX5c[1].bytesValue))

        let ca = try SimCA.generate()
        let device = try SoftwareDevice()
        let minted = try device.mintAttestation(ca: ca, appId: appId, environment: .development, challenge: [1])
        let leaf = minted.credentialCertificate
        let object = try CBORDecoder().decode(minted.attestationObject)
        XCTAssertEqual(object["attStmt"]?["x5c"]?.arrayValue?.compactMap(\.bytesValue), [leaf.derBytes, ca.intermediate.derBytes])

        // Same extension values and criticality as Apple's leaf for basicConstraints, keyUsage, EKU.
        for oid in ["2.5.29.19", "2.5.29.15", "2.5.29.37"] {
            let ours = leaf.extensions.first { $0.oid == oid }, apple = realLeaf.extensions.first { $0.oid == oid }
            XCTAssertNotNil(ours, oid)
            XCTAssertEqual(ours, apple, oid)
        }
        let nonce = try XCTUnwrap(leaf.extensions.first { $0.oid == NonceExtension.oid })
        let appleNonce = try XCTUnwrap(realLeaf.extensions.first { $0.oid == NonceExtension.oid })
        XCTAssertEqual(nonce.isCritical, appleNonce.isCritical)
        XCTAssertEqual(Array(nonce.value.prefix(6)), Array(appleNonce.value.prefix(6)))  // 30 24 a1 22 04 20
        XCTAssertEqual(try NonceExtension.nonce(fromExtensionValue: nonce.value), minted.nonce)
        XCTAssertNil(leaf.extensions.first { $0.oid == "2.5.29.35" }, "Apple's leaves carry no authorityKeyIdentifier")

        // Names: the attribute types in Apple's order; CN = hex keyId; issuer = intermediate subject.
        XCTAssertEqual(leaf.subjectAttributes.map(\.type), realLeaf.subjectAttributes.map(\.type))
        XCTAssertEqual(leaf.subjectCommonName, Self.hex(device.keyId))
        XCTAssertEqual(leaf.subjectAttributes[1].value, "AAA Certification")
        XCTAssertEqual(leaf.issuerDER, ca.intermediate.subjectDER)
        XCTAssertEqual(ca.intermediate.subjectAttributes.map(\.type), realIntermediate.subjectAttributes.map(\.type))
        XCTAssertTrue(leaf.subject.contains("TEST App Attest CA (not Apple)"))
        XCTAssertEqual(leaf.publicKeyCurve, .p256)
        XCTAssertEqual(ca.intermediate.publicKeyCurve, .p384)
        XCTAssertEqual(ca.root.publicKeyCurve, .p384)
        // Intermediate: same extension kinds, order and criticality as Apple's CA 1.
        XCTAssertEqual(ca.intermediate.extensions.map { "\($0.oid)/\($0.isCritical)" }, realIntermediate.extensions.map { "\($0.oid)/\($0.isCritical)" })
        XCTAssertEqual(ca.intermediate.extensions.first { $0.oid == "2.5.29.19" }, realIntermediate.extensions.first { $0.oid == "2.5.29.19" })
        XCTAssertEqual(leaf.notAfter - leaf.notBefore, 3 * 86_400 + 3600)  // now - 1 h .. now + 3 days
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
