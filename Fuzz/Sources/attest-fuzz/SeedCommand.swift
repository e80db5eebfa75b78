import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation

/// `attest-fuzz seeds NAME|all OUTPUT-FOLDER [SHARED-VECTORS-FOLDER]`: writes seed inputs in the
/// harness's input layout.
///
/// - Without a vectors folder: the committed seeds (Fuzz/corpus/NAME) - objects minted by the
///   simulator under Fuzz/testca, a receipt-shaped CMS signed under that CA, hand-written
///   protocol inputs. With `all`, OUTPUT-FOLDER gets one sub-folder per harness.
/// - With a vectors folder (../shared/vectors, read at run time by scripts/fuzz, never copied into
///   the repository): the real device objects of every JSON file, framed for NAME.
enum SeedCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count >= 2 else {
            printError("usage: attest-fuzz seeds NAME|all OUTPUT-FOLDER [SHARED-VECTORS-FOLDER]\n")
            return 2
        }
        let names = arguments[0] == "all" ? Harnesses.all.map(\.name) : [arguments[0]]
        guard names.allSatisfy({ Harnesses.named($0) != nil }) else {
            printError("attest-fuzz seeds: unknown harness \(arguments[0])\n")
            return 2
        }
        do {
            for name in names {
                let folder = arguments[0] == "all" ? arguments[1] + "/" + name : arguments[1]
                let seeds = arguments.count >= 3 ? try VectorSeeds(folder: arguments[2]).seeds(for: name) : try CommittedSeeds.seeds(for: name)
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for (file, bytes) in seeds {
                    _ = FileManager.default.createFile(atPath: folder + "/" + file, contents: Data(bytes))
                }
                print("\(name): \(seeds.count) seeds in \(folder)")
            }
        } catch {
            printError("attest-fuzz seeds: \(error)\n")
            return 1
        }
        return 0
    }
}

/// Seeds made from ../shared/vectors at run time.
struct VectorSeeds {
    let files: [[String: Any]]

    init(folder: String) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted()
        files = try names.compactMap { name -> [String: Any]? in
            let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            object["_file"] = String(name.dropLast(5))
            return object
        }
    }

    static func bytes(_ object: [String: Any], _ key: String) -> [UInt8]? {
        (object[key] as? String).flatMap { Base64.decode($0) }
    }

    func seeds(for name: String) throws -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        for v in files {
            let id = v["_file"] as? String ?? "vector"
            let kind = v["kind"] as? String
            let appId = (v["teamId"] as? String ?? "") + "." + (v["bundleId"] as? String ?? "")
            switch kind {
            case "attestation":
                guard let object = Self.bytes(v, "attestationObject") else { continue }
                let parsed = try? AttestationObject(object)
                switch name {
                case "attestation":
                    let policy: UInt8 = v["environment"] as? String == "production" ? 1 : 0
                    let now = (v["validationTime"] as? String).flatMap(CivilTime.parseISO8601) ?? 0
                    out.append((id, AttestationHarness.frame(policy: policy, now: now, keyId: Self.bytes(v, "keyId") ?? [],
                                                             clientDataHash: Self.bytes(v, "clientDataHash") ?? [], appId: appId, object: object)))
                case "cbor": out.append((id, object))
                case "authdata": if let a = parsed?.authData { out.append((id, [0] + a)) }
                case "receipt": if let r = parsed?.receipt { out.append((id, r)) }
                case "der":
                    if let r = parsed?.receipt { out.append((id + "-receipt", [1] + r)) }
                    if let leaf = parsed?.x5c.first {
                        out.append((id + "-leaf", [0] + leaf))
                        if let cert = try? X509Certificate(der: leaf), let nonce = try? cert.extensionValue(oid: NonceExtension.oid) {
                            out.append((id + "-nonce", [0] + nonce))
                        }
                    }
                default: break
                }
            case "assertion":
                guard let object = Self.bytes(v, "assertion") else { continue }
                let authData = (try? CBORDecoder().decode(object))?["authenticatorData"]?.bytesValue
                switch name {
                case "assertion":
                    let previous = UInt32(truncatingIfNeeded: v["previousCounter"] as? Int ?? 0)
                    out.append((id, AssertionHarness.frame(checkCounter: true, previousCounter: previous, publicKey: Self.bytes(v, "publicKeyX963") ?? [],
                                                           rpIdHash: SHA256.hash(utf8: appId), clientDataHash: Self.bytes(v, "clientDataHash") ?? [],
                                                           object: object)))
                case "cbor": out.append((id, object))
                case "authdata": if let authData { out.append((id, [1] + authData)) }
                default: break
                }
            case "receipt":
                guard let receipt = Self.bytes(v, "receipt") else { continue }
                if name == "receipt" { out.append((id, receipt)) }
                if name == "der" { out.append((id, [1] + receipt)) }
            default:
                break
            }
        }
        return out
    }
}
