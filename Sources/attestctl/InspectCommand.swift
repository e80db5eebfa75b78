import AppAttest
import AttestCrypto
import Foundation
import GatewayRules

/// `attestctl inspect BASE64|FILE`
///
/// Decodes an attestation or assertion object - given as a base64/base64url argument, a raw CBOR
/// file, a file holding base64 text, or a test vector JSON file - into a readable JSON report:
/// certificates (subject, issuer, validity, key, extensions), authenticatorData fields (rpIdHash,
/// flags, counter, aaguid, credentialId, COSE key, iOS 27 map), the nonce extension and the receipt.
/// No verification verdict (use `verify`); parse errors are reported with their reason code.
enum InspectCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 1, let input = arguments.first else {
            FileHandle.standardError.write(Data("usage: attestctl inspect BASE64|FILE\n".utf8))
            return 2
        }
        guard let object = load(input) else {
            FileHandle.standardError.write(Data("attestctl inspect: \(input) is neither a readable file nor base64\n".utf8))
            return 2
        }
        let value: CBORValue
        do {
            value = try CBORDecoder().decode(object)
        } catch {
            print(JSONText.object([("error", .string(ReasonCode.cborMalformed.rawValue)), ("detail", .string("\(error)"))]).pretty())
            return 1
        }
        if value["fmt"] != nil {
            print(attestationReport(value).pretty())
        } else if value["authenticatorData"] != nil {
            print(assertionReport(value).pretty())
        } else {
            print(JSONText.object([("error", .string(ReasonCode.attestationMalformed.rawValue)),
                                   ("detail", .string("neither an attestation (fmt) nor an assertion (authenticatorData)"))]).pretty())
            return 1
        }
        return 0
    }

    /// Bytes of the object named by `input`.
    static func load(_ input: String) -> [UInt8]? {
        if FileManager.default.fileExists(atPath: input), let data = FileManager.default.contents(atPath: input) {
            let bytes = [UInt8](data)
            if bytes.first == UInt8(ascii: "{"),
               let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
               let text = (json["attestationObject"] ?? json["assertion"]) as? String {
                return Base64.decode(text)
            }
            let trimmed = bytes.filter { $0 != 0x0A && $0 != 0x0D && $0 != 0x20 }
            if let decoded = Base64.decode(trimmed), !decoded.isEmpty { return decoded }
            return bytes
        }
        return Base64.decode(input)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func time(_ t: Int64?) -> JSONText { t.map { .string(CivilTime.iso8601($0)) } ?? .null }

    static let extensionNames = [
        "1.2.840.113635.100.8.2": "App Attest nonce", "1.2.840.113635.100.8.5": "Apple app/device info",
        "1.2.840.113635.100.8.6": "Apple policy", "1.2.840.113635.100.8.7": "Apple OS version / device details",
        "2.5.29.19": "basicConstraints", "2.5.29.15": "keyUsage", "2.5.29.37": "extKeyUsage", "2.5.29.14": "subjectKeyIdentifier",
        "2.5.29.35": "authorityKeyIdentifier", "1.3.6.1.5.5.7.1.1": "authorityInfoAccess", "2.5.29.31": "cRLDistributionPoints",
    ]

    static func certificate(_ der: [UInt8]) -> JSONText {
        guard let cert = try? X509Certificate(der: der) else {
            return .object([("error", .string(ReasonCode.certificateMalformed.rawValue)), ("length", .integer(Int64(der.count)))])
        }
        var fields: [(String, JSONText)] = [
            ("subject", .string(cert.subject)), ("issuer", .string(cert.issuer)),
            ("serial", .string(hex(cert.serialNumber))),
            ("notBefore", time(cert.notBefore)), ("notAfter", time(cert.notAfter)),
            ("keyCurve", cert.publicKeyCurve.map { .string($0.rawValue) } ?? .null),
            ("publicKey", cert.publicKeyPoint.map { .string(hex($0)) } ?? .null),
        ]
        if cert.publicKeyCurve == .p256, let point = cert.publicKeyPoint {
            fields.append(("keyIdOfKey", .string(Base64.encode(SHA256.hash(point)))))
        }
        fields.append(("sha256", .string(hex(cert.sha256Fingerprint))))
        fields.append(("extensions", .array(cert.extensions.map { e in
            var entry: [(String, JSONText)] = [("oid", .string(e.oid))]
            if let name = extensionNames[e.oid] { entry.append(("name", .string(name))) }
            entry.append(("critical", .bool(e.isCritical)))
            if e.oid == NonceExtension.oid {
                entry.append(("nonce", (try? NonceExtension.nonce(fromExtensionValue: e.value)).map { .string(Base64.encode($0)) }
                    ?? .string("malformed: \(ReasonCode.nonceExtensionMalformed.rawValue)")))
            }
            entry.append(("value", .string(hex(e.value))))
            return .object(entry)
        })))
        return .object(fields)
    }

    static func authenticatorData(_ raw: [UInt8], kind: AuthenticatorData.Kind) -> JSONText {
        do {
            let a = try AuthenticatorData(raw, kind: kind)
            var fields: [(String, JSONText)] = [
                ("length", .integer(Int64(raw.count))), ("rpIdHash", .string(hex(a.rpIdHash))),
                ("flags", .string(String(format: "0x%02x", a.flags))), ("counter", .integer(Int64(a.counter))),
            ]
            if let aaguid = a.aaguid {
                fields.append(("aaguid", .string(String(decoding: aaguid.map { $0 == 0 ? UInt8(ascii: ".") : $0 }, as: UTF8.self))))
                fields.append(("aaguidHex", .string(hex(aaguid))))
                fields.append(("environment", AppAttestEnvironment(aaguid: aaguid).map { .string($0.rawValue) } ?? .string("unknown")))
            }
            if let credentialId = a.credentialId { fields.append(("credentialId", .string(Base64.encode(credentialId)))) }
            if let key = a.credentialPublicKey {
                fields.append(("coseKey", .object([("kty", .string("EC2")), ("crv", .string("P-256")), ("x", .string(hex(key.x))), ("y", .string(hex(key.y))),
                                                   ("keyId", .string(Base64.encode(SHA256.hash(key.x963Representation))))])))
            }
            if let signals = a.signals {
                var map: [(String, JSONText)] = []
                if let c = signals.validationCategory { map.append(("apple_validation_category_01", .string(hex(c)))) }
                if let v = signals.bundleVersion { map.append(("apple_bundle_version_01", .string(v))) }
                if !signals.otherKeys.isEmpty { map.append(("otherKeys", .array(signals.otherKeys.map { .string($0) }))) }
                fields.append(("extensions", .object(map)))
            }
            return .object(fields)
        } catch {
            return .object([("error", .string(ReasonCode.authDataMalformed.rawValue)), ("detail", .string("\(error)")), ("hex", .string(hex(raw)))])
        }
    }

    static func receipt(_ bytes: [UInt8]) -> JSONText {
        let result = ReceiptVerifier().verify(bytes)
        var fields: [(String, JSONText)] = [("length", .integer(Int64(bytes.count)))]
        if let r = result.receipt {
            fields += [
                ("appId", r.appId.map { .string($0) } ?? .null), ("type", r.type.map { .string($0) } ?? .null),
                ("environment", r.environment.map { .string($0) } ?? .null), ("creationTime", r.creationTimeText.map { .string($0) } ?? .null),
                ("riskMetric", r.riskMetric.map { .integer(Int64($0)) } ?? .null), ("notBefore", time(r.notBefore)),
                ("expirationTime", time(r.expirationTime)), ("token", r.token.map { .string($0) } ?? .null),
                ("clientHash", r.clientHash.map { .string(Base64.encode($0)) } ?? .null),
                ("attestedKeyId", r.attestedKeyId.map { .string(Base64.encode($0)) } ?? .null),
                ("fieldTypes", .array(r.fieldTypes.map { .integer(Int64($0)) })),
            ]
        }
        fields += [
            ("signedAttributesPresent", .bool(result.signedAttributesPresent)),
            ("signatureCovers", result.signedContent.map { .string($0.rawValue) } ?? .null),
            ("signatureValid", .bool(result.signatureValid)),
            ("signerChainValidAtCreation", .bool(result.signerChainValid)),
            ("problem", result.failure.map { .string($0.rawValue) } ?? .null),
        ]
        if !result.detail.isEmpty { fields.append(("detail", .string(result.detail))) }
        return .object(fields)
    }

    static func attestationReport(_ value: CBORValue) -> JSONText {
        var fields: [(String, JSONText)] = [("kind", .string("attestation")), ("fmt", value["fmt"]?.textValue.map { .string($0) } ?? .null)]
        let x5c = value["attStmt"]?["x5c"]?.arrayValue?.compactMap(\.bytesValue) ?? []
        fields.append(("x5cCount", .integer(Int64(x5c.count))))
        fields.append(("certificates", .array(x5c.map(certificate))))
        if let raw = value["authData"]?.bytesValue {
            fields.append(("authenticatorData", authenticatorData(raw, kind: .attestation)))
        }
        if let r = value["attStmt"]?["receipt"]?.bytesValue {
            fields.append(("receipt", receipt(r)))
        }
        return .object(fields)
    }

    static func assertionReport(_ value: CBORValue) -> JSONText {
        var fields: [(String, JSONText)] = [("kind", .string("assertion"))]
        if let signature = value["signature"]?.bytesValue {
            fields.append(("signature", .object([("length", .integer(Int64(signature.count))), ("strictDER", .bool(ECDSASignature.isStrictDER(signature))),
                                                  ("hex", .string(hex(signature)))])))
        }
        if let raw = value["authenticatorData"]?.bytesValue {
            fields.append(("authenticatorData", authenticatorData(raw, kind: .assertion)))
        }
        return .object(fields)
    }
}
