import AppAttest
import AttestCrypto
import Foundation

/// `attestctl bench [--seconds N] [--vectors DIR]`
///
/// Prints, on one core (one thread): full assertion verifications per second (CBOR decode, SHA-256 of
/// the client data, SHA-256 nonce, ECDSA P-256 verify with a cached parsed key) on a real vector
/// (or a freshly minted one when the vectors are absent), OpenSSL's own `openssl speed -seconds N
/// ecdsap256` verify/s measured in the same run, their ratio, and attestation verifications per
/// second on a real vector at its validationTime. Figures only, no pass/fail. Our assertion figure is
/// the better of two rounds taken before and after openssl's (the machine may be shared).
enum BenchCommand {
    static func run(_ arguments: [String]) -> Int32 {
        var seconds = 3.0
        var vectorsPath: String? = nil
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--seconds", index + 1 < arguments.count, let s = Double(arguments[index + 1]), s > 0 {
                seconds = s
                index += 2
            } else if arguments[index] == "--vectors", index + 1 < arguments.count {
                vectorsPath = arguments[index + 1]
                index += 2
            } else {
                FileHandle.standardError.write(Data("attestctl bench: unknown option \(arguments[index])\n".utf8))
                return 2
            }
        }
        let vectors = vectorsPath ?? findVectors()
        do {
            // The machine may be shared: measure ours before and after openssl and keep the better
            // round, so that a burst of other load during one round does not decide the ratio.
            let before = try assertionBench(vectors: vectors, seconds: seconds)
            let openssl = opensslVerifyRate(seconds: seconds)
            let after = try assertionBench(vectors: vectors, seconds: seconds)
            let assertionRate = before.rate >= after.rate ? before : after
            print("assertion verify/s (1 core):      \(format(assertionRate.rate))   [\(assertionRate.source); rounds \(Int(before.rate)), \(Int(after.rate))]")
            if let openssl {
                print("openssl speed ecdsap256 verify/s: \(format(openssl))")
                print("ratio (goal >= 0.9):              \(String(format: "%.3f", assertionRate.rate / openssl))")
            } else {
                print("openssl speed ecdsap256 verify/s: unavailable (openssl binary not found or output not understood)")
            }
            if let attestation = try attestationBench(vectors: vectors, seconds: seconds) {
                print("attestation verify/s (1 core):    \(format(attestation.rate))   [\(attestation.source)]")
            } else {
                print("attestation verify/s (1 core):    skipped (no vectors directory; use --vectors DIR)")
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("attestctl bench: \(error)\n".utf8))
            return 1
        }
    }

    static func format(_ rate: Double) -> String { String(format: "%10.1f", rate) }

    /// ../shared/vectors (or $ATTEST_SHARED_DIR/vectors) if present.
    static func findVectors() -> String? {
        var candidates: [String] = []
        if let shared = ProcessInfo.processInfo.environment["ATTEST_SHARED_DIR"] { candidates.append(shared + "/vectors") }
        candidates += ["../shared/vectors", "shared/vectors"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Runs `body` repeatedly for about `seconds`; returns calls per second.
    static func measure(seconds: Double, _ body: () -> Bool) -> Double {
        var count = 0
        var failures = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let budget = UInt64(seconds * 1e9)
        var elapsed: UInt64 = 0
        repeat {
            for _ in 0..<64 { if !body() { failures += 1 }; count += 1 }
            elapsed = DispatchTime.now().uptimeNanoseconds - start
        } while elapsed < budget
        if failures > 0 { FileHandle.standardError.write(Data("bench: \(failures) verifications failed\n".utf8)) }
        return Double(count) / (Double(elapsed) / 1e9)
    }

    static func assertionBench(vectors: String?, seconds: Double) throws -> (rate: Double, source: String) {
        var object: [UInt8]
        var clientData: [UInt8]
        var key: P256PublicKey
        var app: AppPolicy
        var previous: UInt32 = 0
        var source: String
        if let vectors, let vector = try? TestVector(path: vectors + "/assertion-worldcoin-dev-2025a.json"),
           let o = try vector.bytes("assertion"), let cd = try vector.bytes("clientData"), let point = try vector.bytes("publicKeyX963") {
            object = o
            clientData = cd
            key = try P256PublicKey(x963: point)
            app = AppPolicy(teamId: vector.string("teamId") ?? "", bundleId: vector.string("bundleId") ?? "", environment: .any)
            source = "real vector assertion-worldcoin-dev-2025a"
        } else {
            // Mint one: flags 0x40, counter 1, ECDSA-SHA256 over the nonce.
            let device = try ECPrivateKey(generatingOn: .p256)
            app = AppPolicy(appId: "ABCDE12345.com.example.bench", environment: .any)
            clientData = try ClientDataBinding.v1(challenge: Array(repeating: 7, count: 32), method: "POST", target: "/v1/bench",
                                                  bodySHA256: ClientDataBinding.emptyBodySHA256)
            let authData = app.rpIdHash + [0x40, 0, 0, 0, 1]
            let signature = try device.signature(for: SHA256.hash(authData, SHA256.hash(clientData)))
            object = [0xA2, 0x69] + Array("signature".utf8) + [0x58, UInt8(signature.count)] + signature
                + [0x71] + Array("authenticatorData".utf8) + [0x58, UInt8(authData.count)] + authData
            key = try device.publicKey()
            source = "minted assertion (no vectors found)"
        }
        previous = 0
        let check = AssertionVerifier.verify(assertionObject: object, publicKey: key, app: app, clientData: clientData, previousCounter: previous)
        guard check.isAccepted else { throw VectorError("bench assertion does not verify: \(check.reason?.rawValue ?? "")") }
        let rate = measure(seconds: seconds) {
            AssertionVerifier.verify(assertionObject: object, publicKey: key, app: app, clientData: clientData, previousCounter: previous).isAccepted
        }
        return (rate, source)
    }

    static func attestationBench(vectors: String?, seconds: Double) throws -> (rate: Double, source: String)? {
        guard let vectors, let vector = try? TestVector(path: vectors + "/attestation-apple-doc-2026.json"),
              let object = try vector.bytes("attestationObject"), let keyId = try vector.bytes("keyId"),
              let clientDataHash = try vector.bytes("clientDataHash"),
              let time = vector.string("validationTime").flatMap(CivilTime.parseISO8601) else { return nil }
        let verifier = AttestationVerifier(apps: [AppPolicy(teamId: vector.string("teamId") ?? "", bundleId: vector.string("bundleId") ?? "",
                                                            environment: .any)])
        guard verifier.verify(attestationObject: object, keyId: keyId, clientDataHash: clientDataHash, now: time).isAccepted else {
            throw VectorError("bench attestation does not verify")
        }
        let rate = measure(seconds: seconds) {
            verifier.verify(attestationObject: object, keyId: keyId, clientDataHash: clientDataHash, now: time).isAccepted
        }
        return (rate, "real vector attestation-apple-doc-2026, receipt included")
    }

    /// verify/s from `openssl speed -seconds N ecdsap256` (its last column), or nil.
    static func opensslVerifyRate(seconds: Double) -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed", "-seconds", String(Int(seconds.rounded(.up))), "ecdsap256"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.contains("ecdsa") && line.contains("nistp256") {
            if let last = line.split(separator: " ").last, let value = Double(last) { return value }
        }
        return nil
    }
}
