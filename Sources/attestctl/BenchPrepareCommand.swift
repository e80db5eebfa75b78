import AppAttest
import AttestCrypto
import AttestSimulator
import Dispatch
import Foundation
import Gateway
import GatewayRedis
import GatewayRules
import GatewayStore
import Synchronization

/// `attestctl bench-prepare keys|assertions|attestations ...`: bulk preparation of genuinely valid
/// evidence for the load benchmark (bench/run), in process, with the simulator (no process per item).
///
/// - `keys --gateway URL --ca DIR --app-id ID [--env E] --count N --out FILE [--concurrency C]`:
///   N fresh software devices, each attested through the gateway's real endpoints (`POST
///   <prefix>/challenge` purpose `attest`, then `POST <prefix>/attest`, 201 expected). Writes FILE,
///   one line per key: `keyId(b64) TAB pkcs8-DER(b64) TAB last-counter`.
/// - `assertions --keys FILE --redis URL --app-id ID --count N --partitions P --method M --target T
///   [--body-bytes B] --out PREFIX`: N assertions split into P partitions (one per wrk thread). Keys are
///   partitioned too (key i belongs to partition i mod P, so two threads never race on one key); inside
///   a partition they are used round robin with rising counters (continuing from FILE, which is
///   rewritten with the new last counters). Each assertion gets its own one-time challenge (32 random
///   bytes, purpose `assert`, valid 1 h), written with the gateway's own store code
///   (`RedisStore.issueChallenge`) into the gateway's Redis. Client data is binding v1 over (challenge,
///   M, T exactly, SHA-256 of a body of B bytes `x`). Writes `PREFIX-<p>.tsv`, one line per request:
///   `keyId TAB challenge TAB assertion` (standard base64), in the order they must be sent.
/// - `attestations --redis URL --ca DIR --app-id ID [--env E] --count N --partitions P --out PREFIX`:
///   N attestations of N fresh keys, each over its own `attest` challenge written with
///   `RedisStore.issueChallenge`. Writes `PREFIX-<p>.jsonl`, one `POST <prefix>/attest` JSON body per line.
///
/// Prints one JSON line with what it wrote and how long it took. Exit 0, 1 on failure, 2 on usage.
enum BenchPrepareCommand {
    static let usage = """
    attestctl bench-prepare keys --gateway URL --ca DIR --app-id ID [--env development] --count N --out FILE [--concurrency C]
    attestctl bench-prepare assertions --keys FILE --redis URL --app-id ID --count N --partitions P --method M --target T [--body-bytes B] --out PREFIX
    attestctl bench-prepare attestations --redis URL --ca DIR --app-id ID [--env development] --count N --partitions P --out PREFIX
    """

    static func run(_ arguments: [String]) -> Int32 {
        guard let mode = arguments.first else {
            FileHandle.standardError.write(Data("usage:\n\(usage)\n".utf8))
            return 2
        }
        let rest = Array(arguments.dropFirst())
        do {
            let started = DispatchTime.now().uptimeNanoseconds
            let summary: [(String, JSONText)]
            switch mode {
            case "keys": summary = try keys(rest)
            case "assertions": summary = try assertions(rest)
            case "attestations": summary = try attestations(rest)
            default: throw DeviceCommandError.usage("unknown mode \(mode) (keys, assertions, attestations)")
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            print(JSONText.object([("mode", .string(mode))] + summary + [("seconds", .number(seconds))]).rendered)
            return 0
        } catch DeviceCommandError.usage(let message) {
            FileHandle.standardError.write(Data("attestctl bench-prepare: \(message)\nusage:\n\(usage)\n".utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("attestctl bench-prepare \(mode): \(error)\n".utf8))
            return 1
        }
    }

    /// Error messages collected from completions on other threads.
    final class Failures: Sendable {
        private let messages = Mutex<[String]>([])
        func add(_ message: String) { messages.withLock { $0.append(message) } }
        var first: String? { messages.withLock { $0.first } }
    }

    /// Writes one-time challenges with the gateway's own store code, at most 4000 in flight, from any
    /// thread; `finish` waits for all of them.
    final class ChallengeWriter: Sendable {
        private let store: RedisStore
        private let inFlight = DispatchSemaphore(value: 4000)
        private let issued = DispatchGroup()
        private let failures = Failures()

        init(_ store: RedisStore) { self.store = store }

        /// Starts writing one challenge (blocks while 4000 are in flight).
        func issue(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis, now: UnixMillis) {
            inFlight.wait()
            issued.enter()
            store.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt, now: now) { [self] result in
                if case .failure(let error) = result { failures.add("\(error)") }
                inFlight.signal()
                issued.leave()
            }
        }

        /// Waits until every write was answered; the first store failure, if any.
        func finish() -> String? {
            issued.wait()
            return failures.first
        }
    }

    /// A failure while preparing (network, store, minting).
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: - keys

    static func keys(_ arguments: [String]) throws -> [(String, JSONText)] {
        let options = try DeviceCommandOptions(arguments, valued: ["gateway", "ca", "app-id", "env", "count", "out", "concurrency", "prefix"])
        let gateway = try SimulateGatewayURL(try options.required("gateway"))
        let ca = try TestCA.load(directory: try options.required("ca"))
        let appId = try options.required("app-id")
        let environment = try DeviceCommand.environment(try options.value("env") ?? "development")
        let count = try options.integer("count", in: 1...1_000_000) ?? 0
        let concurrency = try options.integer("concurrency", default: 4, in: 1...64) ?? 4
        let prefix = try options.value("prefix") ?? "/app-attest/v1"
        let out = try options.required("out")
        guard count > 0 else { throw DeviceCommandError.usage("--count is required") }

        let lines = Mutex<[Int: String]>([:])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: concurrency) { worker in
            var index = worker
            while index < count {
                do {
                    let line = try registerKey(gateway: gateway, prefix: prefix, ca: ca, appId: appId, environment: environment)
                    let i = index
                    lines.withLock { $0[i] = line }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
                index += concurrency
            }
        }
        if let first = failures.withLock({ $0.first }) { throw Failure("key registration failed: \(first)") }
        let text = lines.withLock { dict in (0..<count).compactMap { dict[$0] }.joined(separator: "\n") } + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: out))
        return [("keys", .integer(Int64(count))), ("out", .string(out))]
    }

    /// One key: challenge (purpose attest) -> attestation -> 201. Returns its key-file line.
    static func registerKey(gateway: SimulateGatewayURL, prefix: String, ca: TestCA, appId: String,
                            environment: AppAttestEnvironment) throws -> String {
        let device = try SoftwareDevice()
        let keyId = Base64.encode(device.keyId)
        let json = [("Content-Type", "application/json")]
        let challengeResponse = try SimulateHTTPClient.send(
            method: "POST", target: gateway.basePath + prefix + "/challenge", headers: json,
            body: Array(JSONText.object([("keyId", .string(keyId)), ("purpose", .string("attest"))]).rendered.utf8), to: gateway, timeout: 10)
        guard challengeResponse.status == 201,
              let object = try? JSONSerialization.jsonObject(with: Data(challengeResponse.body)) as? [String: Any],
              let challengeText = object["challenge"] as? String, let challenge = Base64.decode(challengeText) else {
            throw Failure("challenge endpoint answered \(challengeResponse.status): \(String(decoding: challengeResponse.body, as: UTF8.self))")
        }
        let minted = try device.mintAttestation(ca: ca, appId: appId, environment: environment, challenge: challenge)
        let body = JSONText.object([("keyId", .string(keyId)), ("challenge", .string(challengeText)),
                                    ("attestation", .string(Base64.encode(minted.attestationObject)))]).rendered
        let attestResponse = try SimulateHTTPClient.send(method: "POST", target: gateway.basePath + prefix + "/attest",
                                                         headers: json, body: Array(body.utf8), to: gateway, timeout: 10)
        guard attestResponse.status == 201 else {
            throw Failure("attest endpoint answered \(attestResponse.status): \(String(decoding: attestResponse.body, as: UTF8.self))")
        }
        return "\(keyId)\t\(Base64.encode(try device.privateKey.pkcs8DER()))\t0"
    }

    // MARK: - assertions

    /// A key read from the key file.
    struct BenchKey: Sendable {
        let keyId: [UInt8]
        let keyIdText: String
        let privateKey: ECPrivateKey
        var counter: UInt32
    }

    static func readKeys(_ path: String) throws -> [BenchKey] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var keys: [BenchKey] = []
        for (number, line) in text.split(separator: "\n").enumerated() where !line.isEmpty {
            let fields = line.split(separator: "\t")
            guard fields.count == 3, let keyId = Base64.decode(String(fields[0])), keyId.count == 32,
                  let der = Base64.decode(String(fields[1])), let counter = UInt32(fields[2]) else {
                throw Failure("\(path):\(number + 1): expected keyId TAB pkcs8 TAB counter")
            }
            let key = try ECPrivateKey(pkcs8DER: der)
            guard SHA256.hash(key.publicKeyPoint) == keyId else { throw Failure("\(path):\(number + 1): key does not match keyId") }
            keys.append(BenchKey(keyId: keyId, keyIdText: String(fields[0]), privateKey: key, counter: counter))
        }
        guard !keys.isEmpty else { throw Failure("\(path): no keys") }
        return keys
    }

    static func assertions(_ arguments: [String]) throws -> [(String, JSONText)] {
        let options = try DeviceCommandOptions(arguments, valued: ["keys", "redis", "app-id", "count", "partitions", "method", "target",
                                                                   "body-bytes", "out"])
        let keysPath = try options.required("keys")
        let store = try makeStore(try options.required("redis"))
        defer { store.close() }
        let appId = try options.required("app-id")
        let count = try options.integer("count", in: 1...50_000_000) ?? 0
        let partitions = try options.integer("partitions", default: 1, in: 1...64) ?? 1
        let method = try options.required("method")
        let target = try options.required("target")
        let bodyBytes = try options.integer("body-bytes", default: 0, in: 0...(64 << 20)) ?? 0
        let out = try options.required("out")
        guard count > 0 else { throw DeviceCommandError.usage("--count is required") }
        var keys = try readKeys(keysPath)
        guard keys.count >= partitions else { throw Failure("need at least one key per partition (\(keys.count) keys, \(partitions) partitions)") }

        let bodyHash = SHA256.hash([UInt8](repeating: UInt8(ascii: "x"), count: bodyBytes))
        let methodBytes = Array(method.utf8)
        let targetBytes = Array(target.utf8)
        let now = GatewayClock.system.now()
        let expiresAt = now + 3_600_000

        // Partition p owns keys p, p+P, p+2P...; its j-th request uses its key j mod K with counter base+1+j/K.
        let owned: [[Int]] = (0..<partitions).map { p in Array(stride(from: p, to: keys.count, by: partitions)) }
        let perPartition: [Int] = (0..<partitions).map { p in count / partitions + (p < count % partitions ? 1 : 0) }
        var uses = [Int](repeating: 0, count: keys.count)  // assertions per key
        for p in 0..<partitions {
            let k = owned[p].count
            for (slot, keyIndex) in owned[p].enumerated() {
                uses[keyIndex] = perPartition[p] / k + (slot < perPartition[p] % k ? 1 : 0)
                guard UInt64(keys[keyIndex].counter) + UInt64(uses[keyIndex]) < UInt64(UInt32.max) else {
                    throw Failure("key \(keys[keyIndex].keyIdText): counter would pass 2^32-1")
                }
            }
        }
        let frozenKeys = keys
        let challenges = ChallengeWriter(store)
        let writeFailures = Mutex<[String]>([])
        // One writer per partition, chunks of rows minted in parallel inside it.
        for p in 0..<partitions {
            let path = "\(out)-\(p).tsv"
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw Failure("cannot create \(path)") }
            guard let handle = FileHandle(forWritingAtPath: path) else { throw Failure("cannot write \(path)") }
            defer { try? handle.close() }
            let rows = perPartition[p]
            let mine = owned[p]
            let chunk = 4096
            var start = 0
            while start < rows {
                let end = min(rows, start + chunk)
                let lines = Mutex<[Int: String]>([:])
                let mintFailures = Mutex<[String]>([])
                let base = start
                DispatchQueue.concurrentPerform(iterations: 8) { worker in
                    var j = base + worker
                    var local: [(Int, String)] = []
                    while j < end {
                        let key = frozenKeys[mine[j % mine.count]]
                        let counter = key.counter + 1 + UInt32(j / mine.count)
                        do {
                            let challengeBytes = try SecureRandom.bytes(count: 32)
                            let challenge = try Challenge(challengeBytes)
                            let clientData = try ClientDataBinding.v1(challenge: challengeBytes, method: methodBytes, target: targetBytes,
                                                                      bodySHA256: bodyHash)
                            var device = try SoftwareDevice(privateKey: key.privateKey, counter: key.counter)
                            let minted = try device.mintAssertion(appId: appId, clientData: clientData,
                                                                  options: AssertionOptions(counter: counter))
                            challenges.issue(challenge, keyId: try KeyID(key.keyId), purpose: .assert, expiresAt: expiresAt, now: now)
                            local.append((j, "\(key.keyIdText)\t\(Base64.encode(challengeBytes))\t\(Base64.encode(minted.assertionObject))"))
                        } catch {
                            mintFailures.withLock { $0.append("\(error)") }
                            return
                        }
                        j += 8
                    }
                    lines.withLock { dict in for (i, line) in local { dict[i] = line } }
                }
                if let first = mintFailures.withLock({ $0.first }) { throw Failure("minting failed: \(first)") }
                let text = lines.withLock { dict in (base..<end).compactMap { dict[$0] }.joined(separator: "\n") } + "\n"
                do { try handle.write(contentsOf: Data(text.utf8)) } catch { writeFailures.withLock { $0.append("\(error)") } }
                start = end
            }
        }
        if let first = challenges.finish() { throw Failure("issuing challenges in Redis failed: \(first)") }
        if let first = writeFailures.withLock({ $0.first }) { throw Failure("writing the request file failed: \(first)") }

        // New last counters.
        for keyIndex in keys.indices { keys[keyIndex].counter += UInt32(uses[keyIndex]) }
        try writeKeys(keys, to: keysPath)
        return [("assertions", .integer(Int64(count))), ("partitions", .integer(Int64(partitions))),
                ("keys", .integer(Int64(keys.count))), ("out", .string(out))]
    }

    static func writeKeys(_ keys: [BenchKey], to path: String) throws {
        var text = ""
        for key in keys {
            text += "\(key.keyIdText)\t\(Base64.encode(try key.privateKey.pkcs8DER()))\t\(key.counter)\n"
        }
        let temporary = path + ".tmp"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw Failure("cannot replace \(path)") }
    }

    // MARK: - attestations

    static func attestations(_ arguments: [String]) throws -> [(String, JSONText)] {
        let options = try DeviceCommandOptions(arguments, valued: ["redis", "ca", "app-id", "env", "count", "partitions", "out"])
        let store = try makeStore(try options.required("redis"))
        defer { store.close() }
        let ca = try TestCA.load(directory: try options.required("ca"))
        let appId = try options.required("app-id")
        let environment = try DeviceCommand.environment(try options.value("env") ?? "development")
        let count = try options.integer("count", in: 1...10_000_000) ?? 0
        let partitions = try options.integer("partitions", default: 1, in: 1...64) ?? 1
        let out = try options.required("out")
        guard count > 0 else { throw DeviceCommandError.usage("--count is required") }
        let now = GatewayClock.system.now()
        let expiresAt = now + 3_600_000
        let challenges = ChallengeWriter(store)
        let failures = Failures()
        let lines = Mutex<[Int: String]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var i = worker
            var local: [(Int, String)] = []
            while i < count {
                do {
                    let device = try SoftwareDevice()
                    let challengeBytes = try SecureRandom.bytes(count: 32)
                    let minted = try device.mintAttestation(ca: ca, appId: appId, environment: environment, challenge: challengeBytes)
                    challenges.issue(try Challenge(challengeBytes), keyId: try KeyID(device.keyId), purpose: .attest,
                                     expiresAt: expiresAt, now: now)
                    local.append((i, JSONText.object([("keyId", .string(Base64.encode(device.keyId))),
                                                      ("challenge", .string(Base64.encode(challengeBytes))),
                                                      ("attestation", .string(Base64.encode(minted.attestationObject)))]).rendered))
                } catch {
                    failures.add("\(error)")
                    return
                }
                i += 8
            }
            lines.withLock { dict in for (index, line) in local { dict[index] = line } }
        }
        if let first = challenges.finish() ?? failures.first { throw Failure("preparing attestations failed: \(first)") }
        let all = lines.withLock { $0 }
        for p in 0..<partitions {
            let text = stride(from: p, to: count, by: partitions).compactMap { all[$0] }.joined(separator: "\n") + "\n"
            try Data(text.utf8).write(to: URL(fileURLWithPath: "\(out)-\(p).jsonl"))
        }
        return [("attestations", .integer(Int64(count))), ("partitions", .integer(Int64(partitions))), ("out", .string(out))]
    }

    // MARK: - helpers

    static func makeStore(_ url: String) throws -> RedisStore {
        // The password never on argv: the environment, as `attestctl keys` (RedisLogin).
        var configuration = RedisStore.Configuration(url: try RedisLogin.url(url, option: "redis"))
        configuration.connections = 2
        configuration.maximumPendingCommands = 8192
        configuration.commandTimeout = 10_000
        return try RedisStore(configuration: configuration)
    }
}
