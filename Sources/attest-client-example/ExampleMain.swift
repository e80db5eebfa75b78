import AttestClient
import AttestSimulator
import Foundation

/// `attest-client-example --gateway URL --app-id ID --ca DIR [--requests N] [--device-key]
/// [--route /v1/protected/example] [--prefix /app-attest/v1] [--state DIR] [--renew] [--forget]`
///
/// An app's view of the gateway through AttestClient's public API only: `attest()`, then N protected
/// POSTs with `send(_:)`. App Attest is played by the simulator under the test CA in DIR (Linux has no
/// DeviceCheck); `--device-key` leaves App Attest out (device-key registration alone). `--state DIR`
/// keeps the SDK's state (device key, registration) between runs; without it a fresh temporary one.
///
/// Prints one JSON line with the `Attestation`, then one per request `{"status", "verdict",
/// "roundTrips"}` (plus `error` when refused); `--renew` then prints the `renewAttestation()` result
/// (`"renewed": true`), `--forget` then `{"forgotten": true, "stored": false}` after `forgetAttestation()`
/// (`stored`: whether `storedAttestation()` still finds one). Exit 0 when attestation passed and every request was
/// accepted, 1 otherwise, 2 on usage errors.
@main
struct ExampleMain {
    static let usage = "usage: attest-client-example --gateway URL --app-id ID --ca DIR [--requests N] [--device-key] [--route PATH] [--prefix PATH] [--state DIR] [--renew] [--forget]"

    static func main() {
        var options: [String: String] = [:]
        var deviceKeyOnly = false
        var renew = false
        var forget = false
        var arguments = Array(CommandLine.arguments.dropFirst())
        while !arguments.isEmpty {
            let name = arguments.removeFirst()
            if name == "--device-key" { deviceKeyOnly = true; continue }
            if name == "--renew" { renew = true; continue }
            if name == "--forget" { forget = true; continue }
            guard ["--gateway", "--app-id", "--ca", "--requests", "--route", "--prefix", "--state"].contains(name), !arguments.isEmpty else {
                fail(usage: "unknown or incomplete option \(name)")
            }
            options[String(name.dropFirst(2))] = arguments.removeFirst()
        }
        guard let gatewayText = options["gateway"], let gateway = URL(string: gatewayText), gateway.scheme != nil else { fail(usage: "--gateway URL is required") }
        guard let appId = options["app-id"] else { fail(usage: "--app-id is required") }
        guard let caDirectory = options["ca"] else { fail(usage: "--ca DIR is required") }
        let requests = Int(options["requests"] ?? "1") ?? -1
        guard requests >= 0 else { fail(usage: "--requests must be a number >= 0") }
        let route = options["route"] ?? "/v1/protected/example"

        let ca: TestCA
        do { ca = try TestCA.load(directory: caDirectory) } catch {
            FileHandle.standardError.write(Data("attest-client-example: cannot load the test CA in \(caDirectory): \(error)\n".utf8))
            exit(1)
        }
        var configuration = AttestClientConfiguration(gateway: gateway)
        if let prefix = options["prefix"] { configuration.prefix = prefix }
        configuration.appId = appId
        configuration.mode = deviceKeyOnly ? .deviceKey : .automatic
        configuration.automaticRenewal = false  // a short-lived command
        let state = options["state"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("attest-client-example-\(UUID().uuidString)")
        defer { if options["state"] == nil { try? FileManager.default.removeItem(at: state) } }
        let appAttest: any AppAttestService = deviceKeyOnly ? UnavailableAppAttestService() : SimulatedAppAttestService(ca: ca, appId: appId)
        let client = AttestClient(configuration: configuration, appAttest: appAttest, deviceKeys: SoftwareKeyFactory(),
                                  store: FileAttestationStore(directory: state))

        let attestation = client.attest()
        print(json(attestationFields(attestation)))
        var ok = attestation.verdict == .passed
        for n in 0..<requests {
            let body = Data("{\"item\":\"sku-\(n + 1)\",\"quantity\":\(n + 1)}".utf8)
            let response = client.send(ProtectedRequest(method: "POST", target: route + "?n=\(n + 1)",
                                                        headers: [("Content-Type", "application/json")], body: body))
            var line: [(String, Any)] = [("status", response.status), ("verdict", response.verdict.rawValue), ("roundTrips", response.roundTrips)]
            if let error = response.error { line.append(("error", error)) }
            if let detail = response.detail, response.verdict != .accepted { line.append(("detail", detail)) }
            print(json(line))
            ok = ok && response.verdict == .accepted
        }
        if renew {
            let renewed = client.renewAttestation()
            print(json([("renewed", true)] + attestationFields(renewed)))
            ok = ok && renewed.verdict == .passed && renewed.detail == nil
        }
        if forget {
            client.forgetAttestation()
            let stored = client.storedAttestation() != nil
            print(json([("forgotten", true), ("stored", stored)]))
            ok = ok && !stored
        }
        exit(ok ? 0 : 1)
    }

    static func attestationFields(_ a: Attestation) -> [(String, Any)] {
        var fields: [(String, Any)] = [("supported", a.supported), ("verdict", a.verdict.rawValue), ("platformAttested", a.platformAttested),
                                       ("platformTokenSpent", a.platformTokenSpent)]
        if let v = a.expiresAt { fields.append(("expiresAt", v)) }
        if let v = a.kid { fields.append(("kid", v)) }
        if let v = a.tier { fields.append(("tier", v)) }
        if let v = a.integrity { fields.append(("integrity", v)) }
        if let v = a.backing { fields.append(("backing", v)) }
        if let v = a.detail { fields.append(("detail", v)) }
        return fields
    }

    /// One JSON object, members in the given order.
    static func json(_ fields: [(String, Any)]) -> String {
        func encode(_ value: Any) -> String {
            switch value {
            case let b as Bool: return b ? "true" : "false"
            case let i as Int: return String(i)
            case let s as String:
                let data = (try? JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed, .withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
                let text = String(decoding: data, as: UTF8.self)
                return String(text.dropFirst().dropLast())
            default: return "null"
            }
        }
        return "{" + fields.map { "\(encode($0.0)):\(encode($0.1))" }.joined(separator: ",") + "}"
    }

    static func fail(usage message: String) -> Never {
        FileHandle.standardError.write(Data("attest-client-example: \(message)\n\(usage)\n".utf8))
        exit(2)
    }
}
