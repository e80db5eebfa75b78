import AppAttest
import AttestCrypto
import Foundation

/// `attestctl verify [--root PEM] [--now] FILE|DIR...`
///
/// Verifies every vector file (and each of its variants) and prints one JSON line per result:
/// `{"id", "variant", "accepted", "reason", "checks", "matches_expected"}`, then `N passed, M failed`
/// (counting matches_expected). Exit status 0 only when nothing failed.
/// `--root PEM` pins that App Attest root instead of Apple's (e.g. a test CA); `--now` verifies at
/// the current time instead of each vector's validationTime (every real chain must then fail, so
/// attestation vectors then do not match their expectations).
enum VerifyCommand {
    static func run(_ arguments: [String]) -> Int32 {
        var paths: [String] = []
        var rootPath: String? = nil
        var useNow = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--root":
                guard index + 1 < arguments.count else { return usageError("--root needs a PEM file") }
                rootPath = arguments[index + 1]
                index += 1
            case "--now":
                useNow = true
            default:
                paths.append(argument)
            }
            index += 1
        }
        guard !paths.isEmpty else { return usageError("no vector files given") }
        var trust = TrustAnchors.apple
        if let rootPath {
            do {
                let pem = try String(contentsOfFile: rootPath, encoding: .utf8)
                trust = try TrustAnchors.apple.replacing(appAttestRoots: X509Certificate.parseAll(pem: pem))
            } catch {
                return usageError("cannot read root \(rootPath): \(error)")
            }
        }
        let evaluator = VectorEvaluator(trust: trust, fixedTime: useNow ? Int64(Date().timeIntervalSince1970) : nil)
        var passed = 0, failed = 0
        for path in expand(paths) {
            do {
                let vector = try TestVector(path: path)
                let runs: [(String?, TestVector, [String: Bool])] = [(nil, vector, vector.expected)]
                    + vector.variants.map { ($0.name, vector.applying($0.override), $0.expected) }
                for (variant, input, expected) in runs {
                    let outcome = try evaluator.evaluate(input)
                    let matches = outcome.matches(expected)
                    if matches { passed += 1 } else { failed += 1 }
                    print(line(id: vector.id, variant: variant, outcome: outcome, matches: matches).rendered)
                }
            } catch {
                failed += 1
                print(JSONText.object([("id", .string(path)), ("variant", .null), ("accepted", .bool(false)),
                                       ("reason", .string("vector_unreadable")), ("checks", .object([])),
                                       ("matches_expected", .bool(false)), ("error", .string("\(error)"))]).rendered)
            }
        }
        print("\(passed) passed, \(failed) failed")
        return failed == 0 ? 0 : 1
    }

    static func line(id: String, variant: String?, outcome: VectorEvaluator.Outcome, matches: Bool) -> JSONText {
        .object([
            ("id", .string(id)),
            ("variant", variant.map { .string($0) } ?? .null),
            ("accepted", .bool(outcome.accepted)),
            ("reason", outcome.reason.map { .string($0) } ?? .null),
            ("checks", .object(outcome.checks.map { ($0.0, .bool($0.1)) })),
            ("matches_expected", .bool(matches)),
        ] + (outcome.detail.isEmpty ? [] : [("detail", .string(outcome.detail))]))
    }

    /// Files as given; directories expand to their *.json files (sorted).
    static func expand(_ paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return names.filter { $0.hasSuffix(".json") }.sorted().map { (path as NSString).appendingPathComponent($0) }
        }
    }

    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attestctl verify: \(message)\n".utf8))
        return 2
    }
}
